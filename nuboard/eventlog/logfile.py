"""The event log format: framed, checksummed binary records, and a reader for one file.

A log starts with a header: b"NBEV", the format version and flags (two little-endian u16)
and, from format 2 on, the file's salt three times (u32 each). Then come frames:

    magic  4 bytes  b"\\x8dNBr"
    length u32      length of the payload
    hcrc   u32      crc32 of magic + length, started at the salt
    payload         kind (u8) + body
    pcrc   u32      crc32 of the payload, started at the salt

The salt is a random non-zero u32 drawn when the file is created (format 1 has none: its crcs
start at 0). Logged values cannot know it, so a frame that sits inside a record's values never
checks out, and resynchronising after a damaged record cannot return points nobody logged.

Kinds: META (JSON: rank, session, run id, pid, start time), KEY (u32 key id + UTF-8 name),
POINTS (u32 key id, u32 count, u8 step mode, steps, then count f64 wall times and
count f64 values) and MEDIA (u32 length, JSON of one media entry, {"key", "step", "wall",
"kind", ...}, then a histogram's counts and edges as arrays; docs/events.md lists the
fields). Step mode 1 stores an arithmetic run of steps as start and stride; mode 0 stores
every step as an i64. Numbers are little-endian.

The reader returns every complete, valid frame. A frame that fails its checks is a torn
tail when no valid frame follows it (a write cut short: the normal end of a killed
writer's file) and a corrupt record when one does; reading resumes at the next valid frame.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from array import array
from pathlib import Path
from typing import Iterator

from nuboard.files.jsonfile import open_regular

FILE_MAGIC = b"NBEV"
FORMAT_VERSION = 2          # the format written; 1 (no salt) is still read
FILE_HEADER_V1 = FILE_MAGIC + struct.pack("<HH", 1, 0)
FILE_HEADER = FILE_HEADER_V1    # a format-1 header: with frames of salt 0, a log built by hand
_HEADER_V2 = struct.Struct("<4sHHIII")
FRAME_MAGIC = b"\x8dNBr"
_HEAD = struct.Struct("<4sII")
_CRC = _LEN = struct.Struct("<I")
_POINTS = struct.Struct("<BIIB")
_ARITH = struct.Struct("<qq")
_KEY = struct.Struct("<BI")
_MEDIA_HEAD = struct.Struct("<BI")
_EXACT = 1 << 53
FRAME_OVERHEAD = _HEAD.size + _CRC.size
MAX_PAYLOAD = 64 * 1024 * 1024
MAX_KEY_NAME = 4096

META, KEY, POINTS, MEDIA = 1, 2, 3, 4
_BIG = sys.byteorder == "big"


def _le(arr: array) -> bytes:
    if _BIG:
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def new_salt() -> int:
    """A random non-zero u32 for a new log (0 is format 1's 'no salt')."""
    while True:
        salt = int.from_bytes(os.urandom(4), "little")
        if salt:
            return salt


def file_header(salt: int) -> bytes:
    """The header of a format-2 log: magic, version, flags and the salt three times (a flipped
    bit in one copy is outvoted by the other two)."""
    return _HEADER_V2.pack(FILE_MAGIC, FORMAT_VERSION, 0, salt, salt, salt)


def frame(payload: bytes, salt: int = 0) -> bytes:
    """Frame one payload: magic, length, header crc, payload, payload crc (crcs start at salt)."""
    head = FRAME_MAGIC + _LEN.pack(len(payload))
    return b"".join((head, _CRC.pack(zlib.crc32(head, salt)), payload,
                     _CRC.pack(zlib.crc32(payload, salt))))


def meta_record(doc: dict, salt: int = 0) -> bytes:
    return frame(bytes([META]) + json.dumps(doc, ensure_ascii=False).encode("utf-8"), salt)


def media_record(doc: dict, salt: int = 0) -> bytes:
    """Frame one media entry: u32 length and JSON (key, step, wall, kind and the kind's
    fields), then, for a histogram, its counts (i64, or f64 where one is not a whole number
    within 2**53; JSON "counts_as") and edges (f64) as arrays: "bins" in the JSON says how many.
    Binary, because a viewer reads thousands of histograms at once: parsing them as JSON
    numbers took 20 microseconds each, five times the rest of the record."""
    counts, edges = doc.get("counts"), doc.get("edges")
    tail = b""
    if isinstance(counts, list) and isinstance(edges, list):
        whole = all(type(c) is int and -_EXACT <= c <= _EXACT for c in counts)
        doc = {k: v for k, v in doc.items() if k not in ("counts", "edges")}
        doc["bins"], doc["counts_as"] = len(counts), "int" if whole else "float"
        tail = _le(array("q" if whole else "d", counts)) + _le(array("d", edges))
    body = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return frame(_MEDIA_HEAD.pack(MEDIA, len(body)) + body + tail, salt)


def _media_doc(payload: memoryview) -> dict:
    """A MEDIA record's entry, counts and edges back as lists (ValueError when malformed)."""
    _, size = _MEDIA_HEAD.unpack_from(payload)
    at = _MEDIA_HEAD.size + size
    if at > len(payload):
        raise ValueError("media record shorter than its JSON")
    doc = json.loads(bytes(payload[_MEDIA_HEAD.size:at]).decode("utf-8"))
    rest = payload[at:]
    if isinstance(doc, dict) and "bins" in doc:
        bins, code = doc.pop("bins"), {"int": "q", "float": "d"}.get(doc.pop("counts_as", None))
        if type(bins) is not int or bins < 0 or code is None or \
                len(rest) != (16 * bins + 8 if bins else 0):
            raise ValueError("histogram record of the wrong size")
        doc["counts"] = _array(code, rest[:8 * bins]).tolist()
        doc["edges"] = _array("d", rest[8 * bins:]).tolist()
    elif len(rest):
        raise ValueError("media record with bytes after its JSON")
    return doc


def key_record(key_id: int, name: str, salt: int = 0) -> bytes:
    return frame(_KEY.pack(KEY, key_id) + name.encode("utf-8"), salt)


def points_record(key_id: int, steps: array, walls: array, values: array, salt: int = 0) -> bytes:
    """Frame a batch of points of one scalar; steps in an arithmetic run cost 16 bytes in all."""
    n = len(values)
    if n >= 2:
        start, stride = steps[0], steps[1] - steps[0]
        if stride > 0 and steps[-1] == start + (n - 1) * stride and \
                steps == array("q", range(start, start + n * stride, stride)):
            body = _POINTS.pack(POINTS, key_id, n, 1) + _ARITH.pack(start, stride)
            return frame(b"".join((body, _le(walls), _le(values))), salt)
    body = _POINTS.pack(POINTS, key_id, n, 0)
    return frame(b"".join((body, _le(steps), _le(walls), _le(values))), salt)


class Chunk:
    """A batch of points of one scalar, as read from a log."""
    __slots__ = ("name", "steps", "walls", "values")

    def __init__(self, name: str, steps: array, walls: array, values: array):
        self.name, self.steps, self.walls, self.values = name, steps, walls, values


class ReadStats:
    """What a reader met: good records, corrupt ones skipped, bad ones, and a torn tail."""

    def __init__(self) -> None:
        self.records = 0
        self.corrupt_records = 0
        self.bad_records = 0
        self.torn_tail_bytes = 0
        self.header_ok = True
        self.problems: list[str] = []

    def __repr__(self) -> str:
        return (f"ReadStats(records={self.records}, corrupt_records={self.corrupt_records}, "
                f"bad_records={self.bad_records}, torn_tail_bytes={self.torn_tail_bytes})")

    @property
    def torn_tail(self) -> bool:
        return self.torn_tail_bytes > 0


class LogReader:
    """Reads one event log, and on each call to read() what has been appended since.

    Attributes:
        offset: where the next read() starts (the end of the last complete frame).
        meta: the META record of the file, once read.
        stats: counts of what was met so far.
    """

    def __init__(self, path: "str | Path"):
        self.path = Path(path)
        self.offset = 0
        self.meta: dict | None = None
        self.keys: dict[int, str] = {}
        self.media: list[dict] = []             # the MEDIA records read, in order
        self.stats = ReadStats()
        self.version: int | None = None     # the file's format, once its header is read
        self.salt = 0

    def read(self) -> list[Chunk]:
        """Read the complete frames appended since the last call; stop cleanly at a torn tail."""
        return list(self.read_iter())

    def read_iter(self) -> Iterator[Chunk]:
        """As read(), a chunk at a time as its record is decoded, so that a caller merging them
        holds one copy of the points rather than two (RunReader: 10 M points read with 31,000
        fewer pages to fault in). The offset moves past each chunk as it is handed out.

        The file is read READ_BLOCK bytes at a time while its frames check out, so a large log
        is never all in memory at once; a frame that does not check out short of the end makes
        the rest of the file read whole, and it is then judged as before (damaged, or a torn
        tail when no valid frame follows it).
        """
        try:
            with open_regular(self.path) as fh:
                fh.seek(self.offset)
                yield from self._frames(fh)
        except OSError as exc:
            self._problem(f"cannot read {self.path}: {exc}")

    def _frames(self, fh) -> Iterator[Chunk]:
        data = fh.read(READ_BLOCK)
        whole = len(data) < READ_BLOCK            # data runs to the end of the file
        base = 0
        if self.offset == 0:
            if not whole and not _plain_header(data):     # damaged or cut: judged on it all
                data += fh.read()
                whole = True
            base = self._read_header(data)
            if base is None:
                return
        start = self.offset
        pos, salt = base, self.salt
        self.stats.torn_tail_bytes = 0
        while True:
            end = len(data)
            while pos < end:
                size = _frame_size(data, pos, salt)
                if size is None:
                    if not whole:
                        break                     # cut by the block, or damaged: read on
                    nxt = _next_frame(data, pos + 1, salt)
                    if nxt is None:
                        self.stats.torn_tail_bytes = end - pos
                        self.offset = start + pos
                        return
                    self.stats.corrupt_records += 1
                    self._problem(f"{self.path}: skipped {nxt - pos} damaged bytes at offset "
                                  f"{start + pos}")
                    pos = nxt
                    continue
                payload = memoryview(data)[pos + _HEAD.size: pos + size - _CRC.size]
                self.stats.records += 1
                chunk = self._decode(payload)
                pos += size
                self.offset = start + pos
                if chunk is not None:
                    yield chunk
            if whole:
                break
            short = _frame_short(data, pos, salt)
            want = -1 if short is None else max(READ_BLOCK, short)
            more = fh.read(want)
            whole = want < 0 or len(more) < want
            data = data[pos:] + more
            start, pos = start + pos, 0
        self.offset = start + pos

    def _read_header(self, data: bytes) -> int | None:
        """Read the file header: the offset of the first frame, or None to stop (a header
        not yet whole, or a format this reader does not know)."""
        if len(data) < len(FILE_HEADER_V1):
            self.stats.torn_tail_bytes = len(data)
            return None
        version = struct.unpack_from("<H", data, 4)[0]
        if data[:4] == FILE_MAGIC and version == 1:
            self.version = 1
            return len(FILE_HEADER_V1)
        if data[:4] == FILE_MAGIC and version == 2:
            if len(data) < _HEADER_V2.size:
                self.stats.torn_tail_bytes = len(data)
                return None
            self.version, self.salt = 2, self._voted_salt(data)
            return _HEADER_V2.size
        self.stats.header_ok = False
        guess = _guess_format(data)          # a flipped bit in the magic or the version?
        if guess is not None:
            self.version, self.salt, base = guess
            self._problem(f"{self.path}: the header is damaged; its first record checks out "
                          f"as format {self.version}, read as such")
            if self.version == 2:
                self._voted_salt(data)
            return base
        if data[:4] == FILE_MAGIC and version > FORMAT_VERSION:
            self._problem(f"{self.path} has event log format {version}; this NuBoard "
                          f"reads up to {FORMAT_VERSION}: upgrade nuboard")
            return None
        self._problem(f"{self.path} is not a NuBoard event log (bad header)")
        self.version = 1
        return len(FILE_HEADER_V1)

    def _voted_salt(self, data: bytes) -> int:
        salt, agree = _majority_salt(data)
        if not agree:
            self._problem(f"{self.path}: a copy of the salt in the header is damaged "
                          f"(outvoted by the other two)")
        return salt

    def _decode(self, payload: memoryview) -> Chunk | None:
        """The points of a POINTS record; None for any other (KEY and META are kept)."""
        kind = payload[0] if len(payload) else 0
        try:
            if kind == POINTS:
                _, key_id, n, mode = _POINTS.unpack_from(payload)
                at = _POINTS.size
                if mode == 1:
                    start, stride = _ARITH.unpack_from(payload, at)
                    at += _ARITH.size
                    if len(payload) != at + 16 * n or stride <= 0:
                        raise ValueError("points record of the wrong size")
                    if start < 0 or start + (n - 1) * stride >= 1 << 63:
                        raise ValueError("points record with steps outside int64")
                    steps = _arithmetic(start, stride, n)
                elif mode == 0:
                    if len(payload) != at + 24 * n:
                        raise ValueError("points record of the wrong size")
                    steps = _array("q", payload[at: at + 8 * n])
                    at += 8 * n
                else:
                    raise ValueError(f"unknown step mode {mode}")
                walls = _array("d", payload[at: at + 8 * n])
                values = _array("d", payload[at + 8 * n: at + 16 * n])
                name = self.keys.get(key_id)
                if name is None:
                    raise ValueError(f"points for unknown key {key_id}")
                return Chunk(name, steps, walls, values)
            elif kind == KEY:
                _, key_id = _KEY.unpack_from(payload)
                raw = bytes(payload[_KEY.size:])
                if not raw or len(raw) > MAX_KEY_NAME:
                    raise ValueError("key name empty or too long")
                self.keys[key_id] = raw.decode("utf-8")
            elif kind == META:
                self.meta = json.loads(bytes(payload[1:]).decode("utf-8"))
            elif kind == MEDIA:
                self.media.append(check_media(_media_doc(payload)))
            else:
                raise ValueError(f"unknown record kind {kind}")
        except Exception as exc:   # any record that makes no sense is counted and skipped
            self.stats.bad_records += 1
            self._problem(f"{self.path}: skipped a bad record ({exc})")
        return None

    def _problem(self, text: str) -> None:
        if len(self.stats.problems) < 100:
            self.stats.problems.append(text)


MEDIA_KINDS = ("image", "histogram", "text", "table", "audio")


def check_media(doc: object) -> dict:
    """A MEDIA record's JSON as read: a dict with a str key, an int step from 0, a finite
    wall time and a known kind (ValueError otherwise: the record is counted as bad)."""
    if not isinstance(doc, dict):
        raise ValueError("media record is not a JSON object")
    key, step, wall, kind = doc.get("key"), doc.get("step"), doc.get("wall"), doc.get("kind")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_NAME:
        raise ValueError("media record without a key")
    if type(step) is not int or not 0 <= step < 1 << 63:
        raise ValueError("media record with a bad step")
    if type(wall) not in (int, float) or wall != wall or wall in (float("inf"), float("-inf")):
        raise ValueError("media record with a bad wall time")
    if kind not in MEDIA_KINDS:
        raise ValueError(f"media record of unknown kind {str(kind)[:40]!r}")
    file = doc.get("file")
    if file is not None and not _inside_media(file):
        raise ValueError("media record naming a file outside media/")
    if kind == "histogram" and not (isinstance(doc.get("counts"), list) and isinstance(doc.get("edges"), list)):
        raise ValueError("histogram record without its counts and edges")
    if kind == "text" and not isinstance(doc.get("text"), str) and file is None:
        raise ValueError("text record with neither text nor a file")
    if kind in ("image", "table", "audio") and file is None:
        raise ValueError(f"{kind} record without a file")
    cells = doc.get("cells")
    if cells is not None and not (isinstance(cells, list) and all(_inside_media(c) for c in cells)):
        raise ValueError("media record naming a cell file outside media/")
    return doc


def _inside_media(file: object) -> bool:
    """Whether a record's file is a plain relative path under media/ (no '..', no root)."""
    if not isinstance(file, str) or not file.startswith("media/") or "\\" in file or "\0" in file:
        return False
    return all(part not in ("", ".", "..") for part in file.split("/"))


READ_BLOCK = 8 << 20       # bytes of a log read at a time while its frames check out
ARROW_FROM = 4096          # points in a record from which loaded Arrow kernels build its steps


def _arithmetic(start: int, stride: int, n: int) -> array:
    """The steps start, start + stride, ... (n of them) as an int64 array.

    array("q", range(...)) makes a Python int of each step: 10 M steps cost 450 ms. When the
    process has pyarrow's kernels loaded already (the viewer), a cumulative sum of n strides
    builds them in C, in 70 ms; a process without them (a training script reading its logs)
    does not pay pyarrow's import for it.
    """
    pc = sys.modules.get("pyarrow.compute")
    if pc is None or n < ARROW_FROM:
        return array("q", range(start, start + n * stride, stride))
    import pyarrow as pa

    # Arrays and scalars made from buffers: pa.scalar and pa.array of Python values import
    # pandas (0.3 to 0.5 s) the first time, which the viewer's first chart would wait for.
    def scalar(value: int):
        return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(array("q", [value]))])[0]

    ramp = pc.cumulative_sum(pa.repeat(scalar(stride), n), start=scalar(start - stride))
    out = array("q")
    out.frombytes(memoryview(ramp.buffers()[1])[ramp.offset * 8:(ramp.offset + n) * 8])
    return out


