"""The viewer bench, scaled down: it exits 0, prints every figure beside its target, and
removes what it wrote."""
from __future__ import annotations

import os
import subprocess
import sys

from helpers import REPO, child_env

FIGURES = ["generate: 50 runs (one written, copied)", "generate: 12 runs x 1,000 steps x 3 scalars",
           "generate: 20,000 points with add_scalar", "generate: its finish (flush, data.parquet)",
           "generate: a copy of it without data.parquet", "generate: in all",
           "server: start to first answer", "Runs page, 50 runs: first open (catalog sync)",
           "Runs page, 50 runs (median of 2)", "its JSON twin (median)",
           "with ?q=tag:baseline (median)", "sorted by config:lr (median)",
           "its last page, page 1 (median)", "Charts page of 12 runs: first (catalog sync)",
           "chart data, 12 runs x 1,000 steps: first", "another scalar at buckets=2000: first",
           "zoomed to steps 400-410 (median)", "Charts page of bench-big: first (catalog sync)",
           "chart data, 20,000 points from data.parquet: first",
           "chart data, 20,000 points from event logs: first",
           "zoomed to steps 10,000-10,200: first",
           "generate: 50 runs x up to 2,000 points for grouping",
           "Charts page of bench-groups: first (catalog sync)",
           "grouping: 50 runs grouped into 5 lines: first",
           "grouping: 50 runs grouped into 5 lines (median)", "largest response body"]


def test_bench_runs_scaled_down_and_prints_each_figure_with_its_target(tmp_path):
    env = child_env(TMPDIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_viewer.py"), "--runs", "50", "--steps",
         "1000", "--big", "20000", "--group-points", "2000", "--repeat", "2", "--no-browser"],
        capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for label in FIGURES:
        hit = [text for text in lines if text.lstrip().startswith(label)]
        assert hit, (label, proc.stdout)
        assert all(" target " in text and text.rstrip().endswith(("ok", "MISSED"))
                   for text in hit), hit
    assert "Charts page in Chromium: skipped (--no-browser)" in proc.stdout
    assert "largest response body" in proc.stdout
    assert os.listdir(tmp_path) == []                   # the data is removed


def test_bench_artifact_pages_runs_small():
    """scripts/bench_artifact_pages.py at a small size prints every figure beside a target."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "scripts" / "bench_artifact_pages.py"
    out = subprocess.run([sys.executable, str(script), "--files", "3000", "--repeat", "1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert "a version of 3,000 files" in lines[0]
    assert len(lines) == 7 and all("target" in line for line in lines[1:])
