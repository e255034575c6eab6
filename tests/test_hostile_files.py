"""Stray, oddly named and non-regular files in a run folder (issue 13, items 18 and 19).

A file named like an event log but outside the canonical form or int64, and a FIFO named like
an event log or data.parquet, are left out by every reader: `nuboard ls` and `reindex` (real
subprocesses with a timeout), the reading API, compaction, and the viewer over real HTTP.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import child_env

import nuboard as nb
from nuboard.eventlog.logfile import LogReader
from nuboard.eventlog.parquet import current_parquet_meta, read_parquet_if_current, write_parquet
from nuboard.eventlog.reader import RunReader
from nuboard.files import layout

STRAY_NAMES = ["events.r99999999999999999999.s0.log", "events.r0.s99999999999999999999.log",
               "events.r9223372036854775808.s0.log", "events.r01.s0.log", "events.r0.s01.log",
               "events.r+1.s0.log", "events.r\u0661.s0.log", "events.r0.s0.log.bak",
               "events.r0.s0.log\n"]


def logged_run(root: Path, **kw) -> Path:
    """A finished run of the real API: 'x' at steps 0..49 (value = step)."""
    run = nb.init("p", dir=root, run_id="r", system_metrics=False, capture_console=False, **kw)
    for step in range(50):
        run.add_scalar("x", float(step), step=step)
    run.finish()
    return Path(run.path)


def cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real `nuboard` command in a child process; a hang fails the test after `timeout`."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", *args, "--dir", str(root)],
                          capture_output=True, text=True, env=child_env(), timeout=timeout)


@contextlib.contextmanager
def never_blocks_on(fifo: Path, what: str, seconds: float = 10):
    """Fail if anyone in this process opens `fifo` for reading during the block.

    A watchdog thread opens the FIFO's writing end every 0.2 s without blocking; that succeeds
    only while a reader holds it open (blocked in open or read, even inside C code). It then
    closes it, so the reader gets end-of-file and goes on, and the test fails instead of hanging.
    """
    seen: list[float] = []
    done = threading.Event()

    def watch() -> None:
        start = time.monotonic()
        while not done.wait(0.2):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:          # ENXIO: nobody has it open for reading
                continue
            seen.append(time.monotonic() - start)
            os.close(fd)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        yield
    finally:
        done.set()
        thread.join()
    assert not seen, f"{what} opened the FIFO {fifo.name} for reading (blocked until released)"
    assert time.monotonic() - started < seconds, f"{what} took over {seconds}s"


def steps_of(scalars) -> dict:
    return {name: s.steps.tolist() for name, s in scalars.items()}


def test_parse_log_name_takes_canonical_names_within_int64_only():
    """Only the names log_name writes parse; anything else is None, never an error."""
    assert layout.parse_log_name("events.r0.s0.log") == (0, 0)
    assert layout.parse_log_name("events.r12.s3.log") == (12, 3)
    top = (1 << 63) - 1
    assert layout.parse_log_name(layout.log_name(top, top)) == (top, top)
    for name in STRAY_NAMES + ["events.r.s0.log", "run.json", ""]:
        assert layout.parse_log_name(name) is None, name


def test_listing_keeps_regular_files_with_canonical_names(tmp_path):
    """A stray name, a folder or a FIFO named like a log is left out; a link to a log is kept."""
    (tmp_path / "events.r0.s0.log").write_bytes(b"")
    (tmp_path / "real.bin").write_bytes(b"")
    os.symlink("real.bin", tmp_path / "events.r1.s0.log")
    for name in STRAY_NAMES:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "events.r0.s1.log").mkdir()
    os.mkfifo(tmp_path / "events.r0.s2.log")
    os.symlink("missing", tmp_path / "events.r0.s3.log")
    assert [(r, s, p.name) for r, s, p in layout.list_logs(tmp_path)] == \
        [(0, 0, "events.r0.s0.log"), (1, 0, "events.r1.s0.log")]
    assert [s for _, s, _ in layout.list_logs(tmp_path, 0)] == [0]


def test_stray_log_names_never_break_ls_reindex_or_reading(root):
    """Copies of a real log under stray names: ls and reindex exit 0 and list the run; the
    reading API and the catalog see only the real log's points."""
    folder = logged_run(root, compact=False)
    for name in STRAY_NAMES:
        shutil.copyfile(folder / "events.r0.s0.log", folder / name)
    assert steps_of(nb.read_scalars(folder)) == {"x": list(range(50))}
    for args in (["ls", "--json"], ["reindex"], ["ls", "p", "--json"]):
        out = cli(root, *args)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
    rows = json.loads(cli(root, "ls", "p", "--json").stdout)
    assert [row["id"] for row in rows] == ["r"]


