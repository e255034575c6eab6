"""Faults in writing logs and run.json: SIGKILL, torn tails, bit flips, a full disk, killed writes.

Rows 1, 2, 3, 5 and 6 of shared/reliability.md, on real files and real child processes.
Random choices come from one seed per test, shown in every failure message; set
NUBOARD_FAULT_SEED to replay a run.
"""
from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest
from helpers import run_child, small_tmpfs, start_child, time_limit

import nuboard as nb
from nuboard.eventlog import logfile
from nuboard.eventlog.logfile import LogReader, file_header
from nuboard.eventlog.reader import RunReader
from nuboard.files.jsonfile import TEMP_PREFIX, clean_stray_temps

HEADER = len(file_header(1))        # the bytes of the format-2 header a real log starts with


def new_rng() -> tuple[int, random.Random]:
    seed = int(os.environ.get("NUBOARD_FAULT_SEED") or random.SystemRandom().randrange(1 << 30))
    return seed, random.Random(seed)


def wait_for_line(proc: subprocess.Popen, timeout: float = 30) -> str:
    """The child's next stdout line (it prints one when ready); fail if none comes in time."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"child printed nothing (rc={proc.returncode}):\n{out}\n{err}")
    return line


def kill_now(proc: subprocess.Popen) -> tuple[float, str]:
    """SIGKILL the child; return the time of the kill and everything it printed."""
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    return killed_at, out


def read_run(path: Path) -> tuple[dict, object]:
    """A run's scalars as {name: (steps, values)} lists, and the reader's stats."""
    reader = RunReader(path)
    reader.refresh()
    found = {name: (s.steps.tolist(), s.values.tolist()) for name, s in reader.scalars().items()}
    return found, reader.stats


def points_of(chunks) -> dict:
    """LogReader chunks as {name: [(step, value), ...]}."""
    out: dict = {}
    for c in chunks:
        out.setdefault(c.name, []).extend(zip(c.steps.tolist(), c.values.tolist()))
    return out


# -- row 1: SIGKILL during logging --------------------------------------------------------

N_STEPS = 100_000
REPORT_EVERY = 1000
FLUSH = 0.05
MARGIN = FLUSH + 1.5            # logged this long before the kill: it must be on disk

LOGGER = f"""
import os, time, nuboard as nb
run = nb.init("p", run_id=os.environ["RUN_ID"], flush_interval={FLUSH}, compact=False)
print("ready", flush=True)
for step in range({N_STEPS}):
    run.log({{"a": float(step), "b": float(step)}}, step=step)
    run.add_scalar("c", float(step), step=step)
    if (step + 1) % {REPORT_EVERY} == 0:
        print("logged", step + 1, repr(time.time()), flush=True)
        time.sleep(0.04)        # about 4 s in all, so kills land at many depths
