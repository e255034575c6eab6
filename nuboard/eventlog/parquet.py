"""data.parquet: a compact copy of one rank's merged scalars, written at finish.

The file is derived from the event logs and never replaces them. Its key-value metadata
(b"nuboard") names the log files and the bytes of each it was built from; a reader uses it
only while the logs on disk are exactly those, so it is never older than the logs.
Rows are grouped by scalar, with each scalar's first row and count in the metadata, and
("sessions") each session's first and last wall time and whether it is a fork's copied history
("spans": [session, first, last, copied]), and where each scalar's sessions begin ("starts":
{name: [[session, first index], ...]}), for the relative axes of the Charts page; a file
written before them lacks "sessions" (web/chartdata.py then reads the logs of a run of more
than one session).
Every read opens the file with jsonfile.open_regular (open_parquet): a FIFO, socket or
device named data.parquet is never opened for a blocking read.

The file is checked as the logs are (format 2): the metadata holds the CRC-32 of its own other
fields ("meta_crc32") and of each column's values as read back ("crc32": step, wall_time,
value), and the number of rows. A reader uses the file only when the metadata's CRC matches,
and its columns only when their types, lengths and CRCs match; otherwise it reads the logs, as
for a stale file. A flipped bit anywhere (data pages, page headers, the footer) is never a
wrong value, and a crafted file is never columns of different lengths.
"""
from __future__ import annotations

import contextlib
import json
import os
import zlib
from array import array
from pathlib import Path
from typing import Iterable, Iterator

from nuboard.files import layout
from nuboard.files.jsonfile import TEMP_PREFIX, open_regular

from .reader import RunReader, Scalar

PARQUET_FORMAT = 2          # 2: with the CRCs (a format-1 file is read as stale: the logs)
COLUMNS = ("step", "wall_time", "value")
# Steps delta-encoded (they mostly rise by one: a few bits each); floats split into byte
# streams, which snappy then compresses (plain floats it barely shrinks, at a cost on every
# read): half the size of plain snappy, and read three times faster.
COLUMN_ENCODING = {"step": "DELTA_BINARY_PACKED", "wall_time": "BYTE_STREAM_SPLIT",
                   "value": "BYTE_STREAM_SPLIT"}


