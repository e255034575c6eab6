"""What a version is made from: links inside a folder, FIFOs, sockets and devices, and a running
run's files, through the real API, the CLI as a child process and the viewer over real HTTP."""
from __future__ import annotations

import json
import os
import socket
import threading
import warnings
from pathlib import Path

import pytest
from helpers import QUIET, cli, make_tree, one_line_error
from helpers_http import Viewer

import nuboard as nb
from nuboard.artifacts import add_artifact, get_artifact


def left_out_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def linked_tree(tmp_path: Path) -> Path:
    """data/ with train/a.bin, val -> ../ext/val (a folder), best -> ../ext/best.pt (a file)
    and a dangling link gone -> ../nowhere."""
    make_tree(tmp_path / "ext", {"val/b.bin": b"bb", "val/deep/c.bin": b"ccc", "best.pt": b"w"})
    data = make_tree(tmp_path / "data", {"train/a.bin": b"a"})
    os.symlink("../ext/val", data / "val")
    os.symlink("../ext/best.pt", data / "best.pt")
    os.symlink("../nowhere", data / "gone")
    return data


@pytest.mark.parametrize("reference", [True, False])
def test_links_in_a_folder_are_followed_and_a_dangling_one_named(root, tmp_path, reference):
    data = linked_tree(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = add_artifact("datasets", "d", data, reference=reference)
    assert list(art) == ["best.pt", "train/a.bin", "val/b.bin", "val/deep/c.bin"]
    assert art["val/deep/c.bin"].read_bytes() == b"ccc" and art["best.pt"].read_bytes() == b"w"
    said = left_out_warnings(caught)
    assert len(said) == 1 and "gone (a dangling link)" in said[0] and "1 entry left out" in said[0]
    doc = json.loads((art.path / "manifest.json").read_text())
    assert doc["left_out"] == [{"path": "gone", "what": "a dangling link"}]
    if not reference:                       # the copy holds files, not links
        assert not (art.files / "val").is_symlink() and (art.files / "val" / "b.bin").is_file()
    assert get_artifact("datasets/d:v1").check() == []


@pytest.mark.parametrize("link", ["loop", "sub/up", "me"])
def test_a_link_loop_is_refused_and_nothing_written(root, tmp_path, link):
    data = make_tree(tmp_path / "data", {"a.bin": b"a", "sub/b.bin": b"b"})
    target = {"loop": ".", "sub/up": "..", "me": "me"}[link]
    os.symlink(target, data / link)
    for reference in (True, False):
        with pytest.raises(ValueError, match="loop") as info:
            add_artifact("datasets", "d", data, reference=reference)
        assert repr(link) in str(info.value)
    assert not (root / "datasets" / "artifacts" / "d" / "v1").exists()


def special_tree(tmp_path: Path) -> tuple[Path, Path]:
    """data/ with a.bin, a FIFO, a Unix socket and a link to a device file; and the FIFO."""
    data = make_tree(tmp_path / "data", {"a.bin": b"a", "sub/b.bin": b"b"})
    fifo = data / "sub" / "pipe"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(data / "sock"))
    sock.close()
    os.symlink("/dev/null", data / "null")
    return data, fifo


def within(seconds: float, fifo: Path, call):
    """call() on a thread; fails fast (and unblocks it) when it does not end in time."""
    result: dict = {}

    def target():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result["value"] = call()
            result["warnings"] = left_out_warnings(caught)
        except BaseException as exc:             # handed to the test below
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():                         # a reader blocked on the FIFO: release it
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(5)
        pytest.fail(f"blocked for more than {seconds} s on a FIFO")
    if "error" in result:
        raise result["error"]
    return result["value"], result["warnings"]


@pytest.mark.parametrize("how", ["reference", "checksum", "copy"])
def test_fifo_socket_and_device_are_left_out_with_one_warning(root, tmp_path, how):
    data, fifo = special_tree(tmp_path)
    art, said = within(20, fifo, lambda: add_artifact(
        "datasets", "d", data, reference=how != "copy", checksum=how == "checksum"))
    assert list(art) == ["a.bin", "sub/b.bin"]
    assert len(said) == 1
    for part in ("3 entries left out", "null (a link to a device file)", "sock (a socket)",
                 "sub/pipe (a FIFO)"):
        assert part in said[0]