run.finish()
print("done", flush=True)
"""


def reported(out: str) -> list[tuple[int, float]]:
    """The (steps logged, time) lines a logger child printed."""
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "logged":
            rows.append((int(parts[1]), float(parts[2])))
    return rows


def test_sigkill_during_logging_leaves_an_exact_prefix(root):
    """A training job killed with SIGKILL loses at most the last flush; its run resumes after it."""
    seed, rng = new_rng()
    delays = [0.0] + [rng.uniform(0.2, 4.0) for _ in range(5)]
    killed = []
    for i, delay in enumerate(delays):
        run_id = f"killed-{i}"
        proc = start_child(LOGGER, RUN_ID=run_id, NUBOARD_DIR=str(root))
        wait_for_line(proc)
        time.sleep(delay)
        killed_at, out = kill_now(proc)
        rows = reported(out)
        must_have = max((k for k, t in rows if t <= killed_at - MARGIN), default=0)
        at_most = min(N_STEPS, max((k for k, _ in rows), default=0) + REPORT_EVERY)
        path = root / "p" / "runs" / run_id
        found, stats = read_run(path)
        where = f"seed={seed} kill {i} after {delay:.2f}s: {stats}"
        assert stats.corrupt_records == 0 and stats.bad_records == 0, where
        for name in ("a", "b", "c"):
            steps, values = found.get(name, ([], []))
            k = len(steps)
            assert steps == list(range(k)), f"{where}: {name} is not steps 0..{k - 1}"
            assert values == [float(s) for s in steps], f"{where}: {name} values differ"
            assert must_have <= k <= at_most, \
                f"{where}: {name} has {k} steps; logged {must_have} over {MARGIN}s before the kill"
        killed.append((path, {n: len(found.get(n, ([], []))[0]) for n in ("a", "b", "c")}))

    for path, lengths in killed:
        run = nb.init("p", dir=root, run_id=path.name, resume="must", flush_interval=FLUSH,
                      compact=False)
        assert run.session == 1 and (path / "events.r0.s1.log").is_file()
        for name, k in lengths.items():
            for step in range(k, k + 50):
                run.add_scalar(name, float(step))       # step=None: goes on after the prefix
        run.finish()
        found, stats = read_run(path)
        assert stats.corrupt_records == 0, f"seed={seed} {path.name}: {stats}"
        for name, k in lengths.items():
            assert found[name] == (list(range(k + 50)), [float(s) for s in range(k + 50)]), \
                f"seed={seed} {path.name}: {name} after resume"


# -- rows 2 and 3: a log with known records -----------------------------------------------

def build_log(root: Path) -> tuple[bytes, list]:
    """A real event log, written one flush at a time, and what each of its frames holds.

    Returns the file's bytes and one entry per frame: (kind, name, [(step, value), ...]).
    """
    run = nb.init("p", dir=root, run_id="framed", flush_interval=3600, compact=False)
    frames: list = [(1, None, [])]                               # META
    for name in ("a", "b"):
        frames += [(2, name, []), (3, name, [(s, s + 0.25) for s in range(5)])]
    run.log({"a": 0.25, "b": 0.25}, step=0)
    for s in range(1, 5):
        run.log({"a": s + 0.25, "b": s + 0.25}, step=s)
    run.flush()
    batches = [("a", range(5, 12)), ("b", range(5, 9)), ("a", range(12, 20)),
               ("b", [9, 10, 12, 15, 19, 24]),                   # not evenly spaced: mode 0
               ("a", range(20, 31)), ("b", [30, 31, 33, 36, 40, 45, 51])]
    for name, steps in batches:
        points = [(s, -1.5 * s) for s in steps]
        for s, v in points:
            run.add_scalar(name, v, step=s)
        run.flush()
        frames += [(2, name, []), (3, name, points)]            # each batch names its key
    run.finish()
    data = (run.path / "events.r0.s0.log").read_bytes()
    spans = frame_spans(data)
    assert [data[start + 12] for start, _ in spans] == [kind for kind, _, _ in frames]
    return data, list(zip(spans, frames))


def frame_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each frame, walked by its length field (file header first)."""
    spans, pos = [], HEADER
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos + 4)[0]
        spans.append((pos, pos + 16 + length))
        pos += 16 + length
    assert pos == len(data)
    return spans


def expected_points(frames, keep) -> dict:
    """{name: points} of the frames for which keep(index, span) is true."""
    out: dict = {}
    for i, (span, (kind, name, points)) in enumerate(frames):
        if kind == 3 and keep(i, span):
            out.setdefault(name, []).extend(points)
    return out


@pytest.fixture(params=[None, 7, 61], ids=["block-8MiB", "block-7B", "block-61B"])
def read_block(request, monkeypatch):
    """The reader's block size: its own, or blocks smaller than the header and than a frame,
    so that every cut, damage and resynchronisation also meets a block's end."""
    if request.param is not None:
        monkeypatch.setattr(logfile, "READ_BLOCK", request.param)
    return request.param


def test_torn_tail_at_every_byte_keeps_the_complete_records(root, tmp_path, read_block):
    """A log cut anywhere in its last records shows every complete record and a torn tail."""
    data, frames = build_log(root)
    everything = expected_points(frames, lambda i, span: True)
    reader = LogReader(root / "p" / "runs" / "framed" / "events.r0.s0.log")
    assert points_of(reader.read()) == everything and not reader.stats.torn_tail
    copy = tmp_path / "events.r0.s0.log"
    boundaries = {end for (_, end), _ in frames}
    for size in range(frames[-2][0][0], len(data) + 1):
        copy.write_bytes(data[:size])
        reader = LogReader(copy)
        got = points_of(reader.read())
        last_end = max(b for b in boundaries | {HEADER} if b <= size)
        where = f"cut at {size} of {len(data)}: {reader.stats}"
        assert got == expected_points(frames, lambda i, span: span[1] <= size), where
        assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0, where
        assert reader.stats.torn_tail == (size != last_end), where
        assert reader.stats.torn_tail_bytes == size - last_end, where
        assert reader.offset == last_end, where
        with open(copy, "ab") as fh:                # the writer finishes the record: read on
            fh.write(data[size:])
        more = points_of(reader.read())
        merged = {n: got.get(n, []) + more.get(n, []) for n in everything}
        assert merged == everything and not reader.stats.torn_tail, where