def _array(code: str, raw: memoryview) -> array:
    out = array(code)
    out.frombytes(raw)
    if _BIG:
        out.byteswap()
    return out


def _majority_salt(data: bytes) -> tuple[int, bool]:
    """The salt of a format-2 header by a bitwise majority of its three copies, and whether
    the copies agree."""
    a, b, c = _HEADER_V2.unpack_from(data)[3:]
    return (a & b) | (a & c) | (b & c), a == b == c


def _guess_format(data: bytes) -> tuple[int, int, int] | None:
    """(version, salt, first frame offset) of a log whose magic or version field is damaged:
    format 2 when a frame right after a 20-byte header checks out with the voted salt, format 1
    when one after 8 bytes checks out unsalted; None when neither does."""
    if len(data) >= _HEADER_V2.size:
        salt = _majority_salt(data)[0]
        if salt and _frame_size(data, _HEADER_V2.size, salt) is not None:
            return 2, salt, _HEADER_V2.size
    if _frame_size(data, len(FILE_HEADER_V1), 0) is not None:
        return 1, 0, len(FILE_HEADER_V1)
    return None


def _payload_length(data: bytes, pos: int, salt: int) -> int | None:
    """The payload length a whole, checked frame header at pos gives; None when there is none."""
    if pos + _HEAD.size > len(data):
        return None
    magic, length, hcrc = _HEAD.unpack_from(data, pos)
    if magic != FRAME_MAGIC or length > MAX_PAYLOAD or length == 0:
        return None
    if zlib.crc32(memoryview(data)[pos: pos + 8], salt) != hcrc:
        return None
    return length


