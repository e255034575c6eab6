"""Where an event log's complete records end: the cut a copy of a growing log is taken at.

    data = read_complete(path)            # the log up to the end of its last complete record
    complete_length(data) == len(data)    # a copy that is a whole log (no torn tail)

A writer appends whole frames, but a reader can meet the file while the last one is half
written. `nuboard sync` and `nb.init(sync_to=)` send a log cut at the end of its last complete
record, so the bucket holds an exact prefix of what was flushed that ends on a record
boundary, never a torn copy. The frames are checked as LogReader checks them (header, salt,
crcs; a damaged frame followed by a good one is skipped over, as the reader resynchronises),
but nothing is decoded.
"""
from __future__ import annotations

import os
from pathlib import Path

from nuboard.files.jsonfile import open_regular

from .logfile import LogReader, _frame_size, _next_frame


def complete_length(source: "bytes | str | os.PathLike[str]") -> int:
    """The length of the longest prefix of a log (its bytes, or a file's) that ends on a
    complete record: 0 when not even its header is whole or it is no event log."""
    data = source if isinstance(source, (bytes, bytearray, memoryview)) else _read(source)
    data = bytes(data)
    reader = LogReader("<log>")
    base = reader._read_header(data)
    if base is None:
        return 0                        # the header is not whole yet, or of a later format
    if not reader.stats.header_ok and not _checks_out(data, base, reader.salt):
        return 0                        # no header and no frame: not an event log at all
    pos = last = base
    end = len(data)
    while pos < end:
        size = _frame_size(data, pos, reader.salt)
        if size is not None:
            pos += size
            last = pos
            continue
        nxt = _next_frame(data, pos + 1, reader.salt)
        if nxt is None:
            break                       # a torn tail: the copy ends before it
        pos = nxt                       # a damaged record: the reader skips it, so may the copy
    return min(last, end)


def read_complete(path: "str | os.PathLike[str]") -> bytes:
    """The log at `path` read once, cut at the end of its last complete record."""
    data = _read(path)
    return data[:complete_length(data)]


def is_whole_log(data: bytes) -> bool:
    """Whether `data` is an event log that ends on a record boundary (an empty one is not)."""
    return len(data) > 0 and complete_length(data) == len(data)


def _checks_out(data: bytes, base: int, salt: int) -> bool:
    return base < len(data) and _frame_size(data, base, salt) is not None


def _read(path: "str | os.PathLike[str]") -> bytes:
    with open_regular(Path(path)) as fh:
        return fh.read()