def test_garbage_after_the_last_record_is_a_torn_tail(root, tmp_path, read_block):
    """NULs or random bytes after a log (a preallocated or half-written end) lose no points."""
    seed, rng = new_rng()
    data, frames = build_log(root)
    everything = expected_points(frames, lambda i, span: True)
    tails = [b"\0", b"\0" * 7, b"\0" * 4096, data[frames[1][0][0]:frames[1][0][0] + 10]]
    tails += [rng.randbytes(rng.randrange(1, 600)) for _ in range(40)]
    tails += [b"\x8dNBr" + rng.randbytes(rng.randrange(0, 300)) for _ in range(20)]
    folder = tmp_path / "run"
    folder.mkdir()
    for tail in tails:
        (folder / "events.r0.s0.log").write_bytes(data + tail)
        reader = LogReader(folder / "events.r0.s0.log")
        where = f"seed={seed} tail of {len(tail)} bytes {tail[:16]!r}: {reader.stats}"
        assert points_of(reader.read()) == everything, where
        assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0, where
        assert reader.stats.torn_tail_bytes == len(tail), where
        found, stats = read_run(folder)
        assert {n: list(zip(*sv)) for n, sv in found.items()} == everything, where
        assert stats.torn_tail and stats.corrupt_records == 0, where


def test_bit_flip_in_a_middle_record_skips_only_that_record(root, tmp_path, read_block):
    """A flipped bit anywhere in one record (length included) loses only that record's points."""
    data, frames = build_log(root)
    middle = [i for i, (_, (kind, _, _)) in enumerate(frames) if kind == 3][3]
    (start, end), (_, name, lost) = frames[middle]
    assert 0 < middle < len(frames) - 1 and lost
    others = expected_points(frames, lambda i, span: i != middle)
    copy = tmp_path / "events.r0.s0.log"
    with time_limit("reading logs with a flipped bit", 60):
        for at in range(start, end):
            for bit in range(8):
                flipped = bytearray(data)
                flipped[at] ^= 1 << bit
                copy.write_bytes(flipped)
                reader = LogReader(copy)
                got = points_of(reader.read())
                where = (f"bit {bit} of byte {at - start} of a {end - start}-byte record "
                         f"({name!r}): {reader.stats}")
                assert reader.stats.corrupt_records == 1, where
                assert reader.stats.bad_records == 0 and not reader.stats.torn_tail, where
                assert got == others, where


# -- row 5: disk full ---------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """An empty 512 KiB tmpfs (root only), unmounted afterwards."""
    with small_tmpfs(tmp_path / "tiny", "512k") as mnt:
        yield mnt


FILLER = """
import os, sys, time, nuboard as nb
root = os.environ["TINY"]
run = nb.init("p", dir=root, run_id="full", flush_interval=0.05, compact=False, capture_env=False,
                system_metrics=False, capture_console=False)   # count only the points logged here
t0 = time.monotonic()

def log(lo, hi, flush_every=None):
    for step in range(lo, hi):
        run.log({"a": float(step), "b": float(step)}, step=step)
        if flush_every and (step + 1) % flush_every == 0:
            run.flush()

log(0, 30_000, flush_every=1000)        # fills the disk 32 KiB at a time
log(30_000, 200_000)                    # far beyond, through the background writer
run.flush()
os.unlink(os.path.join(root, "ballast"))    # 128 KiB free again
log(200_000, 201_000)
run.flush()
log(201_000, 300_000)                   # and full again
print("loop seconds", time.monotonic() - t0, flush=True)
print("LOOP DONE", file=sys.stderr, flush=True)
run.finish()
print("dropped", run.dropped_points, flush=True)
"""


def test_full_disk_drops_and_counts_points_without_stopping_training(tiny_disk):
    """On a full disk training runs on, one warning names the folder, and drops are counted."""
    (tiny_disk / "ballast").write_bytes(b"\1" * (128 * 1024))
    proc = run_child(FILLER, timeout=120, TINY=str(tiny_disk))
    folder = os.path.abspath(tiny_disk / "p" / "runs" / "full")
    during, _, at_finish = proc.stderr.partition("LOOP DONE")
    assert during.count("RuntimeWarning") == 1, proc.stderr
    assert f"cannot write to {folder} " in during, proc.stderr
    lines = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
    assert float(lines["loop seconds"]) < 60, proc.stdout
    dropped = int(lines["dropped"])
    assert dropped > 0, proc.stdout

    found, stats = read_run(Path(folder))
    assert stats.corrupt_records == 0 and stats.bad_records == 0, stats
    assert not stats.torn_tail, f"a failed write was not cut back to its last record: {stats}"
    for name in ("a", "b"):
        steps, values = found[name]
        assert values == [float(s) for s in steps], name
        assert all(x < y for x, y in zip(steps, steps[1:])), f"{name}: steps out of order"
        k = next((i for i, s in enumerate(steps) if s != i), len(steps))
        assert k >= 5000, f"{name}: only {k} points written before the disk filled"
        assert set(range(200_000, 201_000)) <= set(steps), f"{name}: no recovery once freed"
    written = sum(len(steps) for steps, _ in found.values())
    assert written + dropped == 2 * 300_000, (written, dropped)
    doc = json.loads((Path(folder) / "run.json").read_text())
    if doc["status"] == "finished":             # run.json could be rewritten at the end
        assert doc["dropped_points"] == dropped, doc


