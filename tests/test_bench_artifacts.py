"""The artifacts bench, scaled down, and what it relies on: progress, the listing's order,
hashing in threads, and the compact manifest reading back the same."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, child_env

from nuboard.artifacts import add_artifact, get_artifact
from nuboard.artifacts.listing import walk_files
from nuboard.artifacts.manifest import PARALLEL_MIN, PROGRESS_EVERY, hash_files, manifest_bytes

FIGURES = ["setup: writing 2,000 small files", "setup: writing 4 MB of large files",
           "add_artifact reference to 2,000 files", "manifest.json", "bytes per file in the manifest",
           "use_artifact (reads it, stats 2,000 files)", "sha256sum over 2 files",
           "add_artifact checksum=True", "as a share of sha256sum", "peak memory of this process",
           "removing the data"]


def test_bench_runs_scaled_down_and_prints_each_figure_with_its_target(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_artifacts.py"), "--files", "2000",
         "--gigabytes", "0.004", "--large-files", "2", "--repeats", "1", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=child_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for label in FIGURES:
        hit = [line for line in lines if line.startswith(label) or line.startswith("  " + label)]
        assert len(hit) == 1, (label, proc.stdout)
        assert " target " in hit[0] and hit[0].rstrip().endswith(("ok", "MISSED")), hit[0]
    assert "page cache warmed" in proc.stdout
    assert "(60 per 1M)" in proc.stdout and "(20 per 1M)" in proc.stdout and "(120 per 1M)" in proc.stdout
    assert os.listdir(tmp_path) == []                   # the data is removed


def make_files(folder: Path, count: int, size: int = 100) -> Path:
    for i in range(count):
        p = folder / f"d{i % 7}" / f"f{i:05d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(bytes([i % 256]) * (size + i % 13))
    return folder


def test_progress_reports_each_phase_and_ends_at_the_totals(root, tmp_path):
    src = make_files(tmp_path / "src", 3000)
    total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    for options, phase in (({"reference": True}, None), ({"reference": True, "checksum": True}, "hashing"),
                           ({}, "copying")):
        calls = []
        start = time.monotonic()
        add_artifact("p", "data", src, progress=lambda *a: calls.append(a), **options)
        elapsed = time.monotonic() - start
        phases = [c[0] for c in calls]
        assert phases[0] == "listing" and set(phases) == {"listing"} | ({phase} if phase else set())
        assert phases == sorted(phases, key=["listing", phase].index)     # one phase after the other
        listing = [c for c in calls if c[0] == "listing"]
        assert all(total_ is None for _, _, total_ in listing)
        assert listing[0][1] == 0 and listing[-1][1] == 3000
        assert [d for _, d, _ in listing] == sorted(d for _, d, _ in listing)
        assert len(calls) <= 4 + elapsed / PROGRESS_EVERY    # throttled: not one call per file
        if phase:
            rest = [c for c in calls if c[0] == phase]
            assert rest[0] == (phase, 0, total) and rest[-1] == (phase, total, total)
            assert [d for _, d, _ in rest] == sorted(d for _, d, _ in rest)


def test_progress_for_one_file(root, tmp_path):
    src = tmp_path / "model.bin"
    src.write_bytes(b"x" * 1000)
    calls = []
    add_artifact("p", "m", src, progress=lambda *a: calls.append(a))
    assert calls[0] == ("listing", 0, None) and calls[-1] == ("copying", 1000, 1000)
    assert ("listing", 1, None) in calls


def test_walk_files_is_sorted_like_full_paths_and_stats_once(tmp_path):
    names = ["a.b", "a/x", "a/x.y/z", "a/x0", "a/x-", "a0", "a-", "b/c/d", "B", "é", "z/a", "a/ü",
             "q/r", "q.r", "q0"]                          # '.' and '-' sort before '/', '0' after
    for rel in names:
        p = tmp_path.joinpath(*rel.split("/"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rel.encode())
    expected = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    got = list(walk_files(tmp_path))
    assert [rel for rel, _ in got] == expected
    assert all(st.st_size == len(rel.encode()) for rel, st in got)


def test_hash_files_in_threads_matches_hashlib_and_raises_for_a_missing_file(tmp_path):
    files = []
    for i in range(3):
        p = tmp_path / f"big{i}.bin"
        p.write_bytes(os.urandom(1024) * (PARALLEL_MIN // 1024 + i))
        files.append(p)
    small = tmp_path / "small.bin"
    small.write_bytes(b"abc")
    listed = [(str(p), p.stat().st_size) for p in [files[0], small, files[1], files[2]]]
    calls = []
    got = hash_files(listed, lambda *a: calls.append(a), workers=2)
    assert got == [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p, _ in listed]
    total = sum(size for _, size in listed)
    assert calls[0] == ("hashing", 0, total) and calls[-1] == ("hashing", total, total)
    with pytest.raises(FileNotFoundError):
        hash_files(listed + [(str(tmp_path / "gone.bin"), PARALLEL_MIN)], workers=2)


@pytest.mark.parametrize("braces", [False, True])
def test_the_compact_manifest_reads_back_the_same(root, tmp_path, braces):
    src = tmp_path / "src"
    src.mkdir()
    names = ["plain.txt", 'quote"and\\back.txt', "new\nline.txt", "naïve ☃.txt"]
    if braces:
        names.append("a},{b.txt")                          # the text between two entries
    if sys.platform.startswith("linux"):
        names.append(os.fsdecode(b"bad-\xff.bin"))      # an undecodable name: a lone surrogate
    for name in names:
        (src / name).write_bytes(name.encode("utf-8", "surrogateescape"))
    art = add_artifact("p", "odd", src, reference=True, checksum=True, metadata={"files": [{}, {}]})
    text = (art.path / "manifest.json").read_bytes()
    text.decode("utf-8")                                   # valid UTF-8 throughout
    doc = json.loads(text)
    assert doc == art.manifest
    assert sorted(doc["files"], key=lambda f: f["path"]) == doc["files"]
    again = get_artifact("p/odd:v1")
    assert sorted(again) == sorted(names) and again.check() == []
    entries = text.decode().split('\n "files": [\n', 1)[1].split("\n ]", 1)[0].split("\n")
    assert len(entries) == len(names)                       # one line per file
    assert manifest_bytes({"files": [], "format": 1}) == b'{\n "files": [],\n "format": 1\n}\n'
