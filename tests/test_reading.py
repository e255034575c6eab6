"""Reading back: data.parquet only while current, live reading of a growing run, events dump."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import child_env

import nuboard as nb
from nuboard.eventlog.logfile import LogReader
from nuboard.eventlog.parquet import read_parquet_if_current
from nuboard.eventlog.reader import RunReader


def log_run(root, **kw):
    run = nb.init("p", system_metrics=False, **kw)     # only the points logged here
    for step in range(1000):
        run.log({"loss": 1.0 / (step + 1), "acc": step / 1000}, step=step)
    return run


def test_parquet_written_at_finish_and_used(root):
    """compact=True leaves data.parquet beside the logs, and it reads the same points."""
    run = log_run(root)
    run.finish()
    path = Path(run.path)
    assert (path / "data.parquet").is_file() and (path / "events.r0.s0.log").is_file()
    from_parquet = read_parquet_if_current(path, None)
    reader = RunReader(path)
    reader.refresh()
    from_logs = reader.scalars()
    assert from_parquet is not None and set(from_parquet) == {"loss", "acc"}
    for name in from_logs:
        assert from_parquet[name] == from_logs[name]
    assert nb.read_scalars(path, ["acc"])["acc"].steps.tolist() == list(range(1000))


def test_parquet_encodes_steps_as_deltas_and_floats_as_byte_streams(root):
    """data.parquet is smaller than plain snappy (steps delta-encoded, floats byte-stream-split
    and compressed), and one written the older way (plain snappy) still reads the same points."""
    import pyarrow.parquet as pq

    run = log_run(root)
    run.finish()
    path = Path(run.path) / "data.parquet"
    column = {c.path_in_schema: c for c in (pq.ParquetFile(path).metadata.row_group(0).column(i)
                                            for i in range(4))}
    assert "DELTA_BINARY_PACKED" in column["step"].encodings
    assert {"BYTE_STREAM_SPLIT"} <= set(column["value"].encodings) & set(column["wall_time"].encodings)
    assert column["value"].compression == "SNAPPY"
    new = read_parquet_if_current(path.parent, None)
    table = pq.read_table(path)
    plain = path.with_name("plain.parquet")
    pq.write_table(table, plain, row_group_size=len(table), use_dictionary=["key"],
                   compression="snappy")
    assert path.stat().st_size < plain.stat().st_size
    os.replace(plain, path)                  # the older encoding, same metadata: still current
    assert read_parquet_if_current(path.parent, None) == new


def test_parquet_older_than_the_logs_is_not_used(root):
    """After a resume adds points, the reader ignores the stale parquet and reads the logs."""
    run = log_run(root, run_id="r")
    run.finish()
    again = nb.init("p", run_id="r", resume="must", compact=False)
    again.add_scalar("loss", 5.0, step=2000)
    again.finish()
    assert read_parquet_if_current(Path(run.path), None) is None
    assert nb.read_scalars(run.path)["loss"].steps[-1] == 2000


def test_compact_false_writes_no_parquet(root):
    """compact=False leaves only the logs."""
    run = log_run(root, compact=False)
    run.finish()
    assert not (Path(run.path) / "data.parquet").exists()


def test_live_reader_follows_a_growing_run(root):
    """A reader of a run being written sees new points on each refresh, reading only the new bytes."""
    code = """
import sys, nuboard as nb
run = nb.init("p", run_id="live", flush_interval=0.02, resume="auto")
for step in range(200):
    run.add_scalar("x", float(step), step=step)
    if step % 50 == 49:
        run.flush()
        print(step, flush=True)
        sys.stdin.readline()
