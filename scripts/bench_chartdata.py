#!/usr/bin/env python3
"""Speed of the Charts page's data (nuboard.web.chartdata) and of the Console tab's rendering.

    python3 scripts/bench_chartdata.py                  # writes its runs to a temp folder
    python3 scripts/bench_chartdata.py --root /tmp/cdb  # keeps them there for the next time

Writes, with the real API, 12 runs of 100,000 steps and one run of 10,000,000 steps (about
20 s and 1 GB of disk), and a copy of each run folder without data.parquet (the logs hard
linked), so both sources are measured. Each figure is printed beside its target. "Cold" is
a new SeriesCache in this (already warm) process, so loading is included; the first cold
figure may include reading the files from disk when the OS dropped them from its cache.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nuboard as nb  # noqa: E402
from nuboard.files import layout  # noqa: E402
from nuboard.web.chartdata import SeriesCache, series_payload  # noqa: E402
from nuboard.web.console_text import read_console, render_console  # noqa: E402

QUIET = dict(system_metrics=False, capture_console=False, capture_env=False)


def make_runs(root: Path, runs: int, steps: int, points: int) -> dict:
    """Write the bench runs (or reuse those of an earlier call with the same sizes)."""
    marker = root / "bench.json"
    wanted = {"runs": runs, "steps": steps, "points": points}
    if marker.is_file():
        found = json.loads(marker.read_text())
        if found.get("sizes") == wanted:
            return found
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t = time.perf_counter()
    many = []
    for r in range(runs):
        with nb.init("many", dir=root, **QUIET) as run:
            add = run.add_scalar
            for i in range(steps):
                add("train/loss", 1.0 / (1 + i) + 0.01 * math.sin(i) + r, step=i)
                if i % 10 == 0:
                    add("train/lr", 1e-3 * (1 - i / steps), step=i)
        many.append(str(run.path))
    with nb.init("big", dir=root, **QUIET) as run:
        add = run.add_scalar
        spike = points * 43 // 100
        for i in range(points):
            add("train/loss", math.sin(i * 1e-4) + (50.0 if i == spike else 0.0), step=i)
        for i in range(0, points, 100):
            add("eval/acc", i / points, step=i)
    big = str(run.path)
    print(f"wrote the runs in {time.perf_counter() - t:.1f} s", flush=True)
    found = {"sizes": wanted, "many": many, "big": big,
             "many_logs": [logs_copy(Path(p), root / "logs-only") for p in many],
             "big_logs": logs_copy(Path(big), root / "logs-only")}
    marker.write_text(json.dumps(found))
    return found


def logs_copy(run_dir: Path, dest: Path) -> str:
    """The run folder again, without data.parquet; the logs hard linked (no bytes copied)."""
    out = dest / run_dir.name
    out.mkdir(parents=True)
    for _, _, log in layout.list_logs(run_dir):
        os.link(log, out / log.name)
    shutil.copy(run_dir / layout.RUN_JSON, out / layout.RUN_JSON)
    return str(out)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def report(label: str, times: list[float], target: float | None, note: str = "") -> None:
    best, mid, worst = min(times), statistics.median(times), max(times)
    spread = f"(min {best:.1f}, max {worst:.1f}, n={len(times)})" if len(times) > 1 else ""
    verdict = "" if target is None else ("ok  " if mid < target else "OVER")
    goal = "" if target is None else f"target < {target:g} ms"
    print(f"{label:58s} {mid:8.1f} ms  {goal:18s} {verdict} {spread} {note}".rstrip(), flush=True)


def bench_charts(data: dict, repeat: int) -> None:
    many, many_logs, big, big_logs = data["many"], data["many_logs"], data["big"], data["big_logs"]
    n_runs, steps, points = data["sizes"]["runs"], data["sizes"]["steps"], data["sizes"]["points"]

    def all_runs(cache, paths, live=False):
        body = [series_payload(cache, p, 0, "train/loss", live=live) for p in paths]
        return json.dumps(body, allow_nan=False)

    label = f"{n_runs} runs x {steps:,} steps"
    for source, paths in (("data.parquet", many), ("event logs", many_logs)):
        times = [timed(lambda: all_runs(SeriesCache(), paths)) for _ in range(repeat)]
        report(f"{label}, cold ({source})", times, 150, "(as close as can be)")
    cache = SeriesCache()
    all_runs(cache, many)
    report(f"{label}, warm", [timed(lambda: all_runs(cache, many)) for _ in range(5)], 150)
    size = len(all_runs(cache, many))
    sent = sum(p["sent"] for p in json.loads(all_runs(cache, many)))
    print(f"{'':58s} ({sent:,} points sent, {size / 1024:.0f} KB of JSON)")
    live = SeriesCache()
    all_runs(live, many_logs, live=True)
    report(f"{label}, live poll with nothing new (logs)",
           [timed(lambda: all_runs(live, many_logs, live=True)) for _ in range(5)], 150)

    def one(cache, path, **kw):
        return json.dumps(series_payload(cache, path, 0, "train/loss", **kw), allow_nan=False)

    label = f"1 run x {points:,} steps"
    for source, path in (("data.parquet", big), ("event logs", big_logs)):
        times = [timed(lambda: one(SeriesCache(), path)) for _ in range(repeat)]
        report(f"{label}, cold ({source})", times, 1500)
    cache = SeriesCache()
    payload = json.loads(one(cache, big))
    spike = points * 43 // 100
    kept = payload["x"][payload["y"].index(max(payload["y"]))] == spike
    print(f"{'':58s} ({payload['sent']:,} points sent; "
          f"the one-step spike kept at its step: {kept})")
    report(f"{label}, warm, whole range", [timed(lambda: one(cache, big)) for _ in range(5)], 150)
    for share in (0.1, 0.001):
        lo, hi = points * 0.4, points * (0.4 + share)
        report(f"{label}, warm, zoom to {share:.1%} of x",
               [timed(lambda: one(cache, big, lo=lo, hi=hi)) for _ in range(5)], 150)
    one(cache, big, x="relative")
    report(f"{label}, warm, relative time, whole range",
           [timed(lambda: one(cache, big, x="relative")) for _ in range(5)], 150)
    print(f"{'':58s} (cache holds {cache.points:,} points of 24 bytes)")
    bench_live(Path(data["big"]).parent.parent.parent)


def bench_live(root: Path, points: int = 1_000_000) -> None:
    """A running run: each poll after 1,000 more points were logged and flushed."""
    run = nb.init("live", dir=root, **QUIET)
    try:
        for i in range(points):
            run.add_scalar("train/loss", math.cos(i * 1e-3), step=i)
        run.flush()
        cache = SeriesCache()
        first = timed(lambda: series_payload(cache, run.path, 0, "train/loss", live=True))
        times = []
        for k in range(5):
            for i in range(points + k * 1000, points + (k + 1) * 1000):
                run.add_scalar("train/loss", math.cos(i * 1e-3), step=i)
            run.flush()
            times.append(timed(lambda: series_payload(cache, run.path, 0, "train/loss",
                                                      live=True)))
        report(f"live run of {points:,} points, first poll", [first], 1500)
        report(f"live run of {points:,} points, poll after 1,000 more", times, 150)
    finally:
        run.finish()
        shutil.rmtree(run.path, ignore_errors=True)


def tqdm_text(size: int, nested: bool = False, color: bool = False) -> str:
    """About `size` bytes of what tqdm writes: a bar redrawn with '\\r', a nested bar below."""
    parts, total, i = [], 0, 0
    while total < size:
        n = i % 1000
        bar = "\u2588" * (n // 50) + " " * (20 - n // 50)
        s = (f"train: {n // 10:3d}%|{bar}| {n}/1000 "
             f"[00:{n % 60:02d}<00:10, 95.3it/s, loss=0.{n:04d}]")
        s = f"\r\x1b[32m{s}\x1b[0m" if color else "\r" + s
        if nested:
            s += f"\n\r  batch {n % 7}/7\x1b[A"
        parts.append(s)
        total += len(s.encode())
        i += 1
        if n == 999:
            parts.append(f"\nepoch {i // 1000} done\n")
    return "".join(parts)


def bench_console(root: Path) -> None:
    two_mb = 2 * 1024 * 1024
    for what, kw in (("tqdm", {}), ("nested tqdm (cursor up)", {"nested": True}),
                     ("coloured tqdm", {"color": True})):
        text = tqdm_text(two_mb, **kw)
        report(f"console: render 2 MB of {what}", [timed(lambda: render_console(text))
                                                     for _ in range(5)], 100)
    lines = "".join(f"step {i:7d} loss {1 / (i + 1):.6f} lr 0.0003 grad_norm 1.25\n"
                    for i in range(40_000))
    report("console: render 2 MB of plain log lines",
           [timed(lambda: render_console(lines)) for _ in range(5)], 100)
    path = root / "output.log"
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(32):
            fh.write(tqdm_text(two_mb, nested=True))
    report("console: read_console, last 2 MB of a 64 MB log",
           [timed(lambda: read_console(path)) for _ in range(5)], 100)
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="where to write (and reuse) the bench runs")
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="cold measurements of each")
    parser.add_argument("--console-only", action="store_true")
    args = parser.parse_args()
    temp = None
    root = args.root
    if root is None:
        temp = tempfile.mkdtemp(prefix="nuboard-bench-chartdata-")
        root = Path(temp)
    try:
        print(f"bench_chartdata: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
        if not args.console_only:
            data = make_runs(root, args.runs, args.steps, args.points)
            series_payload(SeriesCache(), data["many"][0], 0, "train/lr")   # warm the process
            bench_charts(data, args.repeat)
        bench_console(root)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
