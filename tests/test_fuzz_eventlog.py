"""Fuzzing the event-log reader (issue 30, item 18): arbitrary bytes, and valid logs cut,
bit-flipped, spliced and grown piece by piece.

What the reader promises (nuboard/eventlog/logfile.py): it never raises and never loops; a log
cut anywhere gives exactly the points of its complete records and a torn tail; damage loses only
the records it touches, and is counted; a frame from another log (another salt) never comes back
as points. Logs are built with the writer's own framing (key record, then points, per batch, as
eventlog/writer.py writes them) and one comes from a real run. The budget is the hypothesis
profile of tests/conftest.py (docs/testing.md): NUBOARD_FUZZ=long for a longer run.
"""
from __future__ import annotations

import contextlib
import struct
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from helpers import child_env, time_limit
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import nuboard as nb
from nuboard.eventlog import logfile
from nuboard.eventlog.logfile import LogReader, dump_lines
from nuboard.eventlog.reader import RunReader

LOG = "events.r0.s0.log"
SECONDS = 10            # a reader still running after this long on a few kB loops
BLOCKS = st.sampled_from([None, 7, 61, 1024])     # the reader's block: its own, or tiny ones
# An example costs a few milliseconds here: four times the profile's count (tests/conftest.py).
BUDGET = settings(max_examples=4 * settings.default.max_examples)


@contextlib.contextmanager
def read_block(size: int | None):
    """The reader's block size set to `size` (None: its own) for the block."""
    old = logfile.READ_BLOCK
    if size is not None:
        logfile.READ_BLOCK = size
    try:
        yield
    finally:
        logfile.READ_BLOCK = old


# -- logs and what they hold ----------------------------------------------------------------------

class Log:
    """A valid log's bytes, the (start, end) of each frame, and each POINTS frame's chunk as
    (frame index, name, steps, value bits)."""

    def __init__(self, data: bytes, spans: list[tuple[int, int]], chunks: list[tuple]):
        self.data, self.spans, self.chunks = data, spans, chunks

    def chunks_ending_by(self, cut: int) -> list[tuple]:
        return [c for c in self.chunks if self.spans[c[0]][1] <= cut]

    def boundary_at_or_before(self, cut: int) -> int:
        return max([self.header] + [end for _, end in self.spans if end <= cut])

    @property
    def header(self) -> int:
        return self.spans[0][0] if self.spans else len(self.data)


def frame_spans(data: bytes, start: int) -> list[tuple[int, int]]:
    """(start, end) of each frame of a valid log, walked by the length fields."""
    spans, pos = [], start
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos + 4)[0]
        spans.append((pos, pos + logfile.FRAME_OVERHEAD + length))
        pos += logfile.FRAME_OVERHEAD + length
    assert pos == len(data)
    return spans


def bits(values) -> tuple[bytes, ...]:
    """Floats compared by their bytes (NaN payloads and -0.0 included)."""
    return tuple(struct.pack("<d", v) for v in values)


def as_read(chunks) -> list[tuple]:
    """Chunks from a reader as (name, steps, value bits)."""
    return [(c.name, tuple(c.steps), bits(c.values)) for c in chunks]


def without_index(chunks: list[tuple]) -> list[tuple]:
    return [c[1:] for c in chunks]


def is_subsequence(got: list, of: list) -> bool:
    it = iter(of)
    return all(any(g == o for o in it) for g in got)


steps_int64 = st.integers(0, (1 << 63) - 1)        # steps are never negative (Run.add_scalar)
names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@st.composite
def batches(draw) -> list[tuple[str, list[int], list[float]]]:
    """A few batches of points of a few scalars: arithmetic steps (written as start and stride)
    or any non-negative int64 steps, and any float64 values."""
    keys = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    out = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 8))
        if draw(st.booleans()):
            start = draw(st.integers(0, 1 << 40))
            stride = draw(st.integers(1, 1000))
            steps = list(range(start, start + n * stride, stride))
        else:
            steps = draw(st.lists(steps_int64, min_size=n, max_size=n))
        values = draw(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64),
                               min_size=n, max_size=n))
        out.append((draw(st.sampled_from(keys)), steps, values))
    return out


