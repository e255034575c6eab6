"""`nuboard artifact add` lists the source once: the check's listing is the one written.

The CLI runs in this process (click's runner) so the walk over the source can be counted;
the folders and versions are real.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from helpers import make_tree

import nuboard.artifacts.api as api
from nuboard.artifacts import add_artifact, get_artifact, inspect_source
from nuboard.cli.main import cli
from nuboard.errors import InvalidArgumentError, InvalidTypeError


@pytest.fixture
def walks(monkeypatch) -> list:
    """Every folder walked to list a source, in order."""
    seen: list = []
    real_walk = api.walk_files

    def counted(folder, *args, **kwargs):
        seen.append(folder)
        return real_walk(folder, *args, **kwargs)

    monkeypatch.setattr(api, "walk_files", counted)
    return seen


def add(root, *args: str):
    return CliRunner().invoke(cli, ["artifact", "add", *args, "--dir", str(root)],
                              catch_exceptions=False)


def test_cli_add_lists_the_source_once(root, tmp_path, walks):
    data = make_tree(tmp_path / "data", {"a.bin": b"12345", "sub/b.bin": b"678"})
    result = add(root, "datasets/shards", str(data), "--copy", "--type", "dataset",
                 "--description", "two shards")
    assert result.exit_code == 0, result.output
    assert "Added datasets/shards:v1 (copy, 2 files" in result.output
    assert walks == [data.resolve()]
    version = get_artifact("datasets/shards:v1", dir=root)
    assert sorted(version) == ["a.bin", "sub/b.bin"]
    assert version.check() == []


def test_cli_add_reference_lists_once_and_keeps_the_producer(root, tmp_path, walks):
    data = make_tree(tmp_path / "ref", {"x.txt": b"hello"})
    result = add(root, "datasets/ref", str(data), "--ref", "--checksum", "--type", "dataset",
                 "--description", "one file")
    assert result.exit_code == 0, result.output
    assert len(walks) == 1
    manifest = json.loads((root / "datasets/artifacts/ref/v1/manifest.json").read_text())
    assert manifest["storage"] == "reference" and manifest["checksum"] is True
    assert [f["path"] for f in manifest["files"]] == ["x.txt"]


def test_cli_dry_run_lists_once(root, tmp_path, walks):
    data = make_tree(tmp_path / "data", {"a.bin": b"1"})
    result = add(root, "datasets/dry", str(data), "--copy", "--type", "dataset",
                 "--description", "d", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Would add datasets/dry:v1 (copy, 1 file" in result.output
    assert len(walks) == 1
    assert not (root / "datasets/artifacts/dry").exists()


def test_add_artifact_writes_the_listing_it_is_given(root, tmp_path, walks):
    data = make_tree(tmp_path / "data", {"a.bin": b"12", "b.bin": b"345"})
    info = inspect_source("datasets", data, dir=root)
    phases: list = []
    made = add_artifact("datasets", "given", data, type="dataset", dir=root, source_info=info,
                        progress=lambda phase, done, total: phases.append(phase))
    assert len(walks) == 1                       # the inspect_source above, not add_artifact
    assert "listing" not in phases and "copying" in phases
    assert sorted(made) == ["a.bin", "b.bin"] and made.total_bytes == 5


def test_add_artifact_refuses_a_source_info_of_another_path(root, tmp_path):
    first = make_tree(tmp_path / "one", {"a": b"1"})
    other = make_tree(tmp_path / "two", {"b": b"2"})
    info = inspect_source("datasets", first, dir=root)
    with pytest.raises(InvalidArgumentError, match="source_info is for path"):
        add_artifact("datasets", "x", other, dir=root, source_info=info)
    with pytest.raises(InvalidTypeError, match="source_info must be"):
        add_artifact("datasets", "x", first, dir=root, source_info={"given": str(first)})
    assert not (root / "datasets/artifacts/x").exists()


def test_a_source_checked_for_another_project_gets_this_projects_producer(root, tmp_path):
    """run_id and the artifacts/ check are done again for the project written to."""
    run_files = make_tree(root / "llm/runs/20261101T0000-aaaaaaaa/files", {"best.pt": b"w"})
    (run_files.parent / "run.json").write_text(json.dumps({"status": "finished"}))
    info = inspect_source("other", run_files, dir=root)
    assert info.run_id is None
    made = add_artifact("llm", "best", run_files, dir=root, source_info=info)
    assert made.producer == {"project": "llm", "run_id": "20261101T0000-aaaaaaaa"}


def test_the_wizard_hands_its_check_to_the_writer(root, tmp_path, walks):
    from test_artifact_wizard import drive  # the wizard in a thread of its own after a browser test

    from nuboard.artifacts.form import AddForm
    data = make_tree(tmp_path / "data", {"a.bin": b"12345"})
    form = AddForm(target="datasets/wiz", path=str(data), store="copy", type="dataset")
    filled = drive("asked for\r\ry\r", root, form)[0]    # the description, no metadata, write
    assert filled is not None and filled.description == "asked for"
    assert filled.source is not None and filled.source.given == str(data)
    listed = len(walks)
    made = add_artifact("datasets", "wiz", filled.path, type="dataset", dir=root,
                        source_info=filled.source)
    assert len(walks) == listed and sorted(made) == ["a.bin"]
