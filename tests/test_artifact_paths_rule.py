"""A version never holds another project's versions (issue 30, item 6).

A path inside any project's artifacts/ folder, or one that contains such a folder (a project
folder, a folder of nested projects, the root, a folder above it), is refused by every way in:
nb.add_artifact, run.add_artifact, promote_run_path, `nuboard artifact add` (flags and the
wizard) and the viewer's form. The refusal names the path and the rule, and nothing is written.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import QUIET, cli, make_tree, one_line_error
from helpers_http import Viewer
from test_artifact_wizard import drive, keys

import nuboard as nb
from nuboard.artifacts import list_versions, promote_run_path
from nuboard.artifacts.form import AddForm

RULE = "a version cannot hold versions"


@pytest.fixture
def lab(root, tmp_path) -> dict:
    """llm-pretrain with a run and a copied checkpoint; team/llm (nested) with one; vit with
    runs only; datasets with one reference; and a dataset outside the root."""
    ckpt = make_tree(tmp_path / "ckpt", {"model.pt": b"w" * 10})
    with nb.init("llm-pretrain", run_name="r", **QUIET) as run:
        made = run.add_artifact("model", str(ckpt / "model.pt"), type="checkpoint")
    nb.add_artifact("team/llm", "model", str(ckpt / "model.pt"))
    with nb.init("vit", run_name="v", **QUIET):
        pass
    data = make_tree(tmp_path / "data", {"a.bin": b"1", "b.bin": b"22"})
    nb.add_artifact("datasets", "seed", str(ckpt / "model.pt"), reference=True)
    return {"run": Path(run.path), "version": made, "data": data}


def versions_everywhere(root: Path) -> list[str]:
    """Every version folder under the root: nothing written shows as no change here."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("v[0-9]*") if p.is_dir())


def refusals(root: Path, lab: dict) -> dict[str, str]:
    """Each refused path and the word its message says ('inside' or 'contains')."""
    return {str(root / "llm-pretrain"): "contains",                   # a project folder
            str(root / "team"): "contains",                           # nested projects in it
            str(root / "team" / "llm"): "contains",
            str(root / "vit"): "contains",                            # a project without artifacts/ yet
            str(root): "contains", str(root.parent): "contains",
            str(root / "llm-pretrain" / "artifacts"): "is inside",
            str(lab["version"].files): "is inside",
            str(lab["version"].files / "model.pt"): "is inside",
            str(root / "team" / "llm" / "artifacts" / "model"): "is inside"}


def test_the_api_refuses_every_path_in_or_around_any_projects_artifacts(root, lab):
    before = versions_everywhere(root)
    for path, how in refusals(root, lab).items():
        for reference in (False, True):
            with pytest.raises(ValueError) as info:
                nb.add_artifact("datasets", "x", path, reference=reference)
            message = str(info.value)
            assert message.startswith(f"path {path!r} {how} the artifacts/ folder "), message
            assert RULE in message
    with nb.init("datasets", run_name="prep", **QUIET) as run:
        with pytest.raises(ValueError, match=RULE):
            run.add_artifact("fineweb", str(root / "llm-pretrain"), reference=True)
        with pytest.raises(ValueError, match=RULE):
            run.add_artifact("llm-pretrain/fineweb", str(root / "team"))
    assert versions_everywhere(root) == before
    assert list_versions("datasets", "x") == []


def test_versions_reached_through_a_link_or_in_another_root_are_refused(root, lab, tmp_path):
    """promote_run_path of a run folder linking to another project's versions; another root."""
    files = lab["run"] / "files"
    files.mkdir(exist_ok=True)
    (files / "best.pt").write_bytes(b"b")
    os.symlink(root / "team" / "llm" / "artifacts" / "model", files / "models")
    before = versions_everywhere(root)
    with pytest.raises(ValueError) as info:
        promote_run_path(lab["run"], "files", "best")
    assert f"path {str(files)!r} holds the artifacts/ folder " in str(info.value)
    assert "models/v1/manifest.json" in str(info.value) and RULE in str(info.value)
    other = tmp_path / "other-root"
    nb.add_artifact("llm", "model", str(lab["data"]), dir=other)
    for path in (other / "llm", other / "llm" / "artifacts" / "model" / "v1" / "files" / "a.bin"):
        with pytest.raises(ValueError, match=RULE):
            nb.add_artifact("datasets", "x", str(path), reference=True)
    assert versions_everywhere(root) == before


def test_folders_named_artifacts_that_are_no_projects_are_fine(root, lab, tmp_path):
    """Only a project's artifacts/ counts: a run's files/artifacts/, a CI folder elsewhere."""
    in_run = make_tree(lab["run"] / "files" / "artifacts", {"eval.json": b"{}"})
    ci = make_tree(tmp_path / "ci" / "artifacts", {"report.html": b"<p>"})
    assert nb.add_artifact("llm-pretrain", "eval", str(in_run), reference=True).version == 1
    assert nb.add_artifact("datasets", "eval", str(in_run / "eval.json")).version == 1
    assert nb.add_artifact("datasets", "report", str(ci)).version == 1
    assert nb.add_artifact("datasets", "data", str(lab["data"]), reference=True).version == 1


def test_the_cli_refuses_with_flags_and_in_the_wizard(root, lab):
    before = versions_everywhere(root)
    project = str(root / "llm-pretrain")
    for store in ("--copy", "--ref"):
        out = cli(root, "artifact", "add", "datasets/x", project, store, "--type", "dataset",
                  "--description", "d")
        assert out.returncode == 1
        error = one_line_error(out)
        assert f"PATH: path {project!r} contains the artifacts/ folder" in error and RULE in error
    assert versions_everywhere(root) == before
    form, printed, _ = drive(keys("datasets/x", project, str(lab["data"]), "copy"), root,
                             AddForm())
    assert form is None                              # the input ended before the review
    refused = [line for line in printed if line.startswith("  ✗ ")]
    assert refused and f"path {project!r} contains the artifacts/ folder" in refused[0]
    assert RULE in refused[0]
    assert "  ✓ 2 files, 3 B" in printed             # the data itself was taken


def test_the_viewers_form_refuses_and_writes_nothing(root, lab):
    before = versions_everywhere(root)
    fields = {"project": "datasets", "name": "x", "path": "llm-pretrain", "store": "reference",
              "type": "dataset", "description": "d"}
    with Viewer(root, edit_artifacts=True) as v:
        checked = v.post("/api/p/datasets/.artifacts/check", fields).json()
        assert not checked["ok"] and checked["files"] is None
        assert RULE in checked["problems"]["path"]
        assert str(root / "llm-pretrain") in checked["problems"]["path"]
        added = v.post("/api/p/datasets/.artifacts/add", fields)
        assert added.status == 400 and RULE in added.json()["problems"]["path"]
        page = v.post("/p/datasets/.artifacts/review", fields)
        assert page.status == 400 and "a version cannot hold versions" in page.text
    assert versions_everywhere(root) == before
