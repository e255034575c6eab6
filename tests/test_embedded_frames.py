"""Logged values that carry a complete frame never come back as points (issue 13, item 17).

Float values are arbitrary bytes, so a user can log, by accident or not, values whose bytes
form valid-looking frames. After a damaged record the reader searches for the next valid frame;
the per-file salt of format 2 makes a frame inside a record's values fail its checks.
"""
from __future__ import annotations

import shutil
import struct
from array import array
from pathlib import Path

import pytest

import nuboard as nb
from nuboard.eventlog import logfile
from nuboard.eventlog.logfile import LogReader
from nuboard.eventlog.reader import RunReader

FAKE_STEPS = list(range(10**6, 10**6 + 5))


def embedded_frames() -> bytes:
    """Frames as a format-1 writer (or anyone without the salt) builds them: a KEY record of a
    new name, points for it, and points for key 0 (the real scalar's id) at steps never logged."""
    raw = (logfile.key_record(7, "injected")
           + logfile.points_record(7, array("q", FAKE_STEPS), array("d", [1.0] * 5), array("d", [666.0] * 5))
           + logfile.points_record(0, array("q", FAKE_STEPS), array("d", [1.0] * 5), array("d", [666.0] * 5)))
    return raw + b"\0" * (-len(raw) % 8)


def log_run(root: Path) -> tuple[Path, dict, list]:
    """A real run whose scalar 'x' logged the embedded frames as values in one flush, followed by
    other batches; the run folder, every logged point, and the points of that one batch."""
    hidden = array("d")
    hidden.frombytes(embedded_frames())
    run = nb.init("p", dir=root, run_id="embed", flush_interval=3600, compact=False,
                  system_metrics=False, capture_console=False)
    carrier = [(step, value) for step, value in enumerate(hidden)]
    for step, value in carrier:
        run.add_scalar("x", value, step=step)
    run.flush()
    logged = {"x": list(carrier), "y": []}
    for step in range(len(carrier), len(carrier) + 10):
        run.add_scalar("x", float(step), step=step)
        run.add_scalar("y", -float(step), step=step)
        logged["x"].append((step, float(step)))
        logged["y"].append((step, -float(step)))
    run.finish()
    return Path(run.path), logged, carrier


def frame_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each frame of a format-2 log, walked by the length fields."""
    spans, pos = [], len(logfile.file_header(1))
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos + 4)[0]
        spans.append((pos, pos + 16 + length))
        pos += 16 + length
    assert pos == len(data)
    return spans


def bits_of(values) -> list[bytes]:
    """Floats compared by their bytes (NaN payloads included)."""
    return [struct.pack("<d", v) for v in values]


def as_points(scalars) -> dict:
    return {name: list(zip(s.steps.tolist(), bits_of(s.values))) for name, s in scalars.items()}


def with_bits(points: dict) -> dict:
    return {name: [(step, struct.pack("<d", v)) for step, v in pts] for name, pts in points.items()}


@pytest.fixture(params=[None, 61], ids=["block-8MiB", "block-61B"])
def read_block(request, monkeypatch):
    """The reader's block size: its own, or blocks smaller than a frame."""
    if request.param is not None:
        monkeypatch.setattr(logfile, "READ_BLOCK", request.param)
    return request.param


def test_a_flipped_bit_in_the_carrying_record_never_returns_embedded_points(root, tmp_path,
                                                                           read_block):
    """Every single-bit flip in the record whose values hold frames (its header first): only
    logged points come back, that record's points are lost, and the damage is counted."""
    folder, logged, carrier = log_run(root)
    log = folder / "events.r0.s0.log"
    data = log.read_bytes()
    inner = data.find(embedded_frames())
    assert inner > 0, "the values were not written byte for byte"
    (start, end), = [(s, e) for s, e in frame_spans(data) if s < inner < e]
    undamaged = RunReader(folder)
    undamaged.refresh()
    assert as_points(undamaged.scalars()) == with_bits(logged)
    expected = with_bits({"x": [p for p in logged["x"] if p not in carrier], "y": logged["y"]})
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    for at in range(start, end):          # the 12-byte frame header first, then the rest
        for bit in range(8):
            flipped = bytearray(data)
            flipped[at] ^= 1 << bit
            (copy / log.name).write_bytes(flipped)
            reader = RunReader(copy)
            reader.refresh()
            got = as_points(reader.scalars())
            where = f"bit {bit} of byte {at - start} of the {end - start}-byte record: {reader.stats}"
            assert "injected" not in got, where
            assert got == expected, where
            assert reader.stats.corrupt_records == 1 and not reader.stats.torn_tail, where
            assert any("damaged bytes" in p for p in reader.stats.problems), where
            assert as_points(nb.read_scalars(copy)) == expected, where


def test_a_flipped_bit_in_the_file_header_loses_nothing(root, tmp_path):
    """One flipped bit anywhere in the 20-byte header loses no point: the salt is stored three
    times (a damaged copy is outvoted), and a damaged magic or version is recognised by the
    first record checking out; either is noted."""
    folder, logged, _ = log_run(root)
    data = (folder / "events.r0.s0.log").read_bytes()
    copy = tmp_path / "events.r0.s0.log"
    for at in range(len(logfile.file_header(1))):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[at] ^= 1 << bit
            copy.write_bytes(flipped)
            reader = LogReader(copy)
            chunks = reader.read()
            got: dict = {}
            for c in chunks:
                got.setdefault(c.name, []).extend(zip(c.steps.tolist(), bits_of(c.values)))
            where = f"bit {bit} of header byte {at}: {reader.stats} {reader.stats.problems}"
            assert got == with_bits(logged), where
            assert reader.stats.corrupt_records == 0 and reader.stats.bad_records == 0, where
            assert reader.version == 2, where
            if at < 6:          # magic and version
                assert any("header is damaged" in p for p in reader.stats.problems), where
            elif at >= 8:       # the three copies of the salt
                assert any("salt" in p for p in reader.stats.problems), where


def test_every_log_has_its_own_salt_and_format_1_still_reads(root, tmp_path):
    """Two runs' logs have different salts; a format-1 log (no salt) reads as before."""
    salts = set()
    for run_id in ("a", "b"):
        run = nb.init("p", dir=root, run_id=run_id, compact=False, system_metrics=False)
        run.add_scalar("x", 1.5, step=3)
        run.finish()
        reader = LogReader(Path(run.path) / "events.r0.s0.log")
        assert [c.values.tolist() for c in reader.read()] == [[1.5]]
        assert reader.version == 2 and reader.salt != 0
        salts.add(reader.salt)
    assert len(salts) == 2
    old = tmp_path / "events.r0.s0.log"
    old.write_bytes(logfile.FILE_HEADER_V1 + logfile.meta_record({"rank": 0})
                    + logfile.key_record(0, "x")
                    + logfile.points_record(0, array("q", [1, 2]), array("d", [0.0, 0.0]),
                                           array("d", [4.0, 5.0])))
    reader = LogReader(old)
    assert [(c.name, c.steps.tolist(), c.values.tolist()) for c in reader.read()] == \
        [("x", [1, 2], [4.0, 5.0])]
    assert reader.version == 1 and reader.stats.problems == []