def build_log(points: list[tuple[str, list[int], list[float]]], salt: int) -> Log:
    """A format-2 log as the writer writes one: header, META, then per batch its KEY record and
    its POINTS record."""
    header = logfile.file_header(salt)
    parts = [header, logfile.meta_record({"rank": 0, "session": 0, "run": "fuzz"}, salt)]
    ids: dict[str, int] = {}
    chunks = []
    for name, steps, values in points:
        key = ids.setdefault(name, len(ids))
        parts.append(logfile.key_record(key, name, salt))
        parts.append(logfile.points_record(key, array("q", steps), array("d", [1.0] * len(values)),
                                           array("d", values), salt))
        chunks.append((len(parts) - 2, name, tuple(steps), bits(values)))
    data = b"".join(parts)
    return Log(data, frame_spans(data, len(header)), chunks)


salts = st.integers(1, (1 << 32) - 1)
logs = st.builds(build_log, batches(), salts)


@pytest.fixture(scope="module")
def real_log(tmp_path_factory) -> Log:
    """The log of a real run (the writer's own bytes): 'x' and 'y' over 300 steps, two flushes."""
    root = tmp_path_factory.mktemp("real") / "experiments"
    run = nb.init("p", dir=root, run_id="real", compact=False, flush_interval=3600,
                  system_metrics=False, capture_console=False)
    for step in range(300):
        run.add_scalar("x", float(step), step=step)
        run.add_scalar("y", -step / 7, step=step * 3)
        if step == 150:
            run.flush()
    run.finish()
    path = Path(run.path) / LOG
    data = path.read_bytes()
    reader = LogReader(path)
    chunks = []
    for chunk in reader.read_iter():       # the offset moves past each chunk as it is handed out
        chunks.append((reader.offset,) + as_read([chunk])[0])
    spans = frame_spans(data, len(logfile.file_header(reader.salt)))
    ends = {end: index for index, (_, end) in enumerate(spans)}
    chunks = [(ends[c[0]],) + c[1:] for c in chunks]
    assert [c[1] for c in chunks].count("x") >= 2, "the real run's log holds fewer batches than meant"
    return Log(data, spans, chunks)


def read_all(path: Path) -> tuple[list[tuple], LogReader]:
    reader = LogReader(path)
    with time_limit(f"reading {path.name}", SECONDS):
        got = as_read(reader.read())
    return got, reader


# -- arbitrary bytes ------------------------------------------------------------------------------

@BUDGET
@given(data=st.one_of(st.binary(max_size=2000),
                      st.builds(lambda head, rest: head + rest,
                                st.sampled_from([logfile.FILE_HEADER_V1, logfile.file_header(5),
                                                 logfile.FILE_MAGIC, b"NBEV\x02\x00"]),
                                st.binary(max_size=2000))),
       block=BLOCKS)
@example(data=b"", block=None)
@example(data=logfile.FILE_MAGIC + b"\x09\x00\x00\x00", block=None)
@example(data=logfile.file_header(5) + logfile.FRAME_MAGIC * 50, block=7)
def test_any_bytes_read_without_error_or_endless_loop(tmp_path, data, block):
    """Any bytes as a log: the reader, a run's reader, read_scalars and `events dump` return
    (no exception, no hang); a second read of an unchanged file adds nothing; what was read
    ends within the file."""
    folder = Path(tmp_path / "run")
    folder.mkdir(exist_ok=True)
    (folder / LOG).write_bytes(data)
    with read_block(block), time_limit("reading arbitrary bytes", SECONDS):
        reader = LogReader(folder / LOG)
        reader.read()
        stats = reader.stats
        assert 0 <= reader.offset <= len(data), stats
        assert min(stats.records, stats.corrupt_records, stats.bad_records, stats.torn_tail_bytes) >= 0
        assert reader.offset + stats.torn_tail_bytes <= len(data), stats
        offset = reader.offset
        assert reader.read() == [] and reader.offset == offset, stats
        run_reader = RunReader(folder)
        run_reader.refresh()
        run_reader.scalars()
        nb.read_scalars(folder)
        lines = list(dump_lines(folder / LOG))
        assert lines[0].startswith("file ") and any(line.startswith("records=") for line in lines)