def _frame_size(data: bytes, pos: int, salt: int) -> int | None:
    """The size of the valid frame at pos, or None when there is none there."""
    length = _payload_length(data, pos, salt)
    if length is None:
        return None
    end = pos + _HEAD.size + length
    if end + _CRC.size > len(data):
        return None
    if zlib.crc32(memoryview(data)[pos + _HEAD.size: end], salt) != _CRC.unpack_from(data, end)[0]:
        return None
    return end + _CRC.size - pos


def _plain_header(data: bytes) -> bool:
    """Whether data starts with a whole, undamaged header of a format this reader knows."""
    if len(data) < len(FILE_HEADER_V1) or data[:4] != FILE_MAGIC:
        return False
    version = struct.unpack_from("<H", data, 4)[0]
    return version == 1 or (version == 2 and len(data) >= _HEADER_V2.size)


def _frame_short(data: bytes, pos: int, salt: int) -> int | None:
    """How many bytes past the end of data the frame at pos still needs, when it is only cut
    short (its header cut, or whole and checking out with its payload running past the end);
    None when what is there does not check out."""
    if pos + _HEAD.size > len(data):
        return pos + _HEAD.size - len(data)
    length = _payload_length(data, pos, salt)
    if length is None:
        return None
    missing = pos + _HEAD.size + length + _CRC.size - len(data)
    return missing if missing > 0 else None


