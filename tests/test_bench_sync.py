"""The object-storage benches, scaled down (8 runs, 60 objects; each starts its own moto server): every figure is
printed beside its target, and the counts that make the acceptance (a second push writes
nothing, a second pull and a warm use read no object, one listing per 1,000 objects) hold."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from helpers import REPO, child_env


def bench(script: str, *args: str) -> list[str]:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args],
                          capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = [line for line in proc.stdout.splitlines() if " target " in line]
    assert figures, proc.stdout
    for line in figures:
        assert line.rstrip().endswith(("ok", "MISSED")), line
    return figures


def figure(lines: list[str], label: str) -> str:
    hit = [line for line in lines if line.strip().startswith(label)]
    assert len(hit) == 1, (label, lines)
    return hit[0]


@pytest.mark.parametrize("label", ["second push: write requests", "second pull: objects read",
                                   "push: files sent", "pull: runs fetched", "push: requests per run",
                                   "pull: requests per run", "second push: requests (listing pages)"])
def test_bench_sync_scaled_down(label, sync_figures):
    assert figure(sync_figures, label).rstrip().endswith("ok")


@pytest.fixture(scope="module")
def sync_figures() -> list[str]:
    return bench("bench_sync.py", "--runs", "8")


def test_bench_remote_refs_scaled_down():
    lines = bench("bench_remote_refs.py", "--objects", "60")
    for label in ("requests (listing pages)", "objects with a version id", "bytes in the local copy",
                  "the rewritten object's bytes in the copy"):
        assert figure(lines, label).rstrip().endswith("ok")
    warm = [line for line in lines if line.strip().startswith("requests: listing + GETs")]
    assert len(warm) == 3 and all(re.search(r"\b1 \+ 0\b", line) for line in warm[1:]), warm
