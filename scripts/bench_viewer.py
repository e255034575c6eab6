#!/usr/bin/env python3
"""Benchmark of the viewer: a Runs page of 10,000 runs, charts of 12 x 100,000 and 10 M points.

    python3 scripts/bench_viewer.py [--runs 10000] [--steps 100000] [--big 10000000]
                                    [--group-points 10000] [--repeat 9] [--keep DIR]
                                    [--no-browser] [--only grouping]

It writes three projects with the real API: `bench-runs` (one run copied --runs times with
its id, name, start, tags and config patched into run.json), `bench-charts` (12 runs of
--steps steps of train/loss, train/accuracy and, every 100 steps, val/loss) and `bench-big`
(one run of --big points of train/loss with data.parquet, and a copy of it without, so the
second is read from the event logs), and `bench-groups` (50 runs of 20% to 100% of
--group-points points of train/loss, five values of config lr, ten runs each). Then it starts
`nuboard up DIR --port 0` and times real HTTP requests over one keep-alive connection: the first
request of a URL (cold) and the median of --repeat after it (the Scatter page among them: 2,000
of bench-runs' runs, seed<2000). Last, unless --no-browser, Chromium
(Playwright, /usr/bin/chromium) opens the Charts page of the 12 runs on a fresh server and times
navigation to every chart of the first screen drawn. --only grouping writes and times the
grouping figure alone (the chart data of the 50 runs grouped by config.lr into 5 lines). Each
figure is printed beside its target; a missed target says MISSED and the exit code stays 0
(non-zero only on an error).
"""
from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

RUNS, CHARTS, BIG, GROUPS = "bench-runs", "bench-charts", "bench-big", "bench-groups"
GROUP_RUNS, GROUP_LINES = 50, 5
SCATTER_RUNS = 2000
CHART_RUNS = 12
CHART_SCALARS = ("train/loss", "train/accuracy", "val/loss")
TEMPLATE_SCALARS, TEMPLATE_STEPS = 20, 100
MAX_BODY = 2 * 1024 * 1024
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
MARKER = "bench_viewer.json"          # what --keep DIR holds, so a second run can reuse it