def _next_frame(data: bytes, start: int, salt: int) -> int | None:
    """The offset of the next valid frame at or after start, or None."""
    while True:
        at = data.find(FRAME_MAGIC, start)
        if at < 0:
            return None
        if _frame_size(data, at, salt) is not None:
            return at
        start = at + 1


def dump_lines(path: "str | Path", limit: int = 20):
    """Describe a log as lines of text for people: header, each record, then the stats."""
    reader = LogReader(path)
    chunks = reader.read()
    yield f"file {reader.path}"
    if reader.version is not None:
        yield f"format {reader.version}" + (f" salt {reader.salt:#010x}" if reader.version >= 2 else "")
    if reader.meta is not None:
        yield "meta " + json.dumps(reader.meta, ensure_ascii=False)
    for doc in reader.media[:limit * 50]:
        yield "media " + _media_line(doc)
    if len(reader.media) > limit * 50:
        yield f"media ... ({len(reader.media) - limit * 50} more)"
    for chunk in chunks:
        n = len(chunk.values)
        shown = ", ".join(f"{s}:{v!r}" for s, v in zip(chunk.steps[:limit], chunk.values[:limit]))
        more = f", ... ({n - limit} more)" if n > limit else ""
        yield f"points {chunk.name!r} n={n} [{shown}{more}]"
    s = reader.stats
    yield (f"records={s.records} corrupt_skipped={s.corrupt_records} bad={s.bad_records} "
           f"torn_tail_bytes={s.torn_tail_bytes}")
    for text in s.problems:
        yield "problem " + text


def _media_line(doc: dict) -> str:
    """One media record for people: key, step, kind, then its fields (long ones cut)."""
    rest = {k: v for k, v in doc.items() if k not in ("key", "step", "wall", "kind")}
    for name in ("counts", "edges"):
        if isinstance(rest.get(name), list) and len(rest[name]) > 8:
            rest[name] = rest[name][:8] + [f"... ({len(rest[name]) - 8} more)"]
    if isinstance(rest.get("text"), str) and len(rest["text"]) > 200:
        rest["text"] = rest["text"][:200] + f"... ({len(rest['text'])} chars)"
    return (f"{doc['key']!r} step={doc['step']} {doc['kind']} wall={doc['wall']} "
            + json.dumps(rest, ensure_ascii=False))
