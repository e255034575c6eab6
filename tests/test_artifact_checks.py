"""Checking versions as a user meets them: a copied or unzipped project (new modification times),
the CLI's flags and messages, and damaged versions on disk, through the real API, the CLI as a
child process and the viewer over real HTTP."""
from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from pathlib import Path

import pytest
from helpers import QUIET, make_tree, one_line_error, run_cli
from helpers_http import Viewer

import nuboard as nb
from nuboard.artifacts import ArtifactNotFoundError, add_artifact, promote_run_path, use_artifact

# --- item 8: a reference is checked by size --------------------------------------------------------

def project_with_references(root: Path) -> tuple[str, Path]:
    """llm/best:v1 references a run's file (project-relative); datasets/corpus:v1 a folder
    inside the root (absolute), each with checksums; returns the run id and the data folder."""
    with nb.init("llm", run_name="train", **QUIET) as run:
        best = Path(run.path) / "files" / "best.pt"
        best.parent.mkdir(exist_ok=True)
        best.write_bytes(b"weights" * 50)
    promote_run_path(run.path, "files/best.pt", "best", copy=False, type="checkpoint",
                     checksum=True)
    data = make_tree(root / "shared" / "corpus", {"a.bin": b"a" * 10, "sub/b.bin": b"b" * 20})
    add_artifact("datasets", "corpus", str(data), type="dataset", reference=True, checksum=True)
    return run.id, data


