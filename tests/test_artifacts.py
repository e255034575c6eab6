"""Artifacts: names, types, copies, references, versions, unlink/restore, and crashes and races."""
from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from helpers import child_env, make_tree, run_child

from nuboard.artifacts import (
    ArtifactNotFoundError,
    VersionStateError,
    add_artifact,
    get_artifact,
    list_artifacts,
    list_versions,
    promote_run_path,
    restore_version,
    unlink_version,
    use_artifact,
)


def manifest_of(art) -> dict:
    return json.loads((art.path / "manifest.json").read_text())


# --- names and types ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["fineweb-edu", "model", "v1.2_final", "A-9", "_x"])
def test_good_names(root, tmp_path, name):
    src = make_tree(tmp_path / "src", {"a": b"1"})
    assert add_artifact("p", name, src).name == name


@pytest.mark.parametrize("name", ["a/b", "", ".hidden", "..", "a b", "naïve", "x" * 129, "a:b", "a\nb"])
def test_bad_names_raise_naming_the_rule(root, tmp_path, name):
    src = make_tree(tmp_path / "src", {"a": b"1"})
    with pytest.raises(ValueError) as info:
        add_artifact("p", name, src)
    assert "letters, digits" in str(info.value)
    assert repr(name[:60]) in str(info.value) or repr(name) in str(info.value)
    assert not (root / "p" / "artifacts").exists() or not list((root / "p" / "artifacts").rglob("manifest.json"))


def test_types(root, tmp_path):
    src = make_tree(tmp_path / "src", {"a": b"1"})
    for kind in ("dataset", "model", "checkpoint", "report", "other"):
        assert add_artifact("p", "x", src, type=kind).type == kind
    assert add_artifact("p", "y", src).type == "other"
    with pytest.raises(ValueError, match="'tokenizer' is not one of dataset, model"):
        add_artifact("p", "x", src, type="tokenizer")
    with pytest.raises(TypeError):
        add_artifact("p", "x", src, metadata={"bad": object()})
    with pytest.raises(ValueError):
        add_artifact("bad//project", "x", src)


# --- copies ------------------------------------------------------------------------------------

def test_copy_of_a_folder(root, tmp_path):
    files = {"train/shard-000.bin": os.urandom(3000), "train/shard-001.bin": b"", "README": b"hi"}
    src = make_tree(tmp_path / "src", files)
    art = add_artifact("llm", "data", src, type="dataset", metadata={"rows": 3},
                       description="three files")
    assert art.version == 1 and art.spec == "llm/data:v1"
    assert art.path == root / "llm" / "artifacts" / "data" / "v1"
    assert art.files == art.path / "files"
    assert sorted(art) == sorted(files) and len(art) == 3
    doc = manifest_of(art)
    assert doc["format"] == 1 and doc["storage"] == "copy" and doc["type"] == "dataset"
    assert doc["metadata"] == {"rows": 3} and doc["description"] == "three files"
    assert doc["producer"] is None and doc["source"]["path"] == str(src)
    assert doc["file_count"] == 3 and doc["total_bytes"] == 3002
    for entry in doc["files"]:
        data = files[entry["path"]]
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert art[entry["path"]].read_bytes() == data
    # the version does not change with its source
    (src / "README").write_bytes(b"changed!")
    assert get_artifact("llm/data:v1")["README"].read_bytes() == b"hi"
    assert get_artifact("llm/data:v1").check() == []


def test_copy_of_one_file_and_the_mapping(root, tmp_path):
    src = tmp_path / "ckpt" / "best.pt"
    make_tree(tmp_path / "ckpt", {"best.pt": b"weights", "other.pt": b"x"})
    model = add_artifact("llm", "model", src, type="checkpoint", metadata={"step": 25000})
    assert list(model) == ["best.pt"] and "best.pt" in model and len(model) == 1
    assert "other.pt" not in model
    assert model["best.pt"] == model.files / "best.pt" and model["best.pt"].read_bytes() == b"weights"
    with pytest.raises(KeyError) as info:
        model["other.pt"]
    assert "'other.pt'" in str(info.value) and "'best.pt'" in str(info.value)
    assert model.metadata == {"step": 25000} and model.producer is None