# -- valid logs: cut, grown, flipped, spliced -----------------------------------------------------

@BUDGET
@given(log=logs, where=st.floats(0, 1), block=BLOCKS)
def test_a_cut_log_gives_exactly_its_complete_records_then_the_rest(tmp_path, log, where, block):
    """A log cut at any byte reads as the points of the records that end before the cut, no
    damage, a torn tail of the bytes past the last one; once the rest is written, reading on
    from there gives the remaining points."""
    cut = int(where * len(log.data))
    path = tmp_path / LOG
    path.write_bytes(log.data[:cut])
    with read_block(block):
        got, reader = read_all(path)
        where_ = f"cut at {cut} of {len(log.data)}: {reader.stats}"
        assert got == without_index(log.chunks_ending_by(cut)), where_
        assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0, where_
        boundary = log.boundary_at_or_before(cut) if cut >= log.header else 0
        assert reader.offset == boundary, where_
        assert reader.stats.torn_tail_bytes == cut - boundary, where_
        with open(path, "ab") as fh:
            fh.write(log.data[cut:])
        with time_limit("reading on", SECONDS):
            more = as_read(reader.read())
        assert got + more == without_index(log.chunks), where_
        assert not reader.stats.torn_tail and reader.stats.corrupt_records == 0, where_


@BUDGET
@given(log=logs, pieces=st.lists(st.integers(1, 200), min_size=1, max_size=40), block=BLOCKS)
def test_a_log_read_while_it_grows_gives_every_point_once(tmp_path, log, pieces, block):
    """A live log, appended in pieces of any size with a read after each: every point comes
    back exactly once, in order, and nothing is counted as damaged."""
    path = tmp_path / LOG
    path.write_bytes(b"")
    reader = LogReader(path)
    got: list = []
    at = 0
    with read_block(block), time_limit("reading a growing log", SECONDS):
        for size in pieces + [len(log.data)]:
            with open(path, "ab") as fh:
                fh.write(log.data[at:at + size])
            at = min(len(log.data), at + size)
            got += as_read(reader.read())
    assert got == without_index(log.chunks), reader.stats
    assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0
    assert not reader.stats.torn_tail and reader.offset == len(log.data)


@st.composite
def flips(draw, size: int) -> list[tuple[int, int]]:
    return draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 7)), min_size=1, max_size=4))


@BUDGET
@given(log=logs, data=st.data(), block=BLOCKS)
def test_flipped_bits_never_give_points_nobody_logged_and_losses_are_counted(tmp_path, log, data,
                                                                            block):
    """One to four flipped bits anywhere: every chunk read back is one that was logged, in
    order; whatever is lost shows in the stats (damage, a bad record, a torn tail or a damaged
    header); a single flip in a middle POINTS record loses that record alone."""
    flipped = bytearray(log.data)
    chosen = data.draw(flips(len(log.data)), label="flips")
    for at, bit in chosen:
        flipped[at] ^= 1 << bit
    assume(bytes(flipped) != log.data)
    path = tmp_path / LOG
    path.write_bytes(bytes(flipped))
    with read_block(block):
        got, reader = read_all(path)
    stats = reader.stats
    where = f"flips {chosen} in {len(log.data)} bytes: {stats} {stats.problems[:3]}"
    assert is_subsequence(got, without_index(log.chunks)), where
    if got != without_index(log.chunks):
        assert stats.corrupt_records or stats.bad_records or stats.torn_tail or stats.problems, where
    if len(chosen) == 1:
        at = chosen[0][0]
        hit = [i for i, (s, e) in enumerate(log.spans) if s <= at < e]
        points_frames = {c[0] for c in log.chunks}
        if hit and hit[0] in points_frames and hit[0] != len(log.spans) - 1:
            assert got == without_index([c for c in log.chunks if c[0] != hit[0]]), where
            assert stats.corrupt_records == 1 and not stats.torn_tail, where


