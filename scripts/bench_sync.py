#!/usr/bin/env python3
"""Benchmark of `nuboard sync`: N small runs pushed to and pulled from a local S3 server.

    python3 scripts/bench_sync.py [--runs 1000] [--keep DIR]

Starts its own moto S3 server (tests/helpers_s3.py, the one the tests use), writes a few real
runs with nb.init (scalars, an image) and copies them into N run folders, then measures:
push (runs/s, MB/s, requests per run), a second push (writes: 0), pull into a fresh folder, a
second pull (object reads: 0), and beside them a plain copy of the same folder with the same
client: fsspec's recursive put and get (and the AWS CLI's `s3 sync`, twice, where installed).
Each figure is printed beside its target. moto answers every request in Python on this
machine, so the absolute rates are the server's more than NuBoard's: the targets compare
NuBoard with the plain copy on the same server.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
TEMPLATES = 5


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<52} {value:>16}   target {target:<26} {'ok' if ok else 'MISSED'}", flush=True)


def make_runs(root: Path, count: int) -> int:
    """`count` finished runs under root/bench/runs: TEMPLATES real ones copied; their bytes."""
    import numpy as np

    import nuboard as nb
    quiet = dict(system_metrics=False, capture_console=False, capture_env=False)
    templates = []
    scratch = root.parent / "templates"
    for i in range(TEMPLATES):
        with nb.init("bench", dir=scratch, run_name=f"t{i}", **quiet) as run:
            for step in range(200):
                run.log({"train/loss": 1.0 / (step + 1), "train/acc": step / 200}, step=step)
            run.log({"sample": nb.Image(np.full((32, 32, 3), i * 40, dtype="uint8"))}, step=10)
        templates.append(run.folder)
    runs = root / "bench" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    total = 0
    for n in range(count):
        source = templates[n % TEMPLATES]
        run_id = f"20261207T0000-{n:08x}"
        target = runs / run_id
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".*"))
        doc = json.loads((target / "run.json").read_text())
        doc["id"] = run_id
        doc["start_time"] = f"2026-12-07T00:00:{n % 60:02d}.{n % 1000:03d}Z"
        (target / "run.json").write_text(json.dumps(doc, indent=1))
        total += sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    shutil.rmtree(scratch)
    return total


class Counter:
    """Requests sent by the S3 clients that count_store hooked (botocore's before-send event,
    once per HTTP request, retries included): counted by the client, since moto's recorder
    tangles its lines when requests come in parallel."""

    def __init__(self) -> None:
        self.requests = 0
        self.writes = 0

    def hook(self, request=None, **_kw) -> None:
        self.requests += 1
        if request is not None and request.method not in ("GET", "HEAD"):
            self.writes += 1


COUNTER = Counter()


def count_store(store):
    """The store, its client's requests counted in COUNTER."""
    import fsspec.asyn
    client = fsspec.asyn.sync(store.fs.loop, store.fs.set_session)
    client.meta.events.register("before-send.s3", COUNTER.hook)
    return store


