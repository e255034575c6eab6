"""The TFRecord framing of TensorBoard event files, read with every length bounded and checked.

A record is: its length (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data,
the masked CRC-32C of the data. `Records` yields each record's data in order and stops at the
first record that is torn (the file ends inside it) or damaged (a CRC does not match, or its
length runs past the end of the file), as TensorBoard's own reader does; `stopped` then says
where and why. The file is opened without blocking (files.jsonfile.open_regular) and must be a
regular file, so a FIFO or a device named like an event file is refused at once, not waited on.
"""
from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import Callable, Iterator

from nuboard.files.jsonfile import open_regular

from .source_runs import UnreadableRunError

_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words ('a FIFO', 'a socket', ...)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


class Records:
    """The records of one TFRecord file: iterate for each record's data, then read `stopped`.

    stopped: None when the file was read to its end; else one line saying at which byte the
        read stopped and why ('a torn record ...', 'a damaged record ...').
    """

    def __init__(self, path: Path, masked_crc: Callable[[bytes], int]):
        self.path = path
        self.stopped: str | None = None
        self._crc = masked_crc

    def __iter__(self) -> Iterator[bytes]:
        try:
            f = open_regular(self.path)         # never blocks on a FIFO swapped in since listing
        except OSError as exc:
            raise UnreadableRunError(f"cannot read event file {self.path.name!r}: "
                                     f"{exc.strerror or exc}") from None
        with f:
            size = os.fstat(f.fileno()).st_size
            offset = 0
            while True:
                header = f.read(_HEADER.size)
                if not header:
                    return
                if len(header) < _HEADER.size:
                    self._stop(offset, size, "a torn record (the file ends inside it)")
                    return
                length, header_crc = _HEADER.unpack(header)
                if self._crc(header[:8]) != header_crc:
                    self._stop(offset, size, "a damaged record (its length fails its checksum)")
                    return
                if length > size - offset - _HEADER.size - _CRC.size:
                    # A length past the end: a torn tail, or a damaged one; never read whole.
                    self._stop(offset, size, "a torn record (the file ends inside it)")
                    return
                body = f.read(length + _CRC.size)
                if len(body) < length + _CRC.size:
                    self._stop(offset, size, "a torn record (the file ends inside it)")
                    return
                data = body[:length]
                if self._crc(data) != _CRC.unpack(body[length:])[0]:
                    self._stop(offset, size, "a damaged record (its data fails its checksum)")
                    return
                offset += _HEADER.size + length + _CRC.size
                yield data

    def _stop(self, offset: int, size: int, why: str) -> None:
        left = max(size - offset, 0)
        self.stopped = (f"event file {self.path.name!r}: its last {left:,} byte{'s' * (left != 1)}, "
                        f"from byte {offset:,}, left out: {why}, where TensorBoard stops too")
