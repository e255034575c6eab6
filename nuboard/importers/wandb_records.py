"""The records of a W&B run file (`run-<id>.wandb`), as bytes, one per record.

wandb writes a run's records (its config, history rows, summary, exit...) in the block format of
LevelDB's log: after a 7-byte file header (`:W&B`, the magic 0xBEE1 and a version byte 0), the
file is a sequence of 32 KiB blocks; each record is one or more chunks, each with a 7-byte
header (a CRC-32 of the chunk's type byte and data, its length, its type: FULL, or FIRST,
MIDDLE... LAST for a record split over blocks), and a block's last 6 bytes or fewer are zero
padding. wandb has no public reader of these files; this module reads the framing only (the
records are protobuf `wandb_internal_pb2.Record`s, which from_wandb decodes with the wandb
package's own definitions). Standard library only.

A chunk whose CRC does not match, a record cut by the end of the file (a run still writing, or
killed) and a broken chain of chunks are skipped and counted, never raised: the records around
them are still read.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

MAGIC = b":W&B\xe1\xbe"
HEADER = 7
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_CHUNK = struct.Struct("<IHB")


class NotAWandbFile(ValueError):
    """The file does not start with the header of a W&B run file (or a version it knows)."""


@dataclass
class Framing:
    """What reading a file found: the records (bytes) and how many chunks were skipped."""
    records: list
    bad_chunks: int = 0


def read_records(path: "str | Path") -> Framing:
    """Every whole record of a run file, in order.

    Raises:
        NotAWandbFile: no W&B header (or a version other than 0).
        OSError: the file cannot be read.
    """
    data = Path(path).read_bytes()
    return split_records(data)


def split_records(data: bytes) -> Framing:
    """The records of a run file's bytes (see read_records)."""
    if len(data) < HEADER or data[:6] != MAGIC or data[6] != 0:
        raise NotAWandbFile("not a W&B run file: it does not start with ':W&B' and version 0")
    out = Framing([])
    pieces: list[bytes] | None = None
    pos = HEADER
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:                        # the block's zero padding
            pos += left
            continue
        crc, length, kind = _CHUNK.unpack_from(data, pos)
        if crc == 0 and length == 0 and kind == 0:
            pos += left                          # padding to the end of the block
            continue
        body = data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if len(body) < length or (zlib.crc32(bytes([kind]) + body) & 0xFFFFFFFF) != crc \
                or kind not in (FULL, FIRST, MIDDLE, LAST):
            out.bad_chunks += 1
            pieces = None
            if len(body) < length:
                break                            # cut by the end of the file
            continue
        if kind == FULL:
            if pieces is not None:
                out.bad_chunks += 1              # a chain that never ended
            pieces = None
            out.records.append(body)
        elif kind == FIRST:
            pieces = [body]
        elif pieces is None:
            out.bad_chunks += 1                  # MIDDLE or LAST without a FIRST
        elif kind == MIDDLE:
            pieces.append(body)
        else:
            pieces.append(body)
            out.records.append(b"".join(pieces))
            pieces = None
    return out