def test_versions_count_up_and_are_never_reused(root, tmp_path):
    src = make_tree(tmp_path / "src", {"a": b"1"})
    assert [add_artifact("p", "m", src).version for _ in range(3)] == [1, 2, 3]
    unlink_version("p", "m", "v3")
    assert add_artifact("p", "m", src).version == 4        # not 3, which is unlinked
    unlink_version("p", "m", 4)
    # even when the unlinked folders are deleted by hand, the numbers stay used
    import shutil
    shutil.rmtree(root / "p" / "artifacts" / ".unlinked")
    assert add_artifact("p", "m", src).version == 5
    assert list_versions("p", "m") == [1, 2, 5]
    assert list_artifacts("p") == ["m"]


def test_empty_missing_and_artifacts_paths_are_refused(root, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no files"):
        add_artifact("p", "x", tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        add_artifact("p", "x", tmp_path / "nope")
    src = make_tree(tmp_path / "src", {"a": b"1"})
    art = add_artifact("p", "x", src)
    for bad in (art.path, art.files, art.files / "a", root / "p" / "artifacts", root / "p", root):
        for ref in (False, True):
            with pytest.raises(ValueError, match="artifacts/"):
                add_artifact("p", "y", bad, reference=ref)
    # another project's artifacts too
    with pytest.raises(ValueError, match="artifacts/"):
        add_artifact("q", "y", art.files, reference=True)
    assert list_versions("p", "x") == [1] and list_versions("p", "y") == []


# --- references --------------------------------------------------------------------------------

def test_reference_stores_size_and_mtime_and_hash_only_on_request(root, tmp_path):
    src = make_tree(tmp_path / "data", {"a.bin": b"12345", "sub/b.bin": b"xy"})
    os.utime(src / "a.bin", (1_000_000, 1_000_000.5))
    art = add_artifact("datasets", "d", src, type="dataset", reference=True)
    doc = manifest_of(art)
    assert doc["storage"] == "reference" and doc["location"] == str(src) and doc["checksum"] is False
    assert not (art.path / "files").exists()
    rows = {e["path"]: e for e in doc["files"]}
    assert rows["a.bin"] == {"path": "a.bin", "size": 5, "mtime": 1_000_000.5}
    assert "sha256" not in rows["sub/b.bin"]
    assert art.files == src and art["sub/b.bin"] == src / "sub" / "b.bin"
    hashed = add_artifact("datasets", "d", src, reference=True, checksum=True)
    assert manifest_of(hashed)["files"][0]["sha256"] == hashlib.sha256(b"12345").hexdigest()
    assert manifest_of(hashed)["checksum"] is True


def test_reference_to_one_file_lists_only_it(root, tmp_path):
    src = make_tree(tmp_path / "ckpt", {"best.pt": b"w", "other.pt": b"o"})
    art = add_artifact("p", "m", src / "best.pt", reference=True)
    assert art.files == src and list(art) == ["best.pt"]
    with pytest.raises(KeyError, match="'best.pt'"):
        art["other.pt"]
    (src / "later.pt").write_bytes(b"l")
    assert list(get_artifact("p/m:v1")) == ["best.pt"]


def test_folder_reference_ignores_files_added_later(root, tmp_path):
    src = make_tree(tmp_path / "d", {"a": b"1"})
    add_artifact("p", "d", src, reference=True)
    (src / "b").write_bytes(b"2")
    art = get_artifact("p/d:latest")
    assert list(art) == ["a"] and "b" not in art and art.check() == []


def test_check_and_use_warn_once_about_missing_and_changed(root, tmp_path):
    src = make_tree(tmp_path / "d", {"a": b"1", "b": b"22", "c": b"333", "d": b"4"})
    add_artifact("p", "d", src, reference=True)
    (src / "a").unlink()
    (src / "b").write_bytes(b"2222")
    st = (src / "c").stat()
    os.utime(src / "c", (st.st_atime, st.st_mtime + 100))
    problems = {p.path: p.problem for p in get_artifact("p/d:v1").check()}
    assert problems == {"a": "missing", "b": "size"}          # a new mtime alone is no problem
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = use_artifact("d:v1", project="p")
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    text = str(caught[0].message)
    assert "p/d:v1" in text and "missing: a" in text and "changed size: b" in text
    assert "modified" not in text and ": c" not in text
    assert art.version == 1
    with warnings.catch_warnings(record=True) as caught:       # get_artifact never warns
        warnings.simplefilter("always")
        get_artifact("p/d:v1")
    assert caught == []


def test_copy_checked_by_size_only(root, tmp_path):
    art = add_artifact("p", "c", make_tree(tmp_path / "s", {"a": b"1"}))
    os.utime(art["a"], (1, 1))
    assert art.check() == []
    art["a"].write_bytes(b"12")
    assert [p.problem for p in art.check()] == ["size"]


def test_data_dir_reference_is_stored_relative_and_follows_the_machine(root, tmp_path, monkeypatch):
    laptop, cluster = tmp_path / "laptop", tmp_path / "cluster"
    for base in (laptop, cluster):
        make_tree(base / "fineweb-edu" / "2026-10", {"train/shard-000.bin": b"abc"})
    monkeypatch.setenv("NUBOARD_DATA_DIR", str(laptop))
    art = add_artifact("datasets", "fineweb-edu", laptop / "fineweb-edu" / "2026-10",
                       type="dataset", reference=True)
    assert manifest_of(art)["location"] == "${NUBOARD_DATA_DIR}/fineweb-edu/2026-10"
    monkeypatch.setenv("NUBOARD_DATA_DIR", str(cluster))
    os.utime(cluster / "fineweb-edu" / "2026-10" / "train" / "shard-000.bin", (5, 5))
    data = get_artifact("datasets/fineweb-edu:v1")
    assert data["train/shard-000.bin"] == cluster / "fineweb-edu" / "2026-10" / "train" / "shard-000.bin"
    assert data.check() == []                     # a copy on another machine: by size only
    monkeypatch.delenv("NUBOARD_DATA_DIR")
    with pytest.warns(RuntimeWarning, match=r"\$NUBOARD_DATA_DIR is not set"):
        use_artifact("datasets/fineweb-edu:v1")


def test_variable_in_path_is_kept_and_expanded_on_use(root, tmp_path, monkeypatch):
    make_tree(tmp_path / "a" / "train", {"x.jpg": b"x"})
    make_tree(tmp_path / "b" / "train", {"x.jpg": b"y"})
    monkeypatch.setenv("IMAGENET", str(tmp_path / "a"))
    art = add_artifact("datasets", "imagenet-100", "${IMAGENET}/train", reference=True)
    assert manifest_of(art)["location"] == "${IMAGENET}/train"
    monkeypatch.setenv("IMAGENET", str(tmp_path / "b"))
    assert get_artifact("datasets/imagenet-100:v1")["x.jpg"] == tmp_path / "b" / "train" / "x.jpg"
    assert add_artifact("datasets", "i2", "$IMAGENET/train", reference=True).manifest["location"] \
        == "${IMAGENET}/train"
    monkeypatch.delenv("IMAGENET")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        use_artifact("datasets/imagenet-100:v1")
    assert len(caught) == 1 and "$IMAGENET" in str(caught[0].message)
    with pytest.raises(ValueError, match=r"\$IMAGENET"):
        add_artifact("datasets", "imagenet-100", "${IMAGENET}/train", reference=True)


def _fake_run(root: Path, project: str, run_id: str, status: str) -> Path:
    run = root / project / "runs" / run_id
    make_tree(run / "files", {"best.pt": b"best", "checkpoints/step_06000/w.bin": b"w6"})
    (run / "run.json").write_text(json.dumps({"id": run_id, "project": project, "status": status}))
    (run / "heartbeat").write_text("{}")
    return run


def test_reference_inside_the_project_is_relative_and_survives_a_move(root, tmp_path):
    run = _fake_run(root, "llm", "20261103T1504-90c3affc", "finished")
    art = add_artifact("llm", "best", run / "files" / "best.pt", reference=True)
    doc = manifest_of(art)
    assert doc["base"] == "project" and doc["location"] == "runs/20261103T1504-90c3affc/files/best.pt"
    assert doc["producer"] == {"project": "llm", "run_id": "20261103T1504-90c3affc"}
    assert doc["source"]["run_id"] == "20261103T1504-90c3affc"
    moved = tmp_path / "moved"
    root.rename(moved)
    art = get_artifact("llm/best:v1", dir=moved)
    assert art["best.pt"].read_bytes() == b"best" and art.check() == []


def test_running_run_cannot_be_referenced_but_can_be_copied(root):
    run = _fake_run(root, "llm", "r1", "running")
    with pytest.raises(ValueError, match="still running"):
        add_artifact("llm", "best", run / "files" / "best.pt", reference=True)
    assert add_artifact("llm", "best", run / "files" / "best.pt").producer["run_id"] == "r1"


def test_promote_run_path(root):
    run = _fake_run(root, "llm-pretrain", "r2", "finished")
    art = promote_run_path(run, "files/checkpoints/step_06000", "best", copy=False, type="checkpoint")
    assert art.spec == "llm-pretrain/best:v1" and list(art) == ["w.bin"] and art.reference
    assert art.producer == {"project": "llm-pretrain", "run_id": "r2"}
    copied = promote_run_path(run, "files/best.pt", "best")
    assert copied.version == 2 and copied.storage == "copy" and copied["best.pt"].read_bytes() == b"best"


# --- getting versions --------------------------------------------------------------------------

def test_get_artifact_specs(root, tmp_path):
    src = make_tree(tmp_path / "s", {"a": b"1"})
    for _ in range(3):
        add_artifact("team/llm", "m", src)
    assert get_artifact("team/llm/m:v2").version == 2
    assert get_artifact("team/llm/m:latest").version == 3
    assert get_artifact("m:v1", project="team/llm").spec == "team/llm/m:v1"
    assert get_artifact("m:latest", project="team/llm").project == "team/llm"
    with pytest.raises(ValueError, match="names no project"):
        get_artifact("m:v1")
    with pytest.raises(ValueError, match="version"):
        get_artifact("team/llm/m:version2")
    with pytest.raises(LookupError, match="not found"):
        get_artifact("team/llm/m:v9")
    with pytest.raises(ArtifactNotFoundError, match="no versions"):
        get_artifact("team/llm/nothing:latest")


def test_unlink_and_restore(root, tmp_path):
    src = make_tree(tmp_path / "s", {"a": b"1"})
    for _ in range(3):
        add_artifact("p", "m", src)
    where = unlink_version("p", "m", "v3")
    assert where == root / "p" / "artifacts" / ".unlinked" / "m" / "v3" and (where / "manifest.json").is_file()
    assert not (root / "p" / "artifacts" / "m" / "v3").exists()
    assert get_artifact("p/m:latest").version == 2
    with pytest.raises(ArtifactNotFoundError, match="unlinked"):
        get_artifact("p/m:v3")
    with pytest.raises(VersionStateError, match="already unlinked"):
        unlink_version("p", "m", 3)
    with pytest.raises(VersionStateError, match="not unlinked"):
        restore_version("p", "m", 2)
    with pytest.raises(ArtifactNotFoundError):
        unlink_version("p", "m", 7)
    assert list_versions("p", "m", unlinked=True) == [3]
    restore_version("p", "m", "v3")
    assert get_artifact("p/m:latest").version == 3 and get_artifact("p/m:v3")["a"].read_bytes() == b"1"
    for n in (1, 2, 3):
        unlink_version("p", "m", n)
    with pytest.raises(ArtifactNotFoundError, match="3 unlinked"):
        get_artifact("p/m:latest")
    assert add_artifact("p", "m", src).version == 4


def test_incomplete_version_is_ignored_and_its_number_not_reused(root, tmp_path):
    src = make_tree(tmp_path / "s", {"a": b"1"})
    add_artifact("p", "m", src)
    stuck = root / "p" / "artifacts" / "m" / "v2"
    make_tree(stuck / "files", {"a": b"partial"})          # a killed copy: no manifest
    assert get_artifact("p/m:latest").version == 1
    with pytest.raises(ArtifactNotFoundError):
        get_artifact("p/m:v2")
    assert list_versions("p", "m") == [1]
    assert add_artifact("p", "m", src).version == 3


def test_import_nuboard_does_not_import_artifacts():
    out = run_child("import sys, nuboard; print('nuboard.artifacts' in sys.modules)")
    assert out.stdout.strip() == "False"


# --- processes: concurrent adds, races with unlink/restore, kills during a copy ----------------

ADDER = """
import sys
from nuboard.artifacts import add_artifact
src, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    print(add_artifact("p", "m", src, reference=True).version, flush=True)
"""


def test_sixteen_processes_adding_at_once_get_distinct_numbers(root, tmp_path):
    src = make_tree(tmp_path / "s", {"a": b"1"})
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(src), "5"], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(16)]
    numbers = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        numbers += [int(x) for x in out.split()]
    assert sorted(numbers) == list(range(1, 81))
    assert list_versions("p", "m") == list(range(1, 81))


