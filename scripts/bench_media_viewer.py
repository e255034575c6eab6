#!/usr/bin/env python3
"""Benchmark of the viewer's media panels: 12 runs of 200 images and 200 histograms each.

    python3 scripts/bench_media_viewer.py [--runs 12] [--steps 200] [--scalars 20000]
                                          [--repeat 15] [--keep DIR]

It logs --runs runs with the real API (a 64x64 RGB image and a 1,000-value histogram at each of
--steps steps, and --scalars steps of train/loss beside them, so the logs the panels read also
hold scalar records), starts `nuboard up DIR --port 0` and times real HTTP requests over one
keep-alive connection: the first request of a URL (cold: the runs' logs read; once on a fresh
server without the page first, once after the Charts page, which starts reading them while the
browser loads) and the median of --repeat after it (warm), for the Charts page of the runs, the
image panel at one step (JSON and the HTML the slider swaps in, each at a different step per
request), the histogram panel, its distributions, and one image file. Each figure is printed beside its
target; a missed target says MISSED and the exit code stays 0 (non-zero only on an error).
"""
from __future__ import annotations

import argparse
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PROJECT = "bench-media"
PANEL_TARGET = 0.300             # s: a panel of 12 runs at one step (issue 32)


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<58} {value:>12}   target {target:<12} {'ok' if ok else 'MISSED'}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def generate(root: Path, runs: int, steps: int, scalars: int) -> list[str]:
    """The runs, logged with the real API; their ids."""
    import numpy as np

    import nuboard as nb
    rng = np.random.default_rng(0)
    ids = []
    every = max(1, scalars // steps)
    for r in range(runs):
        with nb.init(PROJECT, dir=root, run_name=f"run{r}", system_metrics=False,
                     capture_console=False, capture_env=False) as run:
            for step in range(scalars):
                run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
                if step % every == 0 and step // every < steps:
                    run.log({"val/samples": nb.Image(rng.integers(0, 256, (64, 64, 3), np.uint8),
                                                     caption=f"run {r} step {step}"),
                             "weights": nb.Histogram(rng.normal(step / scalars, 1, 1000))},
                            step=step)
        ids.append(Path(run.path).name)
    return ids


class Client:
    """GETs over one keep-alive connection; each returns (seconds, status, body)."""

    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def get(self, path: str) -> tuple[float, int, bytes]:
        t = time.perf_counter()
        self.conn.request("GET", path)
        resp = self.conn.getresponse()
        body = resp.read()
        return time.perf_counter() - t, resp.status, body


def serve(root: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    found = re.search(r"at http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
    if found is None:
        proc.kill()
        raise SystemExit(f"nuboard up did not start: {proc.stderr.read()}")
    return proc, int(found.group(1))


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def timed(client: Client, label: str, paths: list[str], target: float | None) -> None:
    """The first path cold, the rest warm (median)."""
    first, status, body = client.get(paths[0])
    if status != 200:
        raise SystemExit(f"{paths[0]} answered {status}: {body[:300]!r}")
    goal = f"< {target * 1000:.0f} ms" if target else "(none)"
    line(f"{label}: first (cold)", ms(first), goal, target is None or first < target)
    times = []
    for path in paths[1:]:
        seconds, status, body = client.get(path)
        if status != 200:
            raise SystemExit(f"{path} answered {status}: {body[:300]!r}")
        times.append(seconds)
    if times:
        median = statistics.median(times)
        line(f"{label}: median of {len(times)} (warm)", ms(median), goal,
             target is None or median < target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--steps", type=int, default=200, help="images (and histograms) per run")
    parser.add_argument("--scalars", type=int, default=20_000, help="train/loss points per run")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", type=Path, help="write into (or reuse) this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nuboard-bench-media-") as tmp:
        root = args.keep or Path(tmp) / "experiments"
        runs_dir = root / PROJECT / "runs"
        if runs_dir.is_dir() and len(list(runs_dir.iterdir())) >= args.runs:
            ids = sorted(p.name for p in runs_dir.iterdir())[:args.runs]
        else:
            t = time.perf_counter()
            ids = generate(root, args.runs, args.steps, args.scalars)
            line(f"generate: {args.runs} runs x {args.steps} images", f"{time.perf_counter() - t:.1f} s",
                 "(none)", True)
        runs = ",".join(ids)
        steps = [s * max(1, args.scalars // args.steps) for s in range(args.steps)]
        pick = [steps[(i * 37) % len(steps)] for i in range(args.repeat + 1)]
        panel = f"/api/p/{PROJECT}/.media?runs={runs}&key=val/samples&step="
        proc, port = serve(root)             # a fresh server: the panel asked without its page
        try:
            timed(Client(port), f"image panel, {len(ids)} runs, no page before (cold)",
                  [panel + str(pick[0])], PANEL_TARGET)
        finally:
            stop(proc)
        proc, port = serve(root)             # as a browser asks: the page, then its panels
        try:
            client = Client(port)
            timed(client, f"Charts page of {len(ids)} runs", [f"/p/{PROJECT}/.charts?runs={runs}"], None)
            timed(client, f"image panel, {len(ids)} runs at one step (JSON)",
                  [panel + str(s) for s in pick], PANEL_TARGET)
            timed(client, f"image panel, {len(ids)} runs: the slider's HTML",
                  [f"/p/{PROJECT}/.media/step?runs={runs}&key=val/samples&i={i}" for i in range(args.repeat + 1)],
                  PANEL_TARGET)
            timed(client, f"histogram panel, {len(ids)} runs at one step (HTML)",
                  [f"/p/{PROJECT}/.media?runs={runs}&key=weights&step={s}" for s in pick], PANEL_TARGET)
            timed(client, f"distributions, {len(ids)} runs x {args.steps} histograms",
                  [f"/api/p/{PROJECT}/.media/distribution?runs={runs}&key=weights"] * (args.repeat + 1),
                  None)
            _, _, body = client.get(f"/api/p/{PROJECT}/.media?runs={ids[0]}&key=val/samples&step=0")
            image = re.search(rb'"url": ?"([^"]+)"', body).group(1).decode()
            timed(client, "one image file", [image] * (args.repeat + 1), None)
        finally:
            stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