def write_parquet(run_dir: Path, rank: int = 0) -> Path:
    """Build data.parquet from the rank's event logs; replace the old one atomically."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    reader = RunReader(run_dir, rank)
    reader.refresh()
    scalars = reader.scalars_by_session()
    offsets, names, counts, starts = {}, [], [], {}
    steps, walls, values = array("q"), array("d"), array("d")
    for name, (s, blocks) in scalars.items():
        offsets[name] = [len(values), len(s.values)]
        starts[name] = [list(b) for b in blocks]
        names.append(name)
        counts.append(len(s.values))
        steps.extend(s.steps)
        walls.extend(s.wall_times)
        values.extend(s.values)
    indices = array("i")
    for i, n in enumerate(counts):
        indices.extend(array("i", [i]) * n)
    key = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(names, pa.string()))
    meta = {"format": PARQUET_FORMAT, "rank": rank, "sources": reader.sources(), "keys": offsets,
            "rows": len(values), "sessions": {
                "spans": [[x.number, x.first_wall, x.last_wall, x.copied] for x in reader.sessions()],
                "starts": starts},
            "crc32": {name: zlib.crc32(column) for name, column in zip(COLUMNS, (steps, walls, values))}}
    table = pa.table({"key": key, "step": pa.array(steps, pa.int64()),
                      "wall_time": pa.array(walls, pa.float64()),
                      "value": pa.array(values, pa.float64())})
    meta["first_wall"] = pc.min(table.column("wall_time")).as_py() if len(values) else None
    meta["meta_crc32"] = _meta_crc(meta)
    table = table.replace_schema_metadata({b"nuboard": json.dumps(meta).encode("utf-8")})
    final = run_dir / layout.PARQUET
    tmp = run_dir / f"{TEMP_PREFIX}{layout.PARQUET}.{os.getpid()}.{os.urandom(3).hex()}"
    try:
        pq.write_table(table, tmp, row_group_size=max(1, len(values)), use_dictionary=["key"],
                       compression="snappy", column_encoding=COLUMN_ENCODING)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    return final


@contextlib.contextmanager
def open_parquet(run_dir: Path, *, whole: bool = False) -> Iterator:
    """data.parquet of a run folder as a pyarrow.parquet.ParquetFile, opened with open_regular.

    whole=True reads the file into memory first, for a read of all its data: Arrow then
    decodes without calling back into Python for each read, each a wait for the GIL while
    another thread holds it (the viewer's other requests): 12 runs' files took 470 ms read
    whole against 580 ms through the file object beside a thread busy in Python.

    Raises OSError (NotRegularFileError for a FIFO, socket, device or folder) when it cannot
    be opened, and pyarrow's errors when it is not a Parquet file.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_regular(Path(run_dir) / layout.PARQUET) as fh:
        yield pq.ParquetFile(pa.BufferReader(fh.read()) if whole else fh)


def _current(run_dir: Path, meta: object, rank: int) -> bool:
    """Whether parsed metadata says the file was built from exactly this rank's logs on disk."""
    if not isinstance(meta, dict) or meta.get("format") != PARQUET_FORMAT or meta.get("rank") != rank:
        return False
    on_disk = []
    for _, _, log in layout.list_logs(run_dir, rank):
        try:
            on_disk.append([log.name, log.stat().st_size])
        except OSError:
            return False
    return on_disk == meta.get("sources")


def _meta_crc(meta: dict) -> int:
    """The CRC-32 of the metadata's fields but meta_crc32 itself (as canonical JSON)."""
    rest = {k: v for k, v in meta.items() if k != "meta_crc32"}
    return zlib.crc32(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def _raw_meta(pf) -> tuple[bytes, dict] | None:
    """data.parquet's raw metadata and its parsed form, when it is of this format and its
    CRC matches; else None (missing, foreign, of format 1, or damaged)."""
    raw = (pf.schema_arrow.metadata or {}).get(b"nuboard")
    if not raw or len(raw) > 64 << 20:
        return None
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != PARQUET_FORMAT or \
            meta.get("meta_crc32") != _meta_crc(meta):
        return None
    return raw, meta


class ParquetChangedError(ValueError):
    """data.parquet's metadata is no longer the one its reader checked: it was replaced."""


class ParquetDamagedError(ParquetChangedError):
    """data.parquet's columns are not what its metadata says (type, length or CRC-32)."""


def check_columns(table, meta: dict) -> None:
    """Raise ParquetDamagedError unless the table's step, wall_time and value columns have the
    types write_parquet writes, no nulls, the metadata's number of rows, and its CRC-32s.

    The CRC is taken over the values as decoded (zlib.crc32 over each chunk's buffer): 24
    bytes a point, about 0.25 s for 10 M points on this machine.
    """
    import pyarrow as pa

    where = "data.parquet"
    rows, crcs = meta.get("rows"), meta.get("crc32")
    if type(rows) is not int or not isinstance(crcs, dict) or table.num_rows != rows:
        raise ParquetDamagedError(f"{where} holds {table.num_rows} rows, its metadata {rows!r}")
    for name, kind in zip(COLUMNS, (pa.int64(), pa.float64(), pa.float64())):
        column = table.column(name)
        if column.type != kind or column.null_count or len(column) != rows:
            raise ParquetDamagedError(f"{where} column {name!r} is not {len(column)} {kind} "
                                      "values without nulls")
        crc = 0
        for chunk in column.chunks:
            if len(chunk):
                lo = chunk.offset * 8
                crc = zlib.crc32(memoryview(chunk.buffers()[1])[lo: lo + len(chunk) * 8], crc)
        if crc != crcs.get(name):
            raise ParquetDamagedError(f"{where} column {name!r} does not match its CRC-32")


def current_parquet_meta(run_dir: Path, rank: int = 0) -> tuple[bytes, dict] | None:
    """data.parquet's metadata (raw and parsed) when it was built from exactly the logs on
    disk for this rank; None when it is missing, not a regular file, foreign or out of date."""
    try:
        with open_parquet(run_dir) as pf:
            found = _raw_meta(pf)
    except Exception:
        return None
    if found is None or not _current(run_dir, found[1], rank):
        return None
    return found     # type: ignore[return-value]


def read_table(run_dir: Path, meta: bytes):
    """data.parquet's step, wall_time and value columns as a pyarrow Table, if its raw
    metadata is still `meta` (as current_parquet_meta gave it); else ParquetChangedError.

    Raises OSError when it cannot be opened, pyarrow's errors when it is not Parquet, and
    ParquetDamagedError (a ParquetChangedError) when its columns fail check_columns.
    """
    with open_parquet(run_dir, whole=True) as pf:
        found = _raw_meta(pf)
        if found is None or found[0] != meta:
            raise ParquetChangedError(f"{Path(run_dir) / layout.PARQUET} was replaced")
        # ParquetFile.read gives one chunk a column; read_table gives many, far slower. One
        # thread: the viewer reads this while the browser loads on the same cores, and Arrow's
        # pool cost twice the CPU for 12 runs' files (10 M points read in 0.5 s, not 0.4 s);
        # and the buffers lie over Python bytes, which a pool thread may hold at exit (item 4)
        table = pf.read(columns=list(COLUMNS), use_threads=False)
    check_columns(table, found[1])
    return table


def first_wall_time(run_dir: Path) -> float | None:
    """The least wall time in data.parquet, from its checked metadata (no data read; not the
    column statistics, which no CRC covers); None when it has none or cannot be read."""
    try:
        with open_parquet(run_dir) as pf:
            found = _raw_meta(pf)
    except Exception:
        return None
    wall = found[1].get("first_wall") if found is not None else None
    return wall if type(wall) is float else None


def read_parquet_if_current(run_dir: Path, keys: Iterable[str] | None, rank: int = 0
                            ) -> dict[str, Scalar] | None:
    """The scalars from data.parquet, or None when it is missing, foreign or out of date."""
    try:
        with open_parquet(run_dir, whole=True) as pf:
            found = _raw_meta(pf)
            if found is None or not _current(run_dir, found[1], rank):
                return None
            # One chunk a column (read_table gives many, far slower), decoded on this thread:
            # the buffers lie over Python bytes, and an Arrow pool thread that still held one
            # at interpreter exit aborted the process (issue 30, item 4)
            table = pf.read(columns=list(COLUMNS), use_threads=False)
        check_columns(table, found[1])
    except Exception:                   # not Parquet, damaged, or not what its CRCs say
        return None
    cols = [table.column(c).combine_chunks() for c in ("step", "wall_time", "value")]
    offsets = found[1].get("keys", {})
    try:
        wanted = list(offsets) if keys is None else [k for k in keys if k in offsets]
        return {name: Scalar(*(_to_array(code, col, *_span(offsets[name], len(col)))
                               for code, col in zip("qdd", cols)))
                for name in wanted}
    except (TypeError, ValueError):     # metadata of the wrong shape: read the logs instead
        return None


def _span(where: object, rows: int) -> tuple[int, int]:
    """A scalar's [first row, count] from the metadata, checked against the table."""
    start, n = where                                        # type: ignore[misc]
    if not (type(start) is int and type(n) is int and 0 <= start and 0 <= n and start + n <= rows):
        raise ValueError(f"rows {where!r} outside the table of {rows}")
    return start, n


def _to_array(code: str, col, start: int, n: int) -> array:
    """Copy a slice of a null-free pyarrow column into an array.array (one memcpy)."""
    out = array(code)
    if n:
        data = col.buffers()[1]
        lo = (col.offset + start) * 8
        out.frombytes(memoryview(data)[lo: lo + n * 8])
    return out
