#!/usr/bin/env python3
"""Benchmark of the catalog: full rebuild, an incremental sync with nothing changed, a tag query.

    python3 scripts/bench_catalog.py [--runs 10000] [--scalars 20] [--steps 100] [--keep DIR]
                                     [--catalog URL]

One real run is written with the API (a config, tags, --scalars scalars of --steps points,
data.parquet at finish); its folder is then copied --runs times with a new run id, name,
tags and config patched into run.json. Each figure is printed beside its target.

The figures are measured on the project's SQLite catalog and then, with --catalog URL (by
default $NUBOARD_CATALOG_URL; --catalog '' for SQLite alone), on a PostgreSQL catalog
(postgresql+psycopg://user@host/database) over the same run folders, against the same targets.
The PostgreSQL catalog is a schema of its own, emptied before and dropped after the bench
(kept with --keep, and emptied at the next run).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = "bench"


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<52} {value:>16}   target {target:<22} {'ok' if ok else 'MISSED'}")


def write_template(root: Path, scalars: int, steps: int) -> Path:
    """One run written by the real API; its folder is the template of every copy."""
    import nuboard as nb
    names = [f"train/metric_{i:02d}" for i in range(scalars)]
    with nb.init("template", dir=root, config={"lr": 1e-3, "model": {"width": 512, "depth": 12},
                                               "optimizer": "adam", "seed": 0},
                 tags=["sweep"], system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        for step in range(steps):
            for k, name in enumerate(names):
                run.add_scalar(name, 1.0 / (1 + step) + k, step=step)
    return Path(run.path)


def copy_runs(template: Path, runs_dir: Path, count: int) -> None:
    """count copies of the template folder, each with its own id, name, tags and config."""
    doc = json.loads((template / "run.json").read_text())
    blobs = {p.name: p.read_bytes() for p in template.iterdir()
             if p.is_file() and p.name != "run.json"}
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
        doc["name"] = f"lr-{i}"
        doc["tags"] = ["baseline", "sweep"] if i % 10 == 0 else ["sweep", f"batch-{i % 7}"]
        doc["config"]["lr"] = 1e-4 * (1 + i % 50)
        doc["config"]["seed"] = i
        with open(folder / "run.json", "w") as fh:
            json.dump(doc, fh, indent=1)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--scalars", type=int, default=20)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--keep", type=Path, default=None,
                        help="build (or reuse) the runs under this folder and keep them")
    parser.add_argument("--catalog", metavar="URL", default=os.environ.get("NUBOARD_CATALOG_URL"),
                        help="also measure a PostgreSQL catalog at this URL, after SQLite "
                             "(default $NUBOARD_CATALOG_URL; '' for SQLite alone)")
    args = parser.parse_args()
    from nuboard.catalog import server

    args.catalog = server.catalog_url(args.catalog or "")
    backends = ["SQLite"] + (["PostgreSQL"] if args.catalog else [])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {args.runs} runs x "
          f"{args.scalars} scalars x {args.steps} steps; catalog on {' and '.join(backends)}")
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory()
        root = Path(tmp.name)
    else:
        root = args.keep
    try:
        run_bench(root, args)
    finally:
        if tmp is not None:
            tmp.cleanup()


def run_bench(root: Path, args) -> None:
    runs_dir = root / PROJECT / "runs"
    if not runs_dir.is_dir() or len(os.listdir(runs_dir)) != args.runs:
        shutil.rmtree(root / PROJECT, ignore_errors=True)
        t = time.perf_counter()
        template = write_template(root / "template", args.scalars, args.steps)
        copy_runs(template, runs_dir, args.runs)
        line("writing the runs (not a target)", f"{time.perf_counter() - t:.1f} s",
             "(no target)", True)
    # "" is SQLite whatever $NUBOARD_CATALOG_URL says; the server's URL is given explicitly
    bench_backend(root, args, "")
    if args.catalog:
        bench_backend(root, args, args.catalog)


def bench_backend(root: Path, args, url: str) -> None:
    """Every figure on one catalog: url '' for the project's SQLite file, else the server."""
    from nuboard.catalog import server

    if url:
        schema = server.schema_name(server.root_id(root), PROJECT)
        drop_schema(url, schema)            # left by an earlier run with --keep: start empty
    else:
        shutil.rmtree(root / PROJECT / ".nuboard", ignore_errors=True)
    try:
        measure(root, args, url)
    finally:
        if url:
            if args.keep is None:
                drop_schema(url, schema)
            server.dispose_engines()


def drop_schema(url: str, schema: str) -> None:
    """Drop the bench's own schema on the server (nothing when there is none)."""
    from sqlalchemy.exc import OperationalError

    from nuboard.catalog import server
    try:
        with server.server_engine(url).begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    except OperationalError as exc:
        raise server.unreachable(exc, url) from None


def measure(root: Path, args, url: str) -> None:
    from sqlalchemy import select

    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    from nuboard.catalog.tables import runs, tags

    t = time.perf_counter()
    catalog = Catalog(root, PROJECT, url=url)
    opened = time.perf_counter() - t
    assert catalog.on_server == bool(url), (url, catalog.where)
    print(f"-- {'PostgreSQL' if catalog.on_server else 'SQLite'}: {catalog.where}")
    line("open a new catalog (migrate to head)", f"{opened * 1000:.0f} ms", "(no target)", True)
    t = time.perf_counter()
    report = sync(catalog, full=True)
    full = time.perf_counter() - t
    assert report.added == args.runs and not report.skipped, report
    line(f"full rebuild of {args.runs} runs", f"{full:.2f} s", "< 20 s", full < 20)

    def incremental():
        r = sync(catalog)
        assert r.unchanged == args.runs and not (r.added or r.updated or r.removed), r

    inc = median_time(incremental, 5)
    line("incremental sync, nothing changed (median of 5)", f"{inc * 1000:.0f} ms", "< 300 ms",
         inc < 0.3)

    query = (select(runs.c.run_id, runs.c.name).join(tags, tags.c.run == runs.c.id)
             .where(runs.c.project_id == catalog.project_id, tags.c.tag == "baseline")
             .order_by(runs.c.created.desc()))
    found = []

    def tag_query():
        with catalog.reader.connect() as conn:
            found[:] = conn.execute(query).all()

    q = median_time(tag_query, 21)
    assert len(found) == (args.runs + 9) // 10, len(found)
    line(f"query tag:baseline over {args.runs} runs (median of 21)", f"{q * 1000:.1f} ms",
         "< 20 ms", q < 0.02)
    reopen = median_time(lambda: Catalog(root, PROJECT, url=url).close(), 5)
    line("open an existing catalog (median of 5)", f"{reopen * 1000:.0f} ms", "(no target)", True)
    catalog.close()


if __name__ == "__main__":
    main()