def test_a_fifo_named_like_a_log_never_blocks_ls_or_reading(root):
    """A FIFO named like the next session's log: `nuboard ls` finishes, nb.read_scalars and the
    readers answer at once with the real points, and a LogReader given the FIFO notes it."""
    folder = logged_run(root)                      # with data.parquet
    fifo = folder / "events.r0.s1.log"
    os.mkfifo(fifo)
    with never_blocks_on(fifo, "reading a run with a FIFO named like a log"):
        assert steps_of(nb.read_scalars(folder)) == {"x": list(range(50))}
        assert read_parquet_if_current(folder, None) is not None     # the FIFO is no log of it
        reader = RunReader(folder)
        reader.refresh()
        assert steps_of(reader.scalars()) == {"x": list(range(50))}
        write_parquet(folder)
    with never_blocks_on(fifo, "a LogReader given the FIFO"):
        direct = LogReader(fifo)
        assert direct.read() == []
    assert "not a regular file" in direct.stats.problems[0]
    out = cli(root, "ls", "p", "--json")
    assert out.returncode == 0, out.stderr
    assert [row["id"] for row in json.loads(out.stdout)] == ["r"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_non_regular_data_parquet_is_never_opened(root, kind):
    """data.parquet replaced by a FIFO or a folder: the readers go to the logs at once."""
    folder = logged_run(root)
    (folder / layout.PARQUET).unlink()
    if kind == "fifo":
        os.mkfifo(folder / layout.PARQUET)
    else:
        (folder / layout.PARQUET).mkdir()
    with never_blocks_on(folder / layout.PARQUET, f"reading a run whose data.parquet is a {kind}"):
        assert current_parquet_meta(folder) is None
        assert read_parquet_if_current(folder, None) is None
        assert steps_of(nb.read_scalars(folder)) == {"x": list(range(50))}
    out = cli(root, "ls", "p", "--json")
    assert out.returncode == 0, out.stderr


def test_parquet_metadata_of_the_wrong_shape_falls_back_to_the_logs(root):
    """A data.parquet whose nuboard metadata names the logs but holds row spans that make no
    sense is not used; the logs are read instead."""
    import pyarrow.parquet as pq

    folder = logged_run(root)
    path = folder / layout.PARQUET
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"nuboard"])
    for keys in ({"x": [0, 10**6]}, {"x": [-5, 3]}, {"x": "ab"}, {"x": None}, [1, 2], 7):
        meta["keys"] = keys
        pq.write_table(table.replace_schema_metadata({b"nuboard": json.dumps(meta).encode()}), path)
        assert read_parquet_if_current(folder, None) is None, keys
        assert steps_of(nb.read_scalars(folder)) == {"x": list(range(50))}, keys


def test_the_viewer_serves_a_project_with_stray_and_fifo_logs(root):
    """The viewer's sync and pages answer (never 500, never blocked) with stray log names and
    a FIFO named like a log in a run folder."""
    from helpers_http import Viewer

    folder = logged_run(root)
    for name in STRAY_NAMES[:4]:
        shutil.copyfile(folder / "events.r0.s0.log", folder / name)
    os.mkfifo(folder / "events.r0.s1.log")
    with Viewer(root) as viewer, never_blocks_on(folder / "events.r0.s1.log", "the viewer", 60):
        assert viewer.get("/").status in (200, 302)
        for path in ("/p/p", "/p/p/.run/r", "/p/p/.charts?runs=r", "/artifacts",
                     "/api/p/p/.chart?name=x&runs=r&rank=all"):
            reply = viewer.get(path)
            assert reply.status == 200, (path, reply.status, reply.text[:2000])
        series = viewer.get("/api/p/p/.chart?name=x&runs=r&rank=all").json()["series"]
        assert [(s["run"], s["rank"]) for s in series] == [("r", 0)]