class BenchError(RuntimeError):
    """Something went wrong (not a missed target): the bench exits non-zero."""


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<56} {value:>16}   target {target:<22} {'ok' if ok else 'MISSED'}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def size(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


# -- generating the data -------------------------------------------------------------------

def write_template(scratch: Path) -> Path:
    """One run written by the real API: the template of every run of `bench-runs`."""
    import nuboard as nb
    names = [f"train/metric_{i:02d}" for i in range(TEMPLATE_SCALARS)]
    with nb.init("template", dir=scratch, run_name="template",
                 config={"lr": 1e-3, "batch_size": 64, "optimizer": "adam", "seed": 0,
                         "model": {"width": 512, "depth": 12}},
                 tags=["sweep"], system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        for step in range(TEMPLATE_STEPS):
            for k, name in enumerate(names):
                run.add_scalar(name, 1.0 / (1 + step) + k, step=step)
    return Path(run.path)


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def copy_runs(template: Path, runs_dir: Path, count: int) -> None:
    """count copies of the template folder, each with its own id, name, start, tags and config."""
    doc = json.loads((template / "run.json").read_text())
    blobs = {p.name: p.read_bytes() for p in template.iterdir()
             if p.is_file() and p.name != "run.json" and not p.name.startswith(".")}
    stamp = doc["id"].split("-")[0]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    runs_dir.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        run_id = f"{stamp}-{i:08x}"
        folder = runs_dir / run_id
        folder.mkdir()
        for name, data in blobs.items():
            with open(folder / name, "wb") as fh:
                fh.write(data)
        began = start + dt.timedelta(minutes=7 * i)
        doc["id"] = run_id
        doc["project"] = RUNS
        doc["name"] = f"lr-{i}"
        doc["start_time"] = _stamp(began)
        doc["end_time"] = _stamp(began + dt.timedelta(minutes=5, seconds=i % 60))
        for session in doc.get("sessions") or []:
            session["start_time"] = doc["start_time"]
        doc["tags"] = ["baseline", "sweep"] if i % 10 == 0 else ["sweep", f"batch-{i % 7}"]
        doc["config"]["lr"] = 1e-4 * (1 + i % 50)
        doc["config"]["seed"] = i
        doc["config"]["batch_size"] = 32 << (i % 4)
        with open(folder / "run.json", "w") as fh:
            json.dump(doc, fh, indent=1)


def write_chart_runs(root: Path, steps: int) -> list[str]:
    """CHART_RUNS runs of `steps` steps, each its own curve; their ids in order."""
    import nuboard as nb
    ids = []
    for r in range(CHART_RUNS):
        rnd = random.Random(r).random
        height, tau, floor = 2.0 + 0.25 * r, steps / (8 + r), 0.1 + 0.02 * r
        with nb.init(CHARTS, dir=root, run_name=f"curve-{r:02d}",
                     config={"lr": 1e-3 * (r + 1), "seed": r}, tags=["charts"],
                     system_metrics=False, capture_console=False, capture_env=False) as run:
            add = run.add_scalar
            for step in range(steps):
                loss = floor + height * math.exp(-step / tau) + 0.05 * rnd()
                add("train/loss", loss, step)
                add("train/accuracy", 1.0 - loss / (height + floor + 0.05), step)
                if step % 100 == 0:
                    add("val/loss", loss + 0.05, step)
        ids.append(run.id)
    return ids


def write_big_run(root: Path, points: int) -> tuple[str, float, float]:
    """One run of `points` points of train/loss; (its id, loop seconds, finish seconds)."""
    import nuboard as nb
    rnd = random.Random(7).random
    run = nb.init(BIG, dir=root, run_name="big-parquet", config={"lr": 3e-4}, tags=["big"],
                  system_metrics=False, capture_console=False, capture_env=False)
    add = run.add_scalar
    t = time.perf_counter()
    for step in range(points):
        add("train/loss", 0.2 + 3.0 / (1.0 + step * 1e-5) + 0.05 * rnd(), step)
    loop = time.perf_counter() - t
    t = time.perf_counter()
    run.finish()
    return run.id, loop, time.perf_counter() - t


def copy_without_parquet(folder: Path) -> str:
    """A copy of the big run, with a new id and no data.parquet: read from its event logs."""
    doc = json.loads((folder / "run.json").read_text())
    run_id = doc["id"].rsplit("-", 1)[0] + "-" + ("0" * 8 if not doc["id"].endswith("0" * 8)
                                                   else "1" * 8)
    target = folder.parent / run_id
    target.mkdir()
    for p in folder.iterdir():
        if p.is_file() and p.name not in ("run.json", "data.parquet", ".run.json.lock"):
            shutil.copyfile(p, target / p.name)
    doc["id"], doc["name"] = run_id, "big-logs"
    with open(target / "run.json", "w") as fh:
        json.dump(doc, fh, indent=1)
    return run_id


def write_group_runs(root: Path, points: int) -> list[str]:
    """GROUP_RUNS runs of 20% to 100% of `points` steps of train/loss, config lr one of
    GROUP_LINES values (GROUP_RUNS / GROUP_LINES runs each); their ids in order."""
    import nuboard as nb
    ids = []
    for r in range(GROUP_RUNS):
        rnd = random.Random(100 + r).random
        lr = 1e-4 * 3 ** (r % GROUP_LINES)
        steps = max(1, round(points * (0.2 + 0.8 * r / max(1, GROUP_RUNS - 1))))
        with nb.init(GROUPS, dir=root, run_name=f"seed-{r:02d}", config={"lr": lr, "seed": r},
                     tags=["groups"], system_metrics=False, capture_console=False,
                     capture_env=False) as run:
            add = run.add_scalar
            for step in range(steps):
                add("train/loss", 0.1 + 2.0 * math.exp(-step * lr / 10) + 0.1 * rnd(), step)
        ids.append(run.id)
    return ids


def generate_groups(root: Path, args) -> list[str]:
    """The `bench-groups` project written anew; its run ids."""
    shutil.rmtree(root / GROUPS, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    ids = write_group_runs(root, args.group_points)
    line(f"generate: {GROUP_RUNS} runs x up to {args.group_points:,} points for grouping",
         f"{time.perf_counter() - t:.1f} s", "(no target)", True)
    return ids


def generate(root: Path, args) -> dict:
    """Write the four projects under root (or reuse them); the ids the bench asks for."""
    if args.only == "grouping":
        return {"groups": generate_groups(root, args)}
    wanted = {"runs": args.runs, "steps": args.steps, "big": args.big,
              "group_points": args.group_points, "format": 2}
    marker = root / MARKER
    if marker.is_file():
        known = json.loads(marker.read_text())
        if {k: known.get(k) for k in wanted} == wanted and all(
                (root / p / "runs").is_dir() for p in (RUNS, CHARTS, BIG, GROUPS)):
            print(f"reusing the projects under {str(root)!r} (written by an earlier run)")
            return known
        marker.unlink()
    for project in (RUNS, CHARTS, BIG):
        shutil.rmtree(root / project, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    scratch = root.parent / (root.name + "-template")
    shutil.rmtree(scratch, ignore_errors=True)
    t0 = t = time.perf_counter()
    try:
        copy_runs(write_template(scratch), root / RUNS / "runs", args.runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    line(f"generate: {args.runs:,} runs (one written, copied)", f"{time.perf_counter() - t:.1f} s",
         "(no target)", True)
    t = time.perf_counter()
    chart_ids = write_chart_runs(root, args.steps)
    line(f"generate: {CHART_RUNS} runs x {args.steps:,} steps x {len(CHART_SCALARS)} scalars",
         f"{time.perf_counter() - t:.1f} s", "(no target)", True)
    big_id, loop, finish = write_big_run(root, args.big)
    line(f"generate: {args.big:,} points with add_scalar", f"{loop:.1f} s", "(no target)", True)
    line("generate: its finish (flush, data.parquet)", f"{finish:.1f} s", "(no target)", True)
    t = time.perf_counter()
    logs_id = copy_without_parquet(root / BIG / "runs" / big_id)
    line("generate: a copy of it without data.parquet", f"{time.perf_counter() - t:.1f} s",
         "(no target)", True)
    group_ids = generate_groups(root, args)
    line("generate: in all", f"{time.perf_counter() - t0:.1f} s", "(no target)", True)
    known = dict(wanted, charts=chart_ids, big_parquet=big_id, big_logs=logs_id,
                 groups=group_ids)
    marker.write_text(json.dumps(known, indent=1))
    return known


def forget_catalogs(root: Path) -> None:
    """Remove each project's catalog, so the first open builds it as a new user's would."""
    from nuboard.catalog.engine import catalog_path
    for project in (RUNS, CHARTS, BIG, GROUPS):
        if not (root / project).is_dir():
            continue
        path, _why = catalog_path(root / project)
        if path.parent == root / project / ".nuboard":
            shutil.rmtree(path.parent, ignore_errors=True)
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)


# -- the server and an HTTP client -----------------------------------------------------------

class Server:
    """`nuboard up ROOT --port 0` in a child process; stopped with SIGINT like Ctrl-C."""

    def __init__(self, root: Path, log: Path):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.log = log
        self._err = open(log, "ab")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                                      "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, env=env)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        try:
            first = self._lines.get(timeout=60)
        except queue.Empty:
            self.stop()
            raise BenchError(f"nuboard up printed nothing in 60 s; see {self.tail()}") from None
        found = re.search(r" at http://([^:/\s]+):(\d+)/", first or "")
        if not found:
            self.stop()
            raise BenchError(f"nuboard up's first line names no URL: {first!r}; {self.tail()}")
        self.host, self.port = found.group(1), int(found.group(2))

    def _drain(self) -> None:
        for text in self.proc.stdout:
            self._lines.put(text)
        self._lines.put(None)

    def tail(self) -> str:
        if not self._err.closed:
            self._err.flush()
        return "stderr: " + self.log.read_text(errors="replace")[-2000:]

    def wait_ready(self, client: "Client") -> float:
        """Seconds from the start of the process to its first answer."""
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/api/projects")
                return time.perf_counter() - self.started
            except (OSError, http.client.HTTPException):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise BenchError(f"nuboard up does not answer; {self.tail()}") from None
                client.reset()
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()


class Client:
    """GET over one keep-alive HTTP/1.1 connection; remembers the largest body it read."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.conn: http.client.HTTPConnection | None = None
        self.largest = (0, "")

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def get(self, path: str) -> tuple[float, bytes]:
        """(seconds from sending the request to the last byte of the body, the body)."""
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
            try:
                t = time.perf_counter()
                self.conn.request("GET", path)
                resp = self.conn.getresponse()
                body = resp.read()
                seconds = time.perf_counter() - t
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.reset()                       # an idle keep-alive connection was closed
                if attempt == 2:
                    raise
                continue
            if resp.will_close:
                self.reset()
            if resp.status != 200:
                raise BenchError(f"GET {path} answered {resp.status}: {body[:300]!r}")
            if len(body) > self.largest[0]:
                self.largest = (len(body), path)
            return seconds, body
        raise AssertionError("unreachable")

    def timed(self, path: str, repeat: int) -> tuple[float, float, bytes]:
        """(the first request's seconds, the median of `repeat` more, the last body)."""
        first, body = self.get(path)
        times = []
        for _ in range(repeat):
            seconds, body = self.get(path)
            times.append(seconds)
        return first, statistics.median(times), body


def chart_url(project: str, name: str, runs: list[str], buckets: int = 1000, **extra) -> str:
    params = {"name": name, "runs": ",".join(runs), "rank": "0", "x": "step",
              "buckets": str(buckets), **{k: str(v) for k, v in extra.items()}}
    return f"/api/p/{project}/.chart?" + urlencode(params, quote_via=quote, safe=",/")


def check_series(body: bytes, runs: int, total: int, what: str) -> dict:
    """The chart payload, checked: one series per run, each with every point counted."""
    doc = json.loads(body)
    got = doc.get("series") or []
    if len(got) != runs or any(s.get("total") != total for s in got):
        raise BenchError(f"{what}: expected {runs} series of {total} points, got "
                         f"{[(s.get('run'), s.get('total')) for s in got]}")
    return doc


def sent(doc: dict) -> int:
    return sum(len(s.get("x") or ()) for s in doc["series"])


# -- the HTTP measurements ---------------------------------------------------------------------

def bench_grouping(client: Client, known: dict, repeat: int) -> None:
    """The chart data of the GROUP_RUNS runs grouped by config.lr into GROUP_LINES lines."""
    ids = known["groups"]
    first, _ = client.get(f"/api/p/{GROUPS}/.charts?runs={','.join(ids)}")
    line(f"Charts page of {GROUPS}: first (catalog sync)", ms(first), "(no target)", True)
    url = chart_url(GROUPS, "train/loss", ids, group="config.lr")
    first, median, body = client.timed(url, repeat)
    groups = json.loads(body).get("groups") or []
    if [g.get("count") for g in groups] != [GROUP_RUNS // GROUP_LINES] * GROUP_LINES:
        raise BenchError(f"grouped by config.lr: expected {GROUP_LINES} groups of "
                         f"{GROUP_RUNS // GROUP_LINES} runs, got "
                         f"{[(g.get('label'), g.get('count')) for g in groups]}")
    label = f"grouping: {GROUP_RUNS} runs grouped into {GROUP_LINES} lines"
    line(f"{label}: first", ms(first), "(no target)", True)
    line(f"{label} (median)", ms(median), "< 300 ms", median < 0.3)
    print(f"  ({sum(len(g['x']) for g in groups):,} points in the {GROUP_LINES} lines, "
          f"{size(len(body))})")


def bench_grouping_only(root: Path, known: dict, args, log: Path) -> None:
    """--only grouping: a server of its own for the grouping figure alone."""
    server = Server(root, log)
    try:
        client = Client(server.host, server.port)
        line("server: start to first answer", ms(server.wait_ready(client)), "(no target)", True)
        bench_grouping(client, known, args.repeat)
        client.reset()
    finally:
        server.stop()


def bench_scatter(client: Client, n: int, repeat: int) -> None:
    """The Scatter page of 2,000 of bench-runs' runs (the query seed<2000): config.lr on a log
    axis against a scalar's last value, one point per run."""
    count = min(n, SCATTER_RUNS)
    args = urlencode({"q": f"seed<{count}", "x": "config.lr", "y": "train/metric_00.last",
                      "logx": "1"})
    _, body = client.get(f"/api/p/{RUNS}/.scatter?{args}")
    drawn = len(json.loads(body).get("points") or ())
    if drawn != count:
        raise BenchError(f"the scatter of seed<{count} draws {drawn} points, expected {count}")
    first, median, body = client.timed(f"/p/{RUNS}/.scatter?{args}", repeat)
    line(f"scatter page, {count:,} runs: first", ms(first), "(no target)", True)
    line(f"scatter page, {count:,} runs (warm, median of {repeat}), {size(len(body))}",
         ms(median), "< 500 ms", median < 0.5)
    _, median, _ = client.timed(f"/api/p/{RUNS}/.scatter?{args}", repeat)
    line("  its JSON twin (median)", ms(median), "< 500 ms", median < 0.5)


def bench_parallel(client: Client, n: int, repeat: int) -> None:
    """The parallel-coordinates page of 2,000 of bench-runs' runs (the query seed<2000): four
    axes (config.lr on a log axis, config.batch_size, config.optimizer as categories, a
    scalar's last), one brushed range, coloured by the scalar."""
    count = min(n, SCATTER_RUNS)
    args = urlencode({"q": f"seed<{count}", "log": "config.lr", "colour": "train/metric_00.last",
                      "axes": "config.lr,config.batch_size,config.optimizer,train/metric_00.last",
                      "brush": "config.batch_size:60:130"})
    _, body = client.get(f"/api/p/{RUNS}/.parallel?{args}")
    doc = json.loads(body)
    drawn, inside = len(doc.get("runs") or ()), len(doc.get("inside") or ())
    if drawn != count or inside != count // 2:
        raise BenchError(f"the parallel coordinates of seed<{count} draw {drawn} runs with "
                         f"{inside} inside the brush, expected {count} and {count // 2}")
    first, median, body = client.timed(f"/p/{RUNS}/.parallel?{args}", repeat)
    line(f"parallel coordinates page, {count:,} runs: first", ms(first), "(no target)", True)
    line(f"parallel coordinates page, {count:,} runs (warm, median of {repeat})", ms(median),
         "< 500 ms", median < 0.5)
    print(f"  ({size(len(body))}, {inside:,} runs inside the brushed range)")
    _, median, _ = client.timed(f"/api/p/{RUNS}/.parallel?{args}", repeat)
    line("  its JSON twin (median)", ms(median), "< 500 ms", median < 0.5)


def bench_http(root: Path, known: dict, args, log: Path) -> None:
    n, steps, big = args.runs, args.steps, args.big
    repeat = args.repeat
    server = Server(root, log)
    try:
        client = Client(server.host, server.port)
        line("server: start to first answer", ms(server.wait_ready(client)), "(no target)", True)

        first, _ = client.get(f"/p/{RUNS}")
        line(f"Runs page, {n:,} runs: first open (catalog sync)", ms(first), "< 20 s", first < 20)
        _, median, _ = client.timed(f"/p/{RUNS}", repeat)
        line(f"Runs page, {n:,} runs (median of {repeat})", ms(median), "< 150 ms", median < 0.15)
        first, median, body = client.timed(f"/api/p/{RUNS}/runs", repeat)
        doc = json.loads(body)
        if doc.get("total") != n or len(doc.get("runs") or ()) != min(n, 100):
            raise BenchError(f"the runs JSON shows {doc.get('total')} runs, "
                             f"{len(doc.get('runs') or ())} on its page; expected {n}")
        line("  its JSON twin (median)", ms(median), "< 150 ms", median < 0.15)
        _, body = client.get(f"/api/p/{RUNS}/runs?q=tag:baseline")
        if json.loads(body).get("total") != (n + 9) // 10:
            raise BenchError(f"tag:baseline matched {json.loads(body).get('total')} runs, "
                             f"expected {(n + 9) // 10}")
        _, median, _ = client.timed(f"/p/{RUNS}?q=tag:baseline", repeat)
        line("  with ?q=tag:baseline (median)", ms(median), "< 150 ms", median < 0.15)
        sort = "sort=config:lr&cols=status,name,config:lr"
        _, body = client.get(f"/api/p/{RUNS}/runs?{sort}")
        lrs = [r["values"].get("config:lr") for r in json.loads(body)["runs"]]
        if lrs != sorted(lrs, reverse=True):
            raise BenchError(f"sorted by config:lr, the page shows {lrs[:5]}...")
        _, median, _ = client.timed(f"/p/{RUNS}?{sort}", repeat)
        line("  sorted by config:lr (median)", ms(median), "< 150 ms", median < 0.15)
        _, median, _ = client.timed(f"/p/{RUNS}?sort=duration", repeat)
        line("  sorted by duration (median)", ms(median), "< 150 ms", median < 0.15)
        last = max(1, math.ceil(n / 100))
        _, median, _ = client.timed(f"/p/{RUNS}?page={last}", repeat)
        line(f"  its last page, page {last} (median)", ms(median), "< 150 ms", median < 0.15)
        grouped = "group=config:batch_size&cols=status,name,config:lr,config:batch_size"
        _, body = client.get(f"/api/p/{RUNS}/runs?{grouped}")
        counts = [g["count"] for g in json.loads(body)["groups"]]
        if sum(counts) != n or len(counts) != min(n, 4):
            raise BenchError(f"grouped by batch_size, the groups count {counts}; expected "
                             f"{min(n, 4)} groups of {n} runs in all")
        _, median, _ = client.timed(f"/p/{RUNS}?{grouped}", repeat)
        line("  grouped by config:batch_size, 4 groups with means (median)", ms(median),
             "< 150 ms", median < 0.15)
        bench_scatter(client, n, repeat)
        bench_parallel(client, n, repeat)

        ids = known["charts"]
        first, median, _ = client.timed(f"/p/{CHARTS}/.charts?runs={','.join(ids)}", repeat)
        line(f"Charts page of {CHART_RUNS} runs: first (catalog sync)", ms(first), "(no target)",
             True)
        line("  and then (median)", ms(median), "< 150 ms", median < 0.15)
        url = chart_url(CHARTS, "train/loss", ids)
        first, median, body = client.timed(url, repeat)
        doc = check_series(body, CHART_RUNS, steps, "train/loss")
        label = f"chart data, {CHART_RUNS} runs x {steps:,} steps"
        line(f"{label}: first", ms(first), "(no target)", True)
        line(f"  and then (median), {sent(doc):,} points sent", ms(median), "< 150 ms",
             median < 0.15)
        first, median, body = client.timed(chart_url(CHARTS, "train/accuracy", ids, buckets=2000),
                                           repeat)
        check_series(body, CHART_RUNS, steps, "train/accuracy")
        line("  another scalar at buckets=2000: first", ms(first), "(no target)", True)
        line(f"  and then (median), {size(len(body))}", ms(median), "< 150 ms", median < 0.15)
        lo, hi = steps * 2 // 5, steps * 2 // 5 + max(1, steps // 100)
        first, median, body = client.timed(url + f"&lo={lo}&hi={hi}", repeat)
        doc = check_series(body, CHART_RUNS, steps, "train/loss zoomed")
        line(f"  zoomed to steps {lo:,}-{hi:,} (median)", ms(median), "< 150 ms", median < 0.15)

        big_runs = [known["big_parquet"], known["big_logs"]]
        first, _ = client.get(f"/p/{BIG}/.charts?format=json&runs={','.join(big_runs)}")
        line(f"Charts page of {BIG}: first (catalog sync)", ms(first), "(no target)", True)
        for run_id, how in ((known["big_parquet"], "data.parquet"),
                            (known["big_logs"], "event logs")):
            url = chart_url(BIG, "train/loss", [run_id])
            first, median, body = client.timed(url, repeat)
            doc = check_series(body, 1, big, f"{big:,} points from the {how}")
            line(f"chart data, {big:,} points from {how}: first", ms(first), "< 1.5 s",
                 first < 1.5)
            line(f"  and then (median), {sent(doc):,} points sent", ms(median), "< 1.5 s",
                 median < 1.5)
            lo, hi = big // 2, big // 2 + max(1, big // 100)
            first, median, body = client.timed(url + f"&lo={lo}&hi={hi}", repeat)
            doc = json.loads(body)
            line(f"  zoomed to steps {lo:,}-{hi:,}: first", ms(first), "< 1.5 s", first < 1.5)
            line("  and then (median)", ms(median), "< 1.5 s", median < 1.5)
        bench_grouping(client, known, repeat)
        most, where = client.largest
        line("largest response body", size(most), "<= 2 MiB", most <= MAX_BODY)
        print(f"  (it was GET {where[:110]}{'...' if len(where) > 110 else ''})")
        client.reset()
    finally:
        server.stop()


# -- the browser ------------------------------------------------------------------------------

# Set before the page's own scripts run: the time (ms since navigation began) at which every
# chart in the first screen first had data-drawn="1".
WATCH_DRAWN = """
(() => {
  const check = () => {
    if (window.__nbDrawn !== undefined) return;
    const figs = Array.from(document.querySelectorAll('figure.chart'));
    const first = figs.filter(f => f.getBoundingClientRect().top < window.innerHeight);
    if (first.length && first.every(f => f.dataset.drawn === '1')) {
      window.__nbDrawn = {ms: performance.now(), charts: first.length, all: figs.length};
    }
  };
  new MutationObserver(check).observe(document, {attributes: true, subtree: true,
                                                 attributeFilter: ['data-drawn']});
})();
"""


def wait_drawn(page, timeout: float) -> dict | None:
    """What WATCH_DRAWN recorded, polled (the page's CSP forbids wait_for_function's eval)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = page.evaluate("() => window.__nbDrawn || null")
        if found:
            return found
        page.wait_for_timeout(20)
    return None


def browser_missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


def bench_browser(root: Path, known: dict, args, log: Path) -> None:
    from playwright.sync_api import sync_playwright
    server = Server(root, log)              # a fresh server: nothing of these charts cached
    try:
        server.wait_ready(Client(server.host, server.port))
        url = (f"http://{server.host}:{server.port}/p/{CHARTS}/.charts?runs="
               + ",".join(known["charts"]))
        with sync_playwright() as p:
            t = time.perf_counter()
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            line("Chromium: launch", ms(time.perf_counter() - t), "(no target)", True)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.add_init_script(WATCH_DRAWN)
                times = []
                for i in range(args.repeat + 1):
                    page = context.new_page()
                    errors: list[str] = []
                    page.on("pageerror", lambda exc: errors.append(str(exc)))
                    try:
                        page.goto(url, wait_until="commit")
                        found = wait_drawn(page, 30)
                    finally:
                        page.close()
                    if found is None:
                        line("Charts page, first screen drawn", "not in 30 s", "< 1 s", False)
                        print(f"  (page errors: {errors or 'none'})")
                        return
                    if errors:
                        raise BenchError(f"the Charts page raised in the browser: {errors}")
                    if i == 0:
                        line(f"Charts page, {CHART_RUNS} runs, first screen drawn: fresh",
                             ms(found["ms"] / 1000), "< 1 s", found["ms"] < 1000)
                        print(f"  ({found['charts']} of {found['all']} charts in the first "
                              "screen, 1280x800; the server had nothing cached)")
                    else:
                        times.append(found["ms"] / 1000)
                if times:
                    median = statistics.median(times)
                    line(f"  and then, a new tab each (median of {len(times)})", ms(median),
                         "< 1 s", median < 1)
            finally:
                browser.close()
    finally:
        server.stop()


# -- main ---------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs of the Runs page")
    parser.add_argument("--steps", type=int, default=100_000, help="steps of each chart run")
    parser.add_argument("--big", type=int, default=10_000_000, help="points of the big run")
    parser.add_argument("--group-points", type=int, default=10_000,
                        help="points of the longest run of the grouping figure")
    parser.add_argument("--repeat", type=int, default=9, help="requests timed after the first")
    parser.add_argument("--keep", type=Path, default=None,
                        help="write (or reuse) the projects under this folder and keep them")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium part")
    parser.add_argument("--only", choices=("grouping",), default=None,
                        help="write and time this figure alone")
    args = parser.parse_args()
    if min(args.runs, args.steps, args.big, args.group_points, args.repeat) < 1:
        parser.error("--runs, --steps, --big, --group-points and --repeat must be at least 1")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.1f}; "
          f"{args.runs:,} runs; {CHART_RUNS} x {args.steps:,} steps; {args.big:,} points; "
          f"{GROUP_RUNS} x up to {args.group_points:,} points grouped; "
          f"median of {args.repeat} after a first request")
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="nuboard-bench-viewer-")
        base = Path(tmp.name)
    else:
        base = args.keep.resolve()
        base.mkdir(parents=True, exist_ok=True)
    try:
        root = base / "experiments"
        known = generate(root, args)
        forget_catalogs(root)
        log = base / "server.log"
        log.unlink(missing_ok=True)
        if args.only == "grouping":
            bench_grouping_only(root, known, args, log)
            return 0
        bench_http(root, known, args, log)
        why = "--no-browser" if args.no_browser else browser_missing()
        if why:
            print(f"Charts page in Chromium: skipped ({why})")
        else:
            bench_browser(root, known, args, log)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if tmp is not None:
            t = time.perf_counter()
            tmp.cleanup()
            print(f"removed the data in {time.perf_counter() - t:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