RACER = """
import os, random, sys
from nuboard.artifacts import add_artifact, list_versions, restore_version, unlink_version
from nuboard.artifacts.errors import ArtifactNotFoundError, VersionStateError
src, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
rng = random.Random(os.getpid())
print("ready", flush=True)
while True:
    op = rng.choice(["add", "add", "unlink", "restore"])
    try:
        if op == "add":
            log.write(f"add {add_artifact('p', 'm', src).version}\\n")
        elif op == "unlink":
            vs = list_versions("p", "m")
            if vs:
                unlink_version("p", "m", rng.choice([vs[-1], rng.choice(vs)]))   # often the latest
        else:
            vs = list_versions("p", "m", unlinked=True)
            if vs:
                restore_version("p", "m", rng.choice(vs))
    except (ArtifactNotFoundError, VersionStateError):
        pass      # another process moved it first
"""


def test_row20_add_unlink_restore_race_with_kills(root, tmp_path):
    src = make_tree(tmp_path / "s", {"a.bin": os.urandom(20_000), "b/c.bin": b"c"})
    logs = [tmp_path / f"log{i}" for i in range(6)]
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(src), str(log)], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for log in logs]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    rng = random.Random(20)
    deadline = time.monotonic() + 6
    killed = 0
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(0.05, 0.4))
        i = rng.randrange(len(procs))
        procs[i].send_signal(signal.SIGKILL)       # a kill in the middle of whatever it was doing
        procs[i].wait()
        killed += 1
        procs[i] = subprocess.Popen([sys.executable, "-c", RACER, str(src), str(logs[i])],
                                    env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert procs[i].stdout.readline().strip() == "ready"
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert killed >= 5
    added = [int(line.split()[1]) for log in logs for line in log.read_text().splitlines()]
    assert len(added) > 20 and len(added) == len(set(added)), "a number was handed out twice"
    arts = root / "p" / "artifacts"
    linked = {p.name for p in (arts / "m").glob("v*")}
    unlinked = {p.name for p in (arts / ".unlinked" / "m").glob("v*")}
    assert not linked & unlinked, f"a version is in both places: {linked & unlinked}"
    # every unlinked folder is a whole version: an unlink or restore is all or nothing
    for name in unlinked:
        assert (arts / ".unlinked" / "m" / name / "manifest.json").is_file()
    for number in list_versions("p", "m") + list_versions("p", "m", unlinked=True):
        folder = arts / ("m" if f"v{number}" in linked else ".unlinked/m") / f"v{number}"
        doc = json.loads((folder / "manifest.json").read_text())
        assert doc["version"] == number
        for entry in doc["files"]:
            data = (folder / "files" / entry["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    every = {int(n[1:]) for n in linked | unlinked}
    assert set(added) <= every
    # the next number is above everything ever used
    assert add_artifact("p", "m", src).version == max(every) + 1


COPIER = """
import sys
from nuboard.artifacts import add_artifact
print("start", flush=True)
add_artifact("p", "big", sys.argv[1], type="checkpoint")
print("done", flush=True)
"""


def test_row6_kill_during_a_copy_leaves_no_version_claiming_missing_files(root, tmp_path):
    files = {f"shard-{i:03d}.bin": os.urandom(1 << 20) for i in range(24)}
    src = make_tree(tmp_path / "big", files)
    digests = {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}
    # the copy's own time, from "start" to "done" (the interpreter's start-up before "start"
    # would make the kills below land after the copy, on a loaded machine all of them)
    first = subprocess.Popen([sys.executable, "-c", COPIER, str(src)], env=child_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert first.stdout.readline().strip() == "start"
    t0 = time.monotonic()
    assert first.stdout.readline().strip() == "done", first.stderr.read()
    whole = time.monotonic() - t0
    first.wait()
    rng = random.Random(6)
    for _ in range(8):
        proc = subprocess.Popen([sys.executable, "-c", COPIER, str(src)], env=child_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "start"
        time.sleep(rng.uniform(0, whole))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    folders = sorted(int(p.name[1:]) for p in (root / "p" / "artifacts" / "big").glob("v*"))
    assert folders == list(range(1, len(folders) + 1))
    complete = list_versions("p", "big")
    assert 1 in complete and len(complete) < len(folders), "no kill landed during a copy"
    for number in folders:
        folder = root / "p" / "artifacts" / "big" / f"v{number}"
        if number not in complete:
            assert not (folder / "manifest.json").exists()
            with pytest.raises(ArtifactNotFoundError):
                get_artifact(f"p/big:v{number}")
            continue
        art = get_artifact(f"p/big:v{number}")          # a version claims only files it has, whole
        assert sorted(art) == sorted(files)
        for rel in art:
            assert hashlib.sha256(art[rel].read_bytes()).hexdigest() == digests[rel]
    assert get_artifact("p/big:latest").version == max(complete)
    nxt = add_artifact("p", "big", src)
    assert nxt.version == folders[-1] + 1
    assert get_artifact("p/big:latest").version == nxt.version


# --- the spec's examples, as written (paths made to exist under tmp) ---------------------------

def test_spec_examples(root, tmp_path, monkeypatch):
    from nuboard.artifacts import add_artifact as nb_add_artifact
    from nuboard.artifacts import get_artifact as nb_get_artifact
    imagenet = make_tree(tmp_path / "data" / "imagenet-100", {"train/x.jpg": b"x"})
    nb_add_artifact("datasets", "imagenet-100", str(imagenet), type="dataset",
                    metadata={"classes": 100}, reference=True)
    monkeypatch.setenv("NUBOARD_DATA_DIR", str(tmp_path / "data"))
    make_tree(tmp_path / "data" / "fineweb-edu" / "2026-10", {"train/shard-000.bin": b"s0"})
    for _ in range(2):
        nb_add_artifact("datasets", "fineweb-edu", str(tmp_path / "data" / "fineweb-edu" / "2026-10"),
                        type="dataset", metadata={"tokens": "12B"}, reference=True)
    monkeypatch.setenv("IMAGENET", str(imagenet))
    nb_add_artifact("datasets", "imagenet-100", "${IMAGENET}/train", reference=True)
    data = nb_get_artifact("datasets/fineweb-edu:v2")
    assert data["train/shard-000.bin"].read_bytes() == b"s0"
    assert (data.files / "train").is_dir()
    assert nb_get_artifact("datasets/imagenet-100:v1").metadata == {"classes": 100}
    assert nb_get_artifact("datasets/imagenet-100:latest").manifest["location"] == "${IMAGENET}/train"
    run = _fake_run(root, "llm-pretrain", "20261103T1504-90c3affc", "finished")
    run_dir = run
    promote_run_path(run_dir, "files/checkpoints/step_06000", "best", copy=False, type="checkpoint")
    assert nb_get_artifact("llm-pretrain/best:v1").producer["run_id"] == "20261103T1504-90c3affc"


# --- row 4: power loss --------------------------------------------------------------------------

FSYNC_RECORDER = """
import os, sys, json
log = open(sys.argv[2], "a", buffering=1)
real_fsync = os.fsync
def recording_fsync(fd):
    real_fsync(fd)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 == 0o100000:          # a regular file: note its inode and size
            log.write(json.dumps([st.st_ino, st.st_size]) + "\\n")
    except OSError:
        pass
os.fsync = recording_fsync
from nuboard.artifacts import add_artifact
print("start", flush=True)
while True:
    add_artifact("p", "big", sys.argv[1], type="checkpoint")
"""


def test_row4_power_loss_no_manifest_names_a_file_that_is_not_there(root, tmp_path):
    """Kill a copier, then drop every byte not fsynced (each file cut to its last fsynced size,
    a file never fsynced emptied): every manifest left is whole and names only whole files."""
    files = {f"shard-{i:02d}.bin": os.urandom(256 << 10) for i in range(16)}
    src = make_tree(tmp_path / "src", files)
    journal = tmp_path / "fsyncs.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", FSYNC_RECORDER, str(src), str(journal)],
                            env=child_env(NUBOARD_DIR=str(root)), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    synced: dict[int, int] = {}                    # by inode: a temp file is renamed after its fsync
    for line in journal.read_text().splitlines():
        inode, size = json.loads(line)
        synced[inode] = size
    art_dir = root / "p" / "artifacts"
    for path in [p for p in art_dir.rglob("*") if p.is_file()]:
        keep = synced.get(path.stat().st_ino, 0)       # the power goes: the page cache is lost
        with open(path, "r+b") as fh:
            fh.truncate(min(keep, path.stat().st_size))
    versions = list_versions("p", "big")
    assert len(versions) >= 1, "no version finished before the kill"
    for number in versions:
        art = get_artifact(f"p/big:v{number}")
        assert sorted(art) == sorted(files) and art.check() == []
        for rel in art:
            assert art[rel].read_bytes() == files[rel]
    nxt = add_artifact("p", "big", src)            # and adding goes on above every number seen
    assert nxt.version > max(int(p.name[1:]) for p in (art_dir / "big").glob("v*") if p != nxt.path)