def counted(work):
    """(seconds, result, requests, writes) of work()."""
    COUNTER.requests = COUNTER.writes = 0
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result, COUNTER.requests, COUNTER.writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="make the runs under this folder and keep them")
    args = parser.parse_args()
    from helpers_s3 import S3Server

    import nuboard.sync.work as sync_work
    from nuboard.remote.store import open_store
    from nuboard.sync import pull, push

    opened = sync_work.open_store
    sync_work.open_store = lambda url, **kw: count_store(opened(url, **kw))     # each push's client

    tmp = tempfile.TemporaryDirectory() if args.keep is None else None
    base = Path(tmp.name) if tmp is not None else args.keep
    root = base / "node1"
    try:
        if (root / "bench" / "runs").is_dir() and len(os.listdir(root / "bench" / "runs")) == args.runs:
            size = sum(p.stat().st_size for p in (root / "bench").rglob("*") if p.is_file())
        else:
            shutil.rmtree(root, ignore_errors=True)
            start = time.perf_counter()
            size = make_runs(root, args.runs)
            line("writing the runs (not a target)", f"{time.perf_counter() - start:.1f} s", "(no target)", True)
        shutil.rmtree(root / ".nuboard-sync", ignore_errors=True)
        files = sum(1 for p in (root / "bench").rglob("*") if p.is_file() and not p.name.startswith("."))
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {args.runs:,} runs, "
              f"{files:,} files, {size / 1e6:.1f} MB; moto's S3 server on this machine")
        n = args.runs
        # one PUT or GET per file, one listing page per 1,000 objects, and the two requests in
        # which s3fs finds that a prefix with nothing under it is no object either
        allowed = files + _pages(files) + 2
        with S3Server() as server:
            os.environ.update(server.env)
            url = server.bucket() + "/exp"

            took, summary, requests, writes = counted(lambda: push(url, root))
            plain_url = server.bucket() + "/plain"
            store = count_store(open_store(plain_url))
            plain_put, _, plain_requests, _ = counted(
                lambda: store.fs.put(str(root / "bench"), store.key("bench"), recursive=True))
            line("push: runs per second", f"{n / took:,.0f} runs/s",
                 f">= plain put's ({n / plain_put:,.0f})/2", n / took >= n / plain_put / 2)
            line("push: MB per second", f"{size / 1e6 / took:.1f} MB/s", "(beside plain put)", True)
            line("  plain fsspec put of the same folder", f"{plain_put:.1f} s",
                 f"({plain_requests / n:.1f} requests/run)", True)
            line("push: requests per run", f"{requests / n:.2f}",
                 f"<= (files + listing) / run ({allowed / n:.2f})", requests <= allowed)
            line("push: files sent", f"{summary.files:,}", f"= {files:,}", summary.files == files)

            took2, summary2, requests2, writes2 = counted(lambda: push(url, root))
            line("second push: write requests", f"{writes2}", "0", writes2 == 0)
            line("second push: requests (listing pages)", f"{requests2}",
                 f"<= {_pages(files)}", requests2 <= _pages(files))
            line("second push: time", f"{took2:.2f} s", "< 10 s", took2 < 10)

            mirror = base / "node2"
            shutil.rmtree(mirror, ignore_errors=True)
            took3, summary3, requests3, _ = counted(lambda: pull(url, mirror))
            plain_dir = base / "plain-get"
            shutil.rmtree(plain_dir, ignore_errors=True)
            plain_get, _, plain_get_requests, _ = counted(
                lambda: store.fs.get(store.key("bench"), str(plain_dir), recursive=True))
            line("pull: runs per second", f"{n / took3:,.0f} runs/s",
                 f">= plain get's ({n / plain_get:,.0f})/2", n / took3 >= n / plain_get / 2)
            line("pull: MB per second", f"{size / 1e6 / took3:.1f} MB/s", "(beside plain get)", True)
            line("  plain fsspec get of the same folder", f"{plain_get:.1f} s",
                 f"({plain_get_requests / n:.1f} requests/run)", True)
            line("pull: requests per run", f"{requests3 / n:.2f}",
                 f"<= (files + listing) / run ({allowed / n:.2f})", requests3 <= allowed)
            line("pull: runs fetched", f"{summary3.runs:,}", f"= {n:,}", summary3.runs == n)

            took4, summary4, requests4, _ = counted(lambda: pull(url, mirror))
            line("second pull: objects read", f"{summary4.files}", "0", summary4.files == 0)
            line("second pull: requests (listing pages)", f"{requests4}", f"<= {_pages(files)}",
                 requests4 <= _pages(files))
            line("second pull: time", f"{took4:.2f} s", "< 10 s", took4 < 10)
            _aws(server, root, n)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _pages(objects: int) -> int:
    """Listing requests for that many objects (1,000 a page)."""
    return max(1, -(-objects // 1000))


def _aws(server, root: Path, n: int) -> None:
    """The AWS CLI's `s3 sync` of the same folder, twice, where it is installed."""
    if shutil.which("aws") is None:
        print("(the AWS CLI is not installed: no `aws s3 sync` figures)")
        return
    url = server.bucket() + "/aws"
    command = ["aws", "s3", "sync", str(root / "bench"), url + "/bench", "--only-show-errors",
               "--endpoint-url", server.endpoint]
    for label in ("aws s3 sync", "  a second aws s3 sync"):
        start = time.perf_counter()
        done = subprocess.run(command, env=dict(os.environ), capture_output=True, text=True)
        took = time.perf_counter() - start
        if done.returncode != 0:
            print(f"(aws s3 sync failed: {done.stderr.strip()[:200]})")
            return
        line(label, f"{took:.1f} s", f"({n / took:,.0f} runs/s)", True)


if __name__ == "__main__":
    main()
