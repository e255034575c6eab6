"""Fuzz the event-log reader with atheris (coverage-guided, libFuzzer): docs/testing.md.

    pip install atheris
    python3 scripts/fuzz_eventlog.py -max_total_time=300          # five minutes
    python3 scripts/fuzz_eventlog.py -atheris_runs=200000 CORPUS_DIR

Each input is read as a log two ways: as it is (any bytes: the reader must return, within
its file, with a second read of the unchanged file adding nothing), and as damage to a valid
salted log of three batches (cut where the input says, with up to four bits flipped where it
says; CRC-32 catches every such flip in frames this short): every chunk read back must be one
that was logged, in order. Any exception but the checks'
AssertionError is a finding, and so is an assertion failing; libFuzzer writes the input to
crash-<sha1> and `python3 scripts/fuzz_eventlog.py crash-<sha1>` replays it. The suite's
hypothesis tests (tests/test_fuzz_eventlog.py) check the same promises on every run.
"""
from __future__ import annotations

import os
import sys
import tempfile
from array import array

try:
    import atheris
except ImportError:
    sys.exit("scripts/fuzz_eventlog.py needs atheris: pip install atheris (docs/testing.md)")

with atheris.instrument_imports(include=["nuboard.eventlog"]):
    from nuboard.eventlog import logfile
    from nuboard.eventlog.logfile import LogReader

SALT = 0x5EED5EED


def valid_log() -> tuple[bytes, list[tuple]]:
    """A format-2 log as the writer writes one (key record, then points, per batch), and its
    chunks as (name, steps, values)."""
    parts = [logfile.file_header(SALT), logfile.meta_record({"rank": 0, "session": 0}, SALT)]
    chunks = []
    for key, name, steps in ((0, "train/loss", range(0, 40, 4)), (1, "lr", [3, 9, 10**12]),
                             (0, "train/loss", range(40, 48))):
        steps = array("q", steps)
        values = array("d", [s / 3 for s in steps])
        parts.append(logfile.key_record(key, name, SALT))
        parts.append(logfile.points_record(key, steps, array("d", [0.0] * len(steps)), values, SALT))
        chunks.append((name, tuple(steps), tuple(values)))
    return b"".join(parts), chunks


LOG, CHUNKS = valid_log()
PATH = os.path.join(tempfile.mkdtemp(prefix="nuboard-fuzz-"), "events.r0.s0.log")


def read(data: bytes) -> tuple[list[tuple], LogReader]:
    with open(PATH, "wb") as fh:
        fh.write(data)
    reader = LogReader(PATH)
    got = [(c.name, tuple(c.steps), tuple(c.values)) for c in reader.read()]
    assert 0 <= reader.offset <= len(data), (reader.offset, len(data))
    assert reader.offset + reader.stats.torn_tail_bytes <= len(data), reader.stats
    offset = reader.offset
    assert reader.read() == [] and reader.offset == offset, "a second read of an unchanged file"
    return got, reader


def is_subsequence(got: list, of: list) -> bool:
    it = iter(of)
    return all(any(g == o for o in it) for g in got)


def test_one_input(data: bytes) -> None:
    read(data)
    fdp = atheris.FuzzedDataProvider(data)
    damaged = bytearray(LOG[:fdp.ConsumeIntInRange(0, len(LOG))])
    for _ in range(fdp.ConsumeIntInRange(0, 4) if damaged else 0):
        damaged[fdp.ConsumeIntInRange(0, len(damaged) - 1)] ^= 1 << fdp.ConsumeIntInRange(0, 7)
    got, reader = read(bytes(damaged))
    assert is_subsequence(got, CHUNKS), (got, reader.stats)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
