#!/usr/bin/env python3
"""Benchmark of results as tables: nb.history of 10 M points, nb.runs of 10,000 runs, and a
TensorBoard import of 1 M points.

    python3 scripts/bench_tables.py [--quick] [--keep DIR] [--repeat 5] [--only history|runs|import]

It writes, under a temporary folder (or --keep DIR, reused by the next run of the bench):
`bench-history`, one run written by the real API (10 scalars x 10,000 steps, data.parquet at
finish) copied into 100 runs with their own ids; `bench-runs`, one run (a nested config, 10
scalars x 20 steps, tags) copied into 10,000 runs with their own id, name, start, tags and
config; and a TensorBoard event file of 1 M points (10 scalars x 100,000 steps) written by
tensorboardX's (else torch's) SummaryWriter, kept in the folder as tensorboard-<points>/.

Figures: nb.history of every run and scalar in points a second (median of --repeat calls on
a synced catalog: each call still syncs, finding nothing changed, and reads every
data.parquet); nb.runs(...).to_arrow() of 10,000 runs (median of --repeat, each with its
incremental sync; the first call, which indexes every run, is shown apart and is no target);
nuboard.importers.tensorboard of the 1 M-point file into a new project ("skipped" while the
importer does not exist). --quick divides the sizes by 10 (1 M points, 1,000 runs, 100,000
TensorBoard points): a smoke test, not comparable with the targets. Each figure is printed
beside its target; a missed target says MISSED and the exit code stays 0.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HISTORY, RUNS, IMPORTED = "bench-history", "bench-runs", "bench-imported"
SCALARS = 10
QUIET = dict(system_metrics=False, capture_console=False, capture_env=False)


def line(label: str, value: str, target: str, ok: bool | None) -> None:
    verdict = "" if ok is None else "ok" if ok else "MISSED"
    print(f"{label:<58} {value:>16}   target {target:<14} {verdict}", flush=True)


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def median_time(fn, repeat: int) -> float:
    return statistics.median(timed(fn)[0] for _ in range(repeat))


# -- the data -------------------------------------------------------------------------------

def write_template(scratch: Path, project: str, steps: int, **init) -> Path:
    """One run written by the real API: SCALARS scalars of `steps` steps; its folder."""
    import nuboard as nb
    names = [f"train/metric_{i:02d}" for i in range(SCALARS)]
    with nb.init(project, dir=scratch, **QUIET, **init) as run:
        add = run.add_scalar
        for step in range(steps):
            for k, name in enumerate(names):
                add(name, 1.0 / (1 + step) + k, step=step)
    return Path(run.path)


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def copy_runs(template: Path, runs_dir: Path, count: int, patch) -> None:
    """count copies of the template folder, each with its own id; patch(doc, i) edits run.json."""
    doc = json.loads((template / "run.json").read_text())
    blobs = {p.name: p.read_bytes() for p in template.iterdir()
             if p.is_file() and p.name != "run.json" and not p.name.startswith(".")}
    stamp = doc["id"].split("-")[0]
    runs_dir.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        run_id = f"{stamp}-{i:08x}"
        folder = runs_dir / run_id
        folder.mkdir()
        for name, data in blobs.items():
            with open(folder / name, "wb") as fh:
                fh.write(data)
        doc["id"] = run_id
        patch(doc, i)
        with open(folder / "run.json", "w") as fh:
            json.dump(doc, fh, indent=1)


def patch_sweep(doc: dict, i: int) -> None:
    began = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=7 * i)
    doc["name"] = f"lr-{i}"
    doc["start_time"] = _stamp(began)
    doc["end_time"] = _stamp(began + dt.timedelta(minutes=5, seconds=i % 60))
    doc["tags"] = ["baseline", "sweep"] if i % 10 == 0 else ["sweep", f"batch-{i % 7}"]
    doc["config"]["optimizer"]["lr"] = 1e-4 * (1 + i % 50)
    doc["config"]["seed"] = i
    doc["config"]["batch_size"] = 32 << (i % 4)


def make_project(root: Path, project: str, count: int, steps: int, patch, **init) -> None:
    """`count` copies of a template run in `project`, unless the folder holds them already."""
    runs_dir = root / project / "runs"
    if runs_dir.is_dir() and len(os.listdir(runs_dir)) == count:
        return
    shutil.rmtree(root / project, ignore_errors=True)
    scratch = root / "template"
    shutil.rmtree(scratch, ignore_errors=True)
    took, _ = timed(lambda: copy_runs(write_template(scratch, "template", steps, **init), runs_dir,
                                      count, patch))
    shutil.rmtree(scratch, ignore_errors=True)
    line(f"setup: writing {count:,} runs of {project}", f"{took:.1f} s", "(none)", None)


def tensorboard_logdir(root: Path, points: int) -> Path:
    """A folder with one TensorBoard event file of `points` points (SCALARS scalars), cached."""
    logdir = root / f"tensorboard-{points}"
    done = logdir / "complete"
    if done.exists():
        return logdir
    shutil.rmtree(logdir, ignore_errors=True)
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        from torch.utils.tensorboard import SummaryWriter  # type: ignore[no-redef]
    t = time.perf_counter()
    writer = SummaryWriter(str(logdir), max_queue=10_000, flush_secs=600)
    names = [f"train/metric_{i:02d}" for i in range(SCALARS)]
    for step in range(points // SCALARS):
        for k, name in enumerate(names):
            writer.add_scalar(name, 1.0 / (1 + step) + k, step)
    writer.close()
    done.touch()
    line(f"setup: writing {points:,} TensorBoard points", f"{time.perf_counter() - t:.1f} s",
         "(none)", None)
    return logdir


# -- the figures ----------------------------------------------------------------------------

def bench_history(root: Path, runs: int, steps: int, repeat: int, quick: bool) -> None:
    import nuboard as nb
    make_project(root, HISTORY, runs, steps, lambda doc, i: doc.update(name=f"copy-{i}"),
                 config={"lr": 1e-3})
    points = runs * SCALARS * steps
    first, table = timed(lambda: nb.history(HISTORY, dir=root))
    assert table.num_rows == points, (table.num_rows, points)
    line(f"nb.history, first call (indexes {runs} runs; no target)", f"{first:.2f} s", "(none)", None)
    took = median_time(lambda: nb.history(HISTORY, dir=root), repeat)
    rate = points / took
    line(f"nb.history of {runs} runs x {SCALARS} x {steps:,} (median of {repeat})",
         f"{rate / 1e6:.1f} M pts/s", ">= 10 M pts/s", None if quick else rate >= 10e6)
    line(f"  its time for {points / 1e6:g} M points", f"{took:.3f} s", "(none)", None)
    took = median_time(lambda: nb.history(HISTORY, keys=["train/metric_0*"], dir=root), repeat)
    line("  keys=['train/metric_0*'] (every key by a glob)", f"{points / took / 1e6:.1f} M pts/s",
         "(none)", None)
    took = median_time(lambda: nb.history(HISTORY, keys=["train/metric_03"], dir=root), repeat)
    line("  keys=['train/metric_03'] (one key in ten)", f"{points / 10 / took / 1e6:.1f} M pts/s",
         "(none)", None)


def bench_runs(root: Path, runs: int, repeat: int, quick: bool) -> None:
    import nuboard as nb
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    from nuboard.catalog.table_reads import run_table_rows
    from nuboard.tables.run_columns import build_columns

    config = {"optimizer": {"name": "adam", "lr": 1e-3, "betas": [0.9, 0.999]}, "seed": 0,
              "batch_size": 64, "model": {"width": 512, "depth": 12}}
    make_project(root, RUNS, runs, 20, patch_sweep, config=config, tags=["sweep"])
    shutil.rmtree(root / RUNS / ".nuboard", ignore_errors=True)
    first, records = timed(lambda: nb.runs(RUNS, dir=root).to_arrow())
    assert records.num_rows == runs, records.num_rows
    line(f"nb.runs, first call: indexes {runs:,} runs (no target)", f"{first:.2f} s", "(none)", None)
    took = median_time(lambda: nb.runs(RUNS, dir=root).to_arrow(), repeat)
    line(f"nb.runs of {runs:,} runs, synced, .to_arrow() (median of {repeat})", f"{took * 1000:.0f} ms",
         "< 500 ms", None if quick else took < 0.5)
    with Catalog(root, RUNS) as catalog:
        line("  of which: the sync, nothing changed", f"{median_time(lambda: sync(catalog), repeat) * 1000:.0f} ms",
             "(none)", None)
        now = time.time()
        read = median_time(lambda: run_table_rows(catalog, None, now=now), repeat)
        line("  of which: reading the catalog's rows", f"{read * 1000:.0f} ms", "(none)", None)
        rows = run_table_rows(catalog, None, now=now)
        built = median_time(lambda: build_columns(rows, RUNS, now), repeat)
        line(f"  of which: building the table ({records.num_columns} columns)", f"{built * 1000:.0f} ms",
             "(none)", None)
    took = median_time(lambda: nb.runs(RUNS, query="tag:baseline", dir=root).to_arrow(), repeat)
    line(f"nb.runs, query tag:baseline ({(runs + 9) // 10:,} runs; median of {repeat})",
         f"{took * 1000:.0f} ms", "(none)", None)


def bench_import(root: Path, points: int, quick: bool) -> None:
    label = f"import a TensorBoard log of {points:,} points"
    importer = getattr(importlib.import_module("nuboard.importers"), "tensorboard", None)
    if importer is None or importlib.util.find_spec("nuboard.importers.from_tensorboard") is None:
        line(label, "skipped: importer not built yet", "< 20 s", None)
        return
    logdir = tensorboard_logdir(root, points)
    shutil.rmtree(root / IMPORTED, ignore_errors=True)
    from nuboard.errors import MissingExtraError
    try:
        took, result = timed(lambda: importer(str(logdir), IMPORTED, dir=root))
    except MissingExtraError as exc:
        line(label, "skipped", "< 20 s", None)
        print(f"  {exc}")
        return
    import nuboard as nb
    imported = nb.history(IMPORTED, dir=root).num_rows
    assert imported == points, (imported, points)
    line(label, f"{took:.1f} s", "< 20 s", None if quick else took < 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes (no verdicts)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build (or reuse) the data under this folder and keep it")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("history", "runs", "import"))
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    history_runs, steps, runs, tb_points = 100 // scale, 10_000, 10_000 // scale, 1_000_000 // scale
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
          f"{'; --quick: a tenth of the sizes, no verdicts' if args.quick else ''}", flush=True)
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="nuboard-bench-tables-")
        root = Path(tmp.name)
    else:
        root = args.keep
        root.mkdir(parents=True, exist_ok=True)
    try:
        if args.only in (None, "history"):
            bench_history(root, history_runs, steps, args.repeat, args.quick)
        if args.only in (None, "runs"):
            bench_runs(root, runs, args.repeat, args.quick)
        if args.only in (None, "import"):
            bench_import(root, tb_points, args.quick)
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