@BUDGET
@given(first=logs, second=logs, data=st.data(), block=BLOCKS)
def test_a_spliced_log_gives_exactly_the_first_logs_prefix(tmp_path, first, second, data, block):
    """The start of one log followed by the middle of another (another salt): exactly the first
    log's records that end before the splice, the rest a torn tail; garbage or a foreign frame
    inserted between two records costs nothing but a count."""
    assume(first.data[8:12] != second.data[8:12])          # two salts
    cut = data.draw(st.integers(0, len(first.data)), label="cut")
    tail_from = data.draw(st.integers(0, len(second.data)), label="tail_from")
    path = tmp_path / LOG
    spliced = first.data[:cut] + second.data[tail_from:]
    path.write_bytes(spliced)
    with read_block(block):
        got, reader = read_all(path)
    where = f"cut {cut} of {len(first.data)}, then from {tail_from} of {len(second.data)}: {reader.stats}"
    same = next((i for i, (a, b) in enumerate(zip(spliced, first.data)) if a != b),
                min(len(spliced), len(first.data)))     # the splice may repeat the next bytes
    if cut >= len(logfile.file_header(1)):
        assert got == without_index(first.chunks_ending_by(same)), where
        assert reader.stats.bad_records == 0, where
    else:
        assert is_subsequence(got, without_index(second.chunks)), where

    boundary = data.draw(st.sampled_from([end for _, end in first.spans[:-1]] or [first.header]),
                         label="boundary")
    inserted = data.draw(st.one_of(st.binary(min_size=1, max_size=300),
                                   st.just(second.data[second.spans[-1][0]:second.spans[-1][1]])),
                         label="inserted")
    path.write_bytes(first.data[:boundary] + inserted + first.data[boundary:])
    with read_block(block):
        got, reader = read_all(path)
    where = f"{len(inserted)} bytes inserted at {boundary}: {reader.stats}"
    assert got == without_index(first.chunks), where
    assert reader.stats.corrupt_records == 1 and reader.stats.bad_records == 0, where


@BUDGET
@given(data=st.data(), block=BLOCKS)
def test_a_real_runs_log_cut_or_flipped_keeps_what_is_whole(tmp_path, real_log, data, block):
    """The writer's own bytes: a cut gives the complete records before it; one flipped bit in
    a POINTS record short of the last loses that record alone."""
    log = real_log
    cut = data.draw(st.integers(0, len(log.data)), label="cut")
    path = tmp_path / LOG
    path.write_bytes(log.data[:cut])
    with read_block(block):
        got, reader = read_all(path)
    assert got == without_index(log.chunks_ending_by(cut)), f"cut at {cut}: {reader.stats}"
    assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0
    index = data.draw(st.sampled_from([c[0] for c in log.chunks if c[0] != len(log.spans) - 1]),
                      label="record")
    start, end = log.spans[index]
    at = data.draw(st.integers(start, end - 1), label="byte")
    flipped = bytearray(log.data)
    flipped[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    path.write_bytes(bytes(flipped))
    with read_block(block):
        got, reader = read_all(path)
    where = f"byte {at} in frame {index}: {reader.stats}"
    assert got == without_index([c for c in log.chunks if c[0] != index]), where
    assert reader.stats.corrupt_records == 1 and not reader.stats.torn_tail, where


def test_the_real_log_fixture_reads_whole(real_log, tmp_path):
    """The fixture's chunks are what the reader gives for the whole file (the base of the
    test above)."""
    path = tmp_path / LOG
    path.write_bytes(real_log.data)
    got, reader = read_all(path)
    assert got == without_index(real_log.chunks) and reader.stats.records == len(real_log.spans)


def test_the_atheris_harness_runs(tmp_path):
    """scripts/fuzz_eventlog.py (docs/testing.md) fuzzes a few hundred inputs and finds nothing,
    where atheris installs."""
    pytest.importorskip("atheris")
    script = Path(__file__).resolve().parent.parent / "scripts" / "fuzz_eventlog.py"
    done = subprocess.run([sys.executable, str(script), "-atheris_runs=300", "-seed=30"],
                          cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 300 in" in done.stderr, done.stderr[-3000:]
    assert not list(tmp_path.glob("crash-*"))