def no_warning_and_show_exits_0(root: Path) -> None:
    for spec in ("llm/best:v1", "datasets/corpus:v1"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            use_artifact(spec, dir=root)
        assert [str(w.message) for w in caught] == []
        show = run_cli(root, "artifact", "show", spec, "--dir", str(root))
        assert show.returncode == 0, show.stdout + show.stderr
        verify = run_cli(root, "artifact", "show", spec, "--verify", "--dir", str(root))
        assert verify.returncode == 0 and "SHA-256 re-hashed" in verify.stdout


def test_a_project_copied_without_times_still_checks(root, tmp_path):
    _, data = project_with_references(root)
    copy = tmp_path / "copied"
    shutil.copytree(root, copy, copy_function=shutil.copyfile, symlinks=False)   # cp -r, rsync
    assert (copy / "shared" / "corpus" / "a.bin").stat().st_mtime != (data / "a.bin").stat().st_mtime
    shutil.rmtree(data)                                 # the absolute reference: data moved back
    shutil.copytree(copy / "shared" / "corpus", data, copy_function=shutil.copyfile)
    no_warning_and_show_exits_0(copy)


def test_a_project_zipped_and_unzipped_still_checks(root, tmp_path):
    _, data = project_with_references(root)
    archive = tmp_path / "project.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(root))
    shutil.rmtree(root)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(root)                         # new modification times throughout
    no_warning_and_show_exits_0(root)


def test_a_changed_size_or_content_is_still_found(root):
    _, data = project_with_references(root)
    (data / "a.bin").write_bytes(b"A" * 10)             # same size, other content
    (data / "sub" / "b.bin").write_bytes(b"b")
    show = run_cli(root, "artifact", "show", "datasets/corpus:v1")
    assert show.returncode == 1 and "sub/b.bin: size 20 -> 1" in show.stdout
    assert "a.bin" not in show.stdout.replace("sub/b.bin", "")
    verify = run_cli(root, "artifact", "show", "datasets/corpus:v1", "--verify")
    assert verify.returncode == 1 and "a.bin: SHA-256 differs" in verify.stdout


# --- item 11 and 12: flags and messages --------------------------------------------------------------

def test_ref_and_copy_together_are_a_usage_error(root, tmp_path):
    src = make_tree(tmp_path / "d", {"a": b"1"})
    for flags in (["--ref", "--copy"], ["--copy", "--ref"]):
        out = run_cli(root, "artifact", "add", "datasets/d", str(src), *flags, "--type", "dataset",
                  "--description", "d")
        assert out.returncode == 2
        assert "give --ref or --copy, not both" in one_line_error(out)
    assert not (root / "datasets").exists()


def test_messages_read_right(root, tmp_path):
    src = make_tree(tmp_path / "d", {"a": b"1"})
    missing = run_cli(root, "artifact", "add", "datasets/d", str(tmp_path / "nope"), "--ref",
                  "--type", "dataset", "--description", "d")
    text = one_line_error(missing)
    assert missing.returncode == 1 and "does not exist" in text and ".." not in text
    assert text.endswith("nothing was written: PATH: path " + repr(str(tmp_path / "nope"))
                         + " does not exist: give an existing file or folder. "
                         "See 'nuboard artifact add --help'.")
    assert run_cli(root, "artifact", "add", "datasets/d", str(src / "a"), "--ref", "--type", "dataset",
               "--description", "d").returncode == 0
    show = run_cli(root, "artifact", "show", "datasets/d:v1")
    assert "  check        the 1 file is there and unchanged" in show.stdout.splitlines()
    no_version = run_cli(root, "artifact", "unlink", "datasets/d")
    assert no_version.returncode == 1 and "'datasets/d --all'" in one_line_error(no_version)
    assert run_cli(root, "artifact", "unlink", "datasets/d:v1").returncode == 0
    again = run_cli(root, "artifact", "unlink", "datasets/d:v1")
    assert again.returncode == 1
    assert "datasets/d:v1 is already unlinked in project 'datasets'" in one_line_error(again)
    restore = run_cli(root, "artifact", "restore", "datasets/d:v1")
    twice = run_cli(root, "artifact", "restore", "datasets/d:v1")
    assert restore.returncode == 0 and "is not unlinked in project 'datasets'" in one_line_error(twice)
    (src / "a").unlink()
    gone = run_cli(root, "artifact", "show", "datasets/d:v1")
    assert gone.returncode == 1
    assert "  check        1 of 1 file missing or changed:" in gone.stdout.splitlines()


# --- item 18: a damaged version never breaks a project ------------------------------------------------

def damaged_project(root: Path, tmp_path: Path) -> None:
    """datasets/corpus v1 good; v2 a manifest of wrong types; v99999999999999999999 a copy of
    v1's manifest in a folder whose number no catalog can hold."""
    nb.add_artifact("datasets", "corpus", str(make_tree(tmp_path / "d", {"a": b"1"})),
                    type="dataset", reference=True)
    with nb.init("datasets", run_name="user", **QUIET) as run:
        run.use_artifact("datasets/corpus:v1")
    folder = root / "datasets" / "artifacts" / "corpus"
    doc = json.loads((folder / "v1" / "manifest.json").read_text())
    (folder / "v2").mkdir()
    (folder / "v2" / "manifest.json").write_text(json.dumps(
        {**doc, "version": "two", "file_count": "many", "files": [{"path": 1, "size": "x"}]}))
    (folder / "v99999999999999999999").mkdir()
    (folder / "v99999999999999999999" / "manifest.json").write_text(json.dumps(doc))
    uses = root / "datasets" / "artifacts" / ".uses" / "corpus"        # a use note and an input
    note = next((uses / "v1").iterdir())                                   # of that number too
    (uses / "v99999999999999999999").mkdir()
    shutil.copy(note, uses / "v99999999999999999999" / note.name)
    run_json = Path(run.path) / "run.json"
    run_doc = json.loads(run_json.read_text())
    run_doc["inputs"].append({**run_doc["inputs"][0], "version": 2**70})
    run_json.write_text(json.dumps(run_doc))


def test_a_damaged_version_is_skipped_with_a_reason_and_listings_work(root, tmp_path):
    damaged_project(root, tmp_path)
    reindex = run_cli(root, "reindex", "datasets")
    assert reindex.returncode == 0, reindex.stderr
    assert "nuboard reindex: skipped artifacts/corpus/v2: its manifest is damaged" in reindex.stderr
    assert ("nuboard reindex: skipped artifacts/corpus/v99999999999999999999: "
            "v99999999999999999999 is beyond") in reindex.stderr
    assert "datasets: 1 run indexed, 0 skipped, 2 artifact versions skipped" in reindex.stdout
    ls = run_cli(root, "artifact", "ls", "datasets")
    assert ls.returncode == 0 and "datasets/corpus" in ls.stdout and " v1 " in ls.stdout
    assert "v2" not in ls.stdout and "skipped datasets/corpus:v2: its manifest is damaged" in ls.stderr
    every = run_cli(root, "artifact", "ls", "--json")
    assert every.returncode == 0 and [r["version"] for r in json.loads(every.stdout)] == [1]
    assert run_cli(root, "artifact", "show", "datasets/corpus:v1").returncode == 0
    bad = run_cli(root, "artifact", "show", "datasets/corpus:v2")
    assert bad.returncode == 1 and "its manifest is damaged" in one_line_error(bad)
    huge = run_cli(root, "artifact", "show", "datasets/corpus:v99999999999999999999")
    assert huge.returncode == 1 and "has version 'v99999999999999999999'" in one_line_error(huge)
    assert run_cli(root, "ls").returncode == 0
    assert run_cli(root, "ls", "datasets").returncode == 0
    with pytest.raises(ArtifactNotFoundError, match="its manifest is damaged"):
        use_artifact("datasets/corpus:latest")


def test_a_damaged_version_never_makes_a_page_fail(root, tmp_path):
    damaged_project(root, tmp_path)
    with Viewer(root, edit_artifacts=True) as v:
        for path in ("/", "/artifacts", "/api/artifacts", "/p/datasets", "/p/datasets/.artifacts",
                     "/p/datasets/.artifact/corpus/v1", "/api/p/datasets/.artifact/corpus/v1",
                     "/p/datasets/.artifacts/new", "/timeline", "/p/datasets/.timeline"):
            got = v.get(path)
            assert got.status < 500, (path, got.status, got.text[-400:])
        assert [a["latest"] for a in v.get("/api/artifacts").json()["artifacts"]] == [1]
        for path in ("/p/datasets/.artifact/corpus/v2", "/p/datasets/.artifact/corpus/v99999999999999999999"):
            assert v.get(path).status == 404
        check = v.post("/api/p/datasets/.artifacts/check", {
            "project": "datasets", "name": "corpus", "path": str(tmp_path / "d"),
            "store": "reference", "type": "dataset", "description": "x"})
        assert check.status == 200 and check.json()["notes"]["name"] == "will be corpus:v3"