FULL_AT_START = """
import os, sys, warnings, nuboard as nb
root = os.environ["TINY"]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        run = nb.init("p", dir=root, run_id="full", flush_interval=0.05, compact=False,
                      system_metrics=False, capture_console=False)
    except OSError as exc:
        print("init failed", exc, flush=True)
        sys.exit(0)
if not caught:
    print("header written", flush=True)
    sys.exit(0)
print("header dropped", flush=True)
os.unlink(os.path.join(root, "ballast"))
for step in range(1000):
    run.log({"a": float(step)}, step=step)
run.finish()
print("dropped", run.dropped_points, flush=True)
"""


def test_disk_full_at_the_first_write_still_gives_a_readable_log(tiny_disk):
    """A run started with room for run.json but not its log shows its points once space frees."""
    page = os.sysconf("SC_PAGE_SIZE")
    for pages_left in (1, 2, 3, 4):     # room for run.json and the heartbeat, not the log
        for entry in tiny_disk.iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        free = shutil.disk_usage(tiny_disk).free
        (tiny_disk / "ballast").write_bytes(b"\1" * (free - pages_left * page))
        proc = run_child(FULL_AT_START, timeout=60, TINY=str(tiny_disk))
        if proc.stdout.startswith("header dropped"):
            break
    else:
        pytest.skip("could not leave room for run.json but not for the log's first write")
    dropped = int(proc.stdout.split()[-1])
    found, stats = read_run(tiny_disk / "p" / "runs" / "full")
    written = len(found.get("a", ([], []))[0])
    assert stats.header_ok and stats.corrupt_records == 0 and stats.bad_records == 0, \
        f"{stats} {stats.problems}"
    assert written + dropped == 1000, f"{written} points read back, {dropped} counted as dropped"


# -- row 6: a crash while writing run.json ------------------------------------------------

JSON_WRITER = """
import json, os, sys
from nuboard.files.jsonfile import write_json_atomic
docs = [json.loads(open(os.environ[key]).read()) for key in ("DOC_A", "DOC_B")]
path = os.environ["TARGET"]
i = 0
while True:
    write_json_atomic(path, docs[i % 2])
    i += 1
    if i == 1:
        print("ready", flush=True)
"""


def strays(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)}


def test_kill_while_writing_run_json_leaves_old_or_new_and_temps_are_cleaned(root, tmp_path):
    """A job killed while saving run.json leaves a readable one; leftover temps are removed."""
    seed, rng = new_rng()
    run = nb.init("p", dir=root, run_id="j", compact=False)
    run.finish()
    target = run.path / "run.json"
    initial = json.loads(target.read_text())
    docs = []
    for key, mib in (("A", 4), ("B", 6)):      # big enough that writes take most of the time
        doc = dict(initial, notes=key * (mib << 20), config={"rows": [{"i": i, "k": key} for i in range(2000)]})
        (tmp_path / f"doc{key}.json").write_text(json.dumps(doc))
        docs.append(doc)
    seen_temps = 0
    for kill in range(80):                    # 20 kills, more until one lands in a write
        if kill >= 20 and seen_temps:
            break
        proc = start_child(JSON_WRITER, TARGET=str(target), DOC_A=str(tmp_path / "docA.json"),
                           DOC_B=str(tmp_path / "docB.json"))
        wait_for_line(proc)
        time.sleep(rng.uniform(0, 0.25))
        kill_now(proc)
        text = target.read_text()
        where = f"seed={seed} kill {kill}: run.json of {len(text)} chars"
        assert json.loads(text) in [initial] + docs, where
        seen_temps = max(seen_temps, len(strays(run.path)))
    assert seen_temps > 0, f"seed={seed}: no kill landed inside a write (no temp file left)"

    copy = tmp_path / "copy"
    shutil.copytree(run.path, copy)
    left = strays(copy)
    removed = clean_stray_temps(copy)
    assert {p.name for p in removed} == left and not strays(copy)
    assert (copy / "run.json").read_text() == target.read_text()

    run = nb.init("p", dir=root, run_id="j", resume="must", compact=False)
    assert not strays(run.path), "resuming the run did not clean the dead writer's temp files"
    run.finish()
    assert json.loads(target.read_text())["status"] == "finished"
