#!/usr/bin/env python3
"""Benchmark of logging: CPU per point, bytes per point, read-back rates, import time.

    python3 scripts/bench_logging.py [--scalars 10] [--steps 100000]

Each figure is printed beside its target.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ["flask", "sqlalchemy", "alembic", "pyarrow", "rich", "questionary", "psutil", "click",
         "numpy", "torch"]


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<52} {value:>16}   target {target:<22} {'ok' if ok else 'MISSED'}")


def log_once(root: Path, scalars: int, steps: int, as_dict: bool = False):
    """One run of steps x scalars points, by add_scalar or by run.log of a dict per step;
    (training-thread s, process s, run folder)."""
    import nuboard as nb
    names = [f"train/metric_{i}" for i in range(scalars)]
    cpu0 = time.process_time()
    run = nb.init("bench", dir=root, compact=False, capture_env=False, capture_console=False,
                  system_metrics=False)
    add, log, fromkeys = run.add_scalar, run.log, dict.fromkeys
    t_loop0 = time.thread_time()
    if as_dict:                  # the dict is built in the loop, as a script builds it
        for step in range(steps):
            log(fromkeys(names, step * 0.5), step)
    else:
        for step in range(steps):
            v = step * 0.5
            for name in names:
                add(name, v, step)
    t_loop = time.thread_time() - t_loop0
    run.finish()
    return t_loop, time.process_time() - cpu0, Path(run.path)


def bench_logging(root: Path, scalars: int, steps: int, repeats: int = 3) -> Path:
    results = sorted(log_once(root, scalars, steps) for _ in range(repeats))
    t_loop, cpu, path = results[len(results) // 2]           # the median run
    points = scalars * steps
    line(f"training thread CPU per add_scalar (median of {repeats})", f"{t_loop / points * 1e6:.3f} µs",
         "(part of the total)", True)
    line("CPU per point in total (with the writer)", f"{cpu / points * 1e6:.3f} µs", "< 1 µs",
         cpu / points < 1e-6)
    size = sum(p.stat().st_size for p in path.glob("events.*.log"))
    line("bytes per point on disk", f"{size / points:.2f} B", "<= 24 B", size / points <= 24)
    results = sorted(log_once(root, scalars, steps, as_dict=True) for _ in range(repeats))
    t_loop = results[len(results) // 2][0]
    line(f"training thread CPU per point, run.log of {scalars} scalars", f"{t_loop / points * 1e6:.3f} µs",
         "<= 0.35 µs", t_loop / points <= 0.35e-6)
    return path


def bench_reading(path: Path, points: int) -> None:
    import nuboard as nb
    from nuboard.eventlog.parquet import write_parquet
    from nuboard.eventlog.reader import RunReader
    best = min(_timed(lambda: _read_logs(RunReader, path)) for _ in range(3))
    line("read-back from the event logs", f"{points / best / 1e6:.1f} M pts/s", "(no target)", True)
    write_parquet(path)
    best = min(_timed(lambda: nb.read_scalars(path)) for _ in range(3))
    got = sum(len(s) for s in nb.read_scalars(path).values())
    assert got == points, (got, points)
    line("read-back from data.parquet", f"{points / best / 1e6:.1f} M pts/s", ">= 10 M pts/s",
         points / best >= 10e6)


def _read_logs(cls, path):
    r = cls(path)
    r.refresh()
    return r.scalars()


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_import() -> None:
    probe = ("import sys, json, time; t=time.perf_counter(); import nuboard; "
             "dt=time.perf_counter()-t; "
             f"print(json.dumps([dt, sorted(m for m in {HEAVY!r} if m in sys.modules)]))")
    times, heavy = [], []
    for _ in range(7):
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        dt, heavy = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(dt)
    times.sort()
    median = times[len(times) // 2]
    line("import nuboard (median of 7)", f"{median * 1000:.1f} ms", "< 50 ms", median < 0.05)
    line("heavy modules imported by it", ", ".join(heavy) or "none", "none", not heavy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalars", type=int, default=10)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
          f"{args.scalars} scalars x {args.steps} steps")
    with tempfile.TemporaryDirectory() as tmp:
        path = bench_logging(Path(tmp), args.scalars, args.steps)
        bench_reading(path, args.scalars * args.steps)
    bench_import()


if __name__ == "__main__":
    main()
