"""The spec's `nuboard artifact add llm-pretrain/best <a run's file> --copy` runs as written
(issue 30, item 8): a path inside a run of the version's project leaves out --type and
--description as promote_run_path does (type other, no description). Without a terminal they
default; in the wizard they are offered as the defaults, and asked for again when the review
changes the path (or the project) to one that is not inside a run of it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import QUIET, child_env, make_tree, one_line_error
from test_artifact_wizard import Q_DESCRIPTION, Q_TYPE, Q_WRITE, assert_in_order, drive, keys

import nuboard as nb
from nuboard.artifacts.form import AddForm

EXAMPLE = "experiments/llm-pretrain/runs/{run_id}/files/best.safetensors"


@pytest.fixture
def trained(root) -> str:
    """A finished run of llm-pretrain with files/best.safetensors (3 bytes); its id."""
    with nb.init("llm-pretrain", run_name="trainer", **QUIET) as run:
        make_tree(Path(run.path) / "files", {"best.safetensors": b"www"})
    return run.id


def add(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`nuboard artifact add ARGS` from the folder above the root, off any terminal."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", "artifact", "add", *args],
                          cwd=root.parent, env=child_env(NUBOARD_DIR=str(root)),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def test_the_spec_example_runs_as_written_without_a_terminal(root, trained):
    path = EXAMPLE.format(run_id=trained)
    out = add(root, "llm-pretrain/best", path, "--copy")
    assert out.returncode == 0, out.stderr
    assert "Added llm-pretrain/best:v1 (copy, 1 file, 3 B)" in out.stdout
    doc = json.loads((root / "llm-pretrain/artifacts/best/v1/manifest.json").read_text())
    assert (doc["type"], doc["description"]) == ("other", None)
    assert doc["producer"] == {"project": "llm-pretrain", "run_id": trained}
    ref = add(root, "llm-pretrain/best", path, "--ref", "--no-input")
    assert ref.returncode == 0, ref.stderr
    given = add(root, "llm-pretrain/best", path, "--copy", "--type", "checkpoint",
                "--description", "best so far")
    assert given.returncode == 0, given.stderr
    doc3 = json.loads((root / "llm-pretrain/artifacts/best/v3/manifest.json").read_text())
    assert (doc3["type"], doc3["description"]) == ("checkpoint", "best so far")


def test_elsewhere_the_type_and_description_stay_required(root, trained, tmp_path):
    """Another project's run, or a path outside any run: both flags are still asked for."""
    data = make_tree(tmp_path / "data", {"a": b"1"})
    for target, path in (("datasets/best", EXAMPLE.format(run_id=trained)),
                         ("llm-pretrain/data", str(data))):
        out = add(root, target, path, "--copy")
        assert out.returncode == 1
        error = one_line_error(out)
        assert "missing --type" in error and "missing --description" in error
    assert not (root / "datasets").exists()
    assert not (root / "llm-pretrain" / "artifacts" / "data").exists()


def test_the_wizard_offers_the_defaults_for_a_runs_path(root, trained):
    path = str(root / EXAMPLE.format(run_id=trained).split("/", 1)[1])
    form = AddForm(target="llm-pretrain/best", path=path, store="copy")
    result, printed, screen = drive(keys("", "", "", "y"), root, form)
    assert (result.type, result.description) == ("other", None)
    assert "  4  type         other" in printed and "  5  description  none" in printed
    assert_in_order(screen, [Q_TYPE.replace(": ", " [other]: "),
                             Q_DESCRIPTION.replace(": ", " [none]: "), Q_WRITE + "y"])


def test_a_review_change_away_from_the_run_asks_the_description(root, trained, tmp_path):
    """Path changed at the review to a file outside the run: the description left out for the
    run's path is asked again (and an empty one refused); the type stays as answered."""
    data = make_tree(tmp_path / "data", {"a": b"1"})
    path = str(root / EXAMPLE.format(run_id=trained).split("/", 1)[1])
    form = AddForm(target="llm-pretrain/best", path=path, store="copy")
    result, printed, screen = drive(keys("", "", "", "2", str(data), "", "held-out data", "y"),
                                    root, form)
    assert "  ✗ give a description: say in a few words what this version is" in printed
    assert (result.path, result.type, result.description) == (str(data), "other", "held-out data")
    assert_in_order(screen, [Q_WRITE + "2", Q_DESCRIPTION, Q_DESCRIPTION + "held-out data",
                             Q_WRITE + "y"])
    moved = AddForm(target="llm-pretrain/best", path=path, store="copy")
    result, printed, _ = drive(keys("", "", "", "1", "datasets/best", "", "d", "y"), root, moved)
    assert (result.target, result.description) == ("datasets/best", "d")
