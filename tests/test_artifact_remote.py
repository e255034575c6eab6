"""References to object storage: a version of the objects under an s3:// URL, checked against the
store by one listing, used from a local copy filled by ETag or version id. Against moto's real S3
server through s3fs (tests/helpers_s3.py); a fresh bucket per test.
"""
from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from helpers import QUIET, child_env, run_cli
from helpers_http import AppViewer, visible_text
from helpers_s3 import CutProxy, S3Server

import nuboard as nb
from nuboard.artifacts import get_artifact, use_artifact
from nuboard.errors import StorageError


@pytest.fixture
def env(s3_env, root, tmp_path, monkeypatch):
    """The S3 server's settings, an experiments root and a fresh cache folder."""
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(tmp_path / "cache"))
    return s3_env


def put(s3, url: str, objects: dict[str, bytes]) -> None:
    bucket, _, prefix = url[len("s3://"):].partition("/")
    client = s3.client()
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}".lstrip("/"), Body=body)


def delete(s3, url: str) -> None:
    bucket, _, key = url[len("s3://"):].partition("/")
    s3.client().delete_object(Bucket=bucket, Key=key)


def used(spec: str, root: Path):
    """use_artifact, with the RuntimeWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        artifact = use_artifact(spec, dir=root)
    return artifact, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def object_gets(requests) -> list[str]:
    """The object downloads among the requests a server answered."""
    return [path for method, path in requests() if method == "GET" and "list-type" not in path
            and "versions" not in path.split("?", 1)[-1].split("&")]


def version_folders(root: Path, project: str = "datasets") -> list[str]:
    folder = root / project / "artifacts"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("v*")) if folder.exists() else []


def test_a_prefix_is_recorded_and_used_from_a_local_copy(env, root):
    url = env.bucket() + "/shards"
    put(env, url, {"a.bin": b"aaaa", "sub/b.bin": b"bb", "c.bin": b"c" * 100})
    made = nb.add_artifact("datasets", "shards", url, reference=True, type="dataset")
    doc = made.manifest
    assert (doc["storage"], doc["base"], doc["location"]) == ("reference", "url", url)
    assert [(e["path"], e["size"]) for e in doc["files"]] == [("a.bin", 4), ("c.bin", 100), ("sub/b.bin", 2)]
    assert all(e["etag"] for e in doc["files"])
    put(env, url, {"later.bin": b"new"})                     # not part of the version

    found = get_artifact("datasets/shards:v1")               # downloads nothing
    assert found.uri == url and not found.files.exists()
    with env.counting() as requests:
        data, caught = used("datasets/shards:v1", root)
    assert caught == []
    assert data["sub/b.bin"].read_bytes() == b"bb" and data["c.bin"].read_bytes() == b"c" * 100
    assert data.files == found.files and str(data.files).startswith(str(root.parent / "cache" / "objects"))
    assert sorted(object_gets(requests)) == sorted(f"{url[5:]}/{k}" for k in ("a.bin", "c.bin", "sub/b.bin"))
    assert not (data.files / "later.bin").exists()

    with env.counting() as requests:                          # second use: one listing, no download
        again, caught = used("datasets/shards:v1", root)
    assert caught == [] and len(requests()) == 1 and "list-type=2" in requests()[0][1]
    assert again["a.bin"].read_bytes() == b"aaaa"


def test_one_object_and_a_variable_in_the_url(env, root, monkeypatch):
    bucket = env.bucket()
    put(env, bucket + "/models", {"best.pt": b"weights"})
    monkeypatch.setenv("MODEL_BUCKET", bucket[5:])
    made = nb.add_artifact("datasets", "best", "s3://${MODEL_BUCKET}/models/best.pt", reference=True)
    assert made.manifest["location"] == "s3://${MODEL_BUCKET}/models/best.pt"
    assert made.manifest["single_file"] and list(made) == ["best.pt"]
    with env.counting() as requests:
        data, caught = used("datasets/best:v1", root)
    assert caught == [] and data["best.pt"].read_bytes() == b"weights"
    assert [m for m, _ in requests()] == ["HEAD", "GET"]     # a HEAD checks one object
    assert data.uri == f"{bucket}/models/best.pt"
    with nb.init("llm", **QUIET) as run:                      # a run's use: the same copy
        assert run.use_artifact("datasets/best:v1")["best.pt"] == data["best.pt"]
    monkeypatch.delenv("MODEL_BUCKET")
    data, caught = used("datasets/best:v1", root)
    assert len(caught) == 1 and "$MODEL_BUCKET is not set here" in caught[0]


def test_a_versioned_bucket_gives_the_recorded_bytes_and_names_what_changed(env, root):
    url = env.bucket(versioned=True) + "/data"
    put(env, url, {"x.bin": b"old-x", "y.bin": b"yy", "z.bin": b"zz"})
    made = nb.add_artifact("datasets", "d", url, reference=True)
    assert all(e.get("version_id") for e in made.manifest["files"])
    put(env, url, {"x.bin": b"new-x-longer"})
    delete(env, url + "/y.bin")
    data, caught = used("datasets/d:v1", root)
    assert len(caught) == 1
    assert "1 object missing: y.bin" in caught[0] and "1 object changed size: x.bin" in caught[0]
    assert data["x.bin"].read_bytes() == b"old-x" and data["y.bin"].read_bytes() == b"yy"


def test_a_same_size_rewrite_is_caught_by_etag_and_a_deleted_object_named(env, root):
    url = env.bucket() + "/data"
    put(env, url, {"x.bin": b"1111", "y.bin": b"2222", "z.bin": b"3333"})
    nb.add_artifact("datasets", "d", url, reference=True)
    used("datasets/d:v1", root)
    put(env, url, {"x.bin": b"9999"})                        # same size, new content
    delete(env, url + "/y.bin")
    data, caught = used("datasets/d:v1", root)
    assert len(caught) == 1
    assert "1 object missing: y.bin" in caught[0] and "1 object changed content: x.bin" in caught[0]
    assert data["x.bin"].read_bytes() == b"9999"              # no versions: the bytes there are
    shown = run_cli(root, "artifact", "show", "datasets/d:v1", "--verify")
    assert shown.returncode == 1
    assert "y.bin: not in the store" in shown.stdout and "x.bin: ETag" in shown.stdout


def test_the_command_line_adds_and_verifies_a_reference(env, root):
    url = env.bucket() + "/corpus"
    put(env, url, {"part-0.txt": b"hello", "part-1.txt": b"world!"})
    added = run_cli(root, "artifact", "add", "datasets/corpus", url, "--ref", "--type", "dataset",
                    "--description", "in S3")
    assert added.returncode == 0, added.stderr
    assert "Added datasets/corpus:v1 (reference, 2 files, 11 B)" in added.stdout
    with env.counting() as requests:
        plain = run_cli(root, "artifact", "show", "datasets/corpus:v1")
    assert plain.returncode == 0 and "not checked against the store" in plain.stdout
    assert requests() == [] and f"objects at   {url}" in plain.stdout
    verified = run_cli(root, "artifact", "show", "datasets/corpus:v1", "--verify")
    assert verified.returncode == 0 and "all 2 objects in the store" in verified.stdout

    for path, said in ((url, "can only be referenced"), ("s3://no-such-bucket-here/x", "does not exist"),
                       (url + "/nothing", "holds no objects")):
        refused = run_cli(root, "artifact", "add", "datasets/other", path,
                          "--copy" if path == url else "--ref", "--type", "dataset", "--description", "x")
        assert refused.returncode == 1 and said in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert version_folders(root) == ["corpus/v1"]


def test_a_download_shows_progress_on_a_terminal_only(env, root):
    url = env.bucket() + "/p"
    put(env, url, {f"o{i}": b"1" * 1000 for i in range(20)})
    nb.add_artifact("datasets", "p", url, reference=True)
    code = f"import nuboard.artifacts as a; print(len(a.use_artifact('datasets/p:v1', dir={str(root)!r})))"
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave,
                             env=child_env())
    os.close(slave)
    out = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(master, 65536):
            out += chunk
    os.close(master)
    assert child.wait(timeout=60) == 0
    assert b"Downloading 20 objects: 20.0 kB of 20.0 kB (100%)" in out and out.rstrip().endswith(b"20")
    piped = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                           env=child_env(NUBOARD_CACHE_DIR=str(root.parent / "cache2")))
    assert piped.returncode == 0 and piped.stderr == b"" and piped.stdout.strip() == b"20"


def test_the_wizard_takes_a_url_as_the_path(env, root):
    from test_artifact_wizard import drive, keys
    url = env.bucket() + "/w"
    put(env, url, {"a": b"12", "b": b"345"})
    form, printed, screen = drive(keys("datasets/w", url, "", "dataset", "from S3", "", "y"), root)
    assert form is not None and form.store == "reference" and form.checksum is False
    assert "2 files, 5 B" in "\n".join(printed)
    assert "[reference]" in screen and "Hash every file" not in screen


def test_the_version_page_lists_the_objects_without_contacting_the_store(env, root):
    url = env.bucket(versioned=True) + "/v"
    put(env, url, {"k1.bin": b"1", "k2.bin": b"22"})
    made = nb.add_artifact("datasets", "v", url, reference=True)
    etag = made.manifest["files"][0]["etag"]
    with env.counting() as requests, AppViewer(root) as viewer:
        page = viewer.get("/p/datasets/.artifact/v/v1")
        text = visible_text(page.text)
    assert page.status == 200 and requests() == []
    assert "k1.bin" in text and "k2.bin" in text and etag in text and url in text
    from nuboard.web.version_form import VersionForm, check_form
    form = VersionForm(project="datasets", name="w", path=url, type="dataset", description="d")
    assert "not from the viewer" in check_form(form, root).problems["path"]


def test_wrong_credentials_one_line_and_nothing_written(root, tmp_path, monkeypatch):
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(tmp_path / "cache"))
    with S3Server(auth=True) as guarded:
        url = guarded.bucket() + "/p"
        put(guarded, url, {"a": b"1"})
        for key, value in {**guarded.env, "AWS_SECRET_ACCESS_KEY": "wrong"}.items():
            monkeypatch.setenv(key, value)
        with pytest.raises(StorageError) as caught:
            nb.add_artifact("datasets", "d", url, reference=True)
    assert "access denied" in str(caught.value) and "\n" not in str(caught.value)
    assert version_folders(root) == []


def test_a_store_cut_mid_download_leaves_nothing_trusted(env, root, monkeypatch):
    url = env.bucket() + "/big"
    put(env, url, {"small.bin": b"s", "big.bin": b"\1" * (48 << 20)})
    nb.add_artifact("datasets", "big", url, reference=True)
    with CutProxy(env.port) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
        artifact = get_artifact("datasets/big:v1")
        partial = artifact.files / ".partial"

        def cut_when_bytes_flow() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError):       # big.bin's bytes coming in
                    if any(p.stat().st_size > 1 for p in partial.iterdir()):
                        proxy.cut()
                        return
                time.sleep(0.001)

        watcher = threading.Thread(target=cut_when_bytes_flow)
        watcher.start()
        with pytest.raises(StorageError) as caught:
            used("datasets/big:v1", root)
        watcher.join()
        assert "\n" not in str(caught.value)
        index = json.loads((artifact.files / ".nuboard-objects.json").read_text())
        assert "big.bin" not in index and not (artifact.files / "big.bin").exists()
        with pytest.raises(StorageError, match="cannot be reached"):   # a stopped store: one line
            nb.add_artifact("datasets", "other", url, reference=True)
        assert version_folders(root) == ["big/v1"]
        proxy.restore()
        data, caught_warnings = used("datasets/big:v1", root)
        assert caught_warnings == [] and data["big.bin"].stat().st_size == 48 << 20
        proxy.cut()                     # a node without network: the complete copy is used
        data, caught_warnings = used("datasets/big:v1", root)
    assert len(caught_warnings) == 1 and "cannot be reached" in caught_warnings[0]
    assert "holds every object as recorded, is used" in caught_warnings[0]
    assert data["small.bin"].read_bytes() == b"s"