run.finish()
"""
    child = subprocess.Popen([sys.executable, "-c", code], env=child_env(NUBOARD_DIR=str(root)),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    reader = RunReader(root / "p" / "runs" / "live")
    seen = []
    try:
        for expected in (49, 99, 149, 199):
            assert int(child.stdout.readline()) == expected
            assert reader.refresh() is True
            seen.append(len(reader.scalars(["x"]).get("x", ())))
            offset = reader._readers[max(reader._readers)].offset
            assert offset == os.path.getsize(reader._readers[max(reader._readers)].path)
            child.stdin.write("\n")
            child.stdin.flush()
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
    assert seen == [50, 100, 150, 200]
    assert reader.refresh() is False


def test_scalars_handed_out_never_change_as_the_reader_reads_on(root):
    """A one-session scalar comes back without a copy, yet what a caller holds (and a pyarrow
    view of it, as the Charts cache makes) stays as it was while the live reader extends."""
    import pyarrow as pa

    run = nb.init("p", system_metrics=False, compact=False, flush_interval=0.02)
    for step in range(100):
        run.add_scalar("x", float(step), step=step)
    run.flush()
    reader = RunReader(run.path)
    reader.refresh()
    first = reader.scalars(["x"])["x"]
    assert reader.scalars(["x"])["x"].values is first.values       # no copy while unchanged
    view = pa.py_buffer(first.values)                              # an export, as wrap_array's
    for step in range(100, 250):
        run.add_scalar("x", float(step), step=step)
    run.flush()
    assert reader.refresh() is True                                # no BufferError on extend
    later = reader.scalars(["x"])["x"]
    assert list(later.steps) == list(range(250))
    assert list(first.steps) == list(range(100)) and len(view) == 100 * 8
    run.finish()


def test_events_dump_prints_records(root):
    """`nuboard events dump` shows the meta record, the points and the reader's counts."""
    run = log_run(root, compact=False)
    run.finish()
    log = Path(run.path) / "events.r0.s0.log"
    out = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "events", "dump", str(log),
                          "--limit", "2"], capture_output=True, text=True, env=child_env())
    assert out.returncode == 0, out.stderr
    assert f'"run_id": "{run.id}"' in out.stdout
    assert "format 2 salt 0x" in out.stdout
    assert "points 'loss' n=1000 [0:1.0, 1:0.5, ... (998 more)]" in out.stdout
    assert "records=" in out.stdout and "corrupt_skipped=0" in out.stdout


def test_events_dump_of_a_missing_file_is_a_usage_error(tmp_path):
    """A path that does not exist gives one message and exit code 2."""
    out = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "events", "dump",
                          str(tmp_path / "nope.log")], capture_output=True, text=True, env=child_env())
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_a_file_that_is_not_a_log_is_reported(tmp_path):
    """A foreign file reads as no points with a bad-header note, never a traceback."""
    path = tmp_path / "events.r0.s0.log"
    path.write_bytes(b"hello, this is not an event log\n" * 10)
    reader = LogReader(path)
    assert reader.read() == []
    assert reader.stats.header_ok is False and "not a NuBoard event log" in reader.stats.problems[0]


def test_arithmetic_steps_read_the_same_with_and_without_arrow_loaded(root):
    """A record of steps start + k * stride reads the same steps whether the process has
    pyarrow's kernels loaded (built in C: the viewer) or not (a training script)."""
    import pyarrow.compute  # noqa: F401  (the viewer's case, in this process)

    from nuboard.eventlog import logfile

    run = nb.init("p", system_metrics=False, compact=False)
    for k in range(3 * logfile.ARROW_FROM):
        run.add_scalar("loss", float(k), step=7 + 3 * k)
    run.finish()
    log = Path(run.path) / "events.r0.s0.log"
    chunks = LogReader(log).read()
    sizes = [len(c.steps) for c in chunks if c.name == "loss"]
    assert max(sizes) >= logfile.ARROW_FROM                # the Arrow path was taken
    steps = [s for c in chunks if c.name == "loss" for s in c.steps]
    assert steps == [7 + 3 * k for k in range(3 * logfile.ARROW_FROM)]
    child = subprocess.run(
        [sys.executable, "-c",
         "import sys; from nuboard.eventlog.logfile import LogReader; "
         "steps = [s for c in LogReader(sys.argv[1]).read() if c.name == 'loss' for s in c.steps]; "
         "print('pyarrow.compute' in sys.modules, steps == [7 + 3 * k for k in range(len(steps))], "
         "len(steps))", str(log)],
        capture_output=True, text=True, env=child_env(), timeout=60)
    assert child.stdout.split() == ["False", "True", str(3 * logfile.ARROW_FROM)], child.stderr


def test_a_reader_left_part_way_goes_on_from_the_last_chunk_it_gave(root):
    """read_iter moves the offset past each chunk as it hands it out: a caller that stops
    after one chunk gets the rest, once each, from the next read."""
    run = nb.init("p", system_metrics=False, compact=False, flush_interval=0.02)
    for step in range(300):
        run.add_scalar("x", float(step), step=step)
        if step % 100 == 99:
            run.flush()
    run.finish()
    reader = LogReader(Path(run.path) / "events.r0.s0.log")
    first = next(c for c in reader.read_iter() if c.name == "x")
    rest = [s for c in reader.read() if c.name == "x" for s in c.steps]
    assert list(first.steps) + rest == list(range(300)) and len(rest) >= 100
    assert reader.read() == []