def test_a_fifo_in_a_stored_version_never_blocks_a_check_or_verify(root, tmp_path):
    data = make_tree(tmp_path / "data", {"a.bin": b"a", "b.bin": b"bb"})
    add_artifact("datasets", "d", data, reference=True, checksum=True)
    (data / "b.bin").unlink()
    os.mkfifo(data / "b.bin")
    art = get_artifact("datasets/d:v1")
    problems, _ = within(20, data / "b.bin", art.verify)
    assert [(p.path, p.detail) for p in problems] == [("b.bin", "not a regular file")]
    out = cli(root, "artifact", "show", "datasets/d:v1", "--verify", timeout=60)
    assert out.returncode == 1 and "b.bin: not a regular file" in out.stdout


def test_the_cli_names_what_it_left_out_and_adds_the_rest(root, tmp_path):
    data, _ = special_tree(tmp_path)
    os.symlink("../nowhere", data / "gone")
    out = cli(root, "artifact", "add", "datasets/d", str(data), "--ref", "--type", "dataset",
              "--description", "d", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Added datasets/d:v1 (reference, 2 files" in out.stdout
    warning = one_line_error(out)
    assert warning.startswith("nuboard: warning: path ") and "gone (a dangling link)" in warning
    assert "sub/pipe (a FIFO)" in warning and "4 entries left out" in warning
    show = cli(root, "artifact", "show", "datasets/d:v1")
    left_out = "left out     4 entries (not regular files or folders): gone (a dangling link), null"
    assert show.returncode == 0 and left_out in show.stdout
    dry = cli(root, "artifact", "add", "datasets/d", str(data), "--ref", "--type", "dataset",
              "--description", "d", "--dry-run", timeout=60)
    assert dry.returncode == 0 and "gone (a dangling link)" in one_line_error(dry)


# --- a running run's files, from any project ------------------------------------------------------

def test_a_running_runs_files_cannot_be_referenced_from_any_project(root):
    with nb.init("llm", run_name="live", **QUIET) as run:
        best = Path(run.path) / "files" / "best.pt"
        best.parent.mkdir(exist_ok=True)
        best.write_bytes(b"weights")
        folder = str(best.parent)
        for call in (lambda: run.add_artifact("datasets/x", str(best), reference=True),
                     lambda: run.add_artifact("x", folder, reference=True),
                     lambda: nb.add_artifact("datasets", "x", str(best), reference=True),
                     lambda: nb.add_artifact("llm", "x", str(best), reference=True),
                     lambda: nb.add_artifact("datasets", "x", str(root / "llm" / "runs"),
                                             reference=True)):       # a folder that holds it
            with pytest.raises(ValueError) as info:
                call()
            assert str(info.value).startswith(f"run {run.id!r} is still running, so its files "
                                              "may change and cannot be referenced")
        with pytest.raises(ValueError, match="contains the artifacts/ folder"):
            nb.add_artifact("datasets", "x", str(root / "llm"), reference=True)   # a project
        out = cli(root, "artifact", "add", "other/x", str(best), "--ref", "--type", "model",
                  "--description", "d")
        assert out.returncode == 1
        assert f"run {run.id!r} is still running" in one_line_error(out)
        assert not (root / "datasets" / "artifacts" / "x" / "v1").exists()
        assert not (root / "other").exists()
        copied = run.add_artifact("datasets/x", str(best))      # a copy is fine
        assert copied.storage == "copy" and copied.version == 1
    later = nb.add_artifact("datasets", "x", str(best), reference=True)   # finished: fine
    assert later.reference and later.version == 2


# --- the viewer -------------------------------------------------------------------------------------

def _fields(path: str, **kw) -> dict:
    fields = {"project": "datasets", "name": "d", "path": path, "store": "reference",
              "type": "dataset", "description": "with links"}
    fields.update(kw)
    return fields


def test_the_viewer_form_and_add_show_what_was_left_out(root, tmp_path):
    nb.add_artifact("datasets", "seed", str(make_tree(tmp_path / "seed", {"s": b"s"})),
                    reference=True)
    data, fifo = special_tree(tmp_path)
    os.symlink("../nowhere", data / "gone")
    with Viewer(root, edit_artifacts=True) as v:
        check = v.post("/api/p/datasets/.artifacts/check", _fields(str(data))).json()
        assert check["ok"] and check["files"] == 2
        assert any("gone (a dangling link)" in w and "sub/pipe (a FIFO)" in w
                   for w in check["warnings"])
        review = v.post("/p/datasets/.artifacts/review", _fields(str(data)))
        assert review.status == 200 and "gone (a dangling link)" in review.text
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)      # raised, not only emitted
            added = v.post("/p/datasets/.artifacts/add", _fields(str(data)))
            assert added.status == 201, added.text
            assert "Added datasets/d:v1" in added.text and "sub/pipe (a FIFO)" in added.text
            assert 'href="/p/datasets/.artifact/d/v1"' in added.text
            again = v.post("/api/p/datasets/.artifacts/add", _fields(str(data), anyway="1"))
        assert again.status == 201
        body = again.json()
        assert body["added"] == "datasets/d:v2" and "gone (a dangling link)" in body["warnings"][0]
        assert v.get("/p/datasets/.artifact/d/v1").status == 200


def test_a_fifo_for_a_manifest_never_blocks_anyone(root, tmp_path):
    from nuboard.web.artifact_data import files_page
    data = make_tree(tmp_path / "data", {"a.bin": b"a"})
    art = add_artifact("datasets", "d", data, reference=True)
    manifest = art.path / "manifest.json"
    manifest.unlink()
    os.mkfifo(manifest)
    with pytest.raises(LookupError, match="cannot be read") as info:
        within(20, manifest, lambda: get_artifact("datasets/d:v1"))
    assert "not a regular file" in str(info.value)
    page, _ = within(20, manifest, lambda: files_page(manifest))
    assert page["files"] == []
    ls = cli(root, "artifact", "ls", "datasets", timeout=60)
    assert ls.returncode == 0 and "No artifact versions" in ls.stdout   # not complete: not listed
    reindex = cli(root, "reindex", "datasets", timeout=60)
    assert reindex.returncode == 0
    assert "nuboard reindex: skipped artifacts/d/v1: its manifest cannot be read" in reindex.stderr
    with Viewer(root) as v:
        assert v.get("/p/datasets/.artifact/d/v1").status == 404
        assert v.get("/api/artifacts").json()["artifacts"] == []


def test_a_manifest_in_another_layout_still_lists_its_files(root, tmp_path):
    """A manifest rewritten on one line (by hand, by jq -c, by another tool) is read whole."""
    from nuboard.web.artifact_data import files_page
    data = make_tree(tmp_path / "data", {f"f{i}.bin": b"x" * i for i in range(5)})
    art = add_artifact("datasets", "d", data, reference=True)
    manifest = art.path / "manifest.json"
    for indent in (None, 4):
        manifest.write_text(json.dumps(json.loads(manifest.read_text()), indent=indent))
        page = files_page(manifest, offset=1, limit=2)
        assert [f["path"] for f in page["files"]] == ["f1.bin", "f2.bin"], indent
        assert [f["path"] for f in files_page(manifest, needle="f4")["files"]] == ["f4.bin"]


def test_a_version_from_a_runs_folder_in_the_viewer_names_what_it_left_out(root):
    with nb.init("llm", run_name="train", **QUIET) as run:
        files = Path(run.path) / "files" / "ckpt"
        files.mkdir(parents=True)
        (files / "w.bin").write_bytes(b"w")
        os.symlink("../nowhere", files / "latest")
    fields = {"project": "llm", "run": run.id, "name": "best", "path": "files/ckpt",
              "store": "copy", "type": "checkpoint", "description": "from the run"}
    with Viewer(root, edit_artifacts=True) as v:
        check = v.post("/api/p/llm/.artifacts/check", fields).json()
        assert check["ok"] and any("latest (a dangling link)" in w for w in check["warnings"])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            added = v.post("/p/llm/.artifacts/add", fields)
        assert added.status == 201 and "Added llm/best:v1" in added.text
        assert "latest (a dangling link)" in added.text
    art = get_artifact("llm/best:v1")
    assert list(art) == ["w.bin"] and art.producer == {"project": "llm", "run_id": run.id}
