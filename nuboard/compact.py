"""data.parquet: a compact copy of one rank's merged scalars, written at finish.

The file is derived from the event logs and never replaces them. Its key-value metadata
(b"nuboard") names the log files and the bytes of each it was built from; a reader uses it
only while the logs on disk are exactly those, so it is never older than the logs.
Rows are grouped by scalar, with each scalar's first row and count in the metadata.
"""
from __future__ import annotations

import json
import os
from array import array
from pathlib import Path
from typing import Iterable

from . import layout
from .jsonfile import TEMP_PREFIX, open_regular
from .scalars import RunReader, Scalar

PARQUET_FORMAT = 1


def write_parquet(run_dir: Path, rank: int = 0) -> Path:
    """Build data.parquet from the rank's event logs; replace the old one atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    reader = RunReader(run_dir, rank)
    reader.refresh()
    scalars = reader.scalars()
    offsets, names, counts = {}, [], []
    steps, walls, values = array("q"), array("d"), array("d")
    for name, s in scalars.items():
        offsets[name] = [len(values), len(s.values)]
        names.append(name)
        counts.append(len(s.values))
        steps.extend(s.steps)
        walls.extend(s.wall_times)
        values.extend(s.values)
    indices = array("i")
    for i, n in enumerate(counts):
        indices.extend(array("i", [i]) * n)
    key = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(names, pa.string()))
    meta = {"format": PARQUET_FORMAT, "rank": rank, "sources": reader.sources(), "keys": offsets}
    table = pa.table({"key": key, "step": pa.array(steps, pa.int64()),
                      "wall_time": pa.array(walls, pa.float64()),
                      "value": pa.array(values, pa.float64())})
    table = table.replace_schema_metadata({b"nuboard": json.dumps(meta).encode("utf-8")})
    final = run_dir / layout.PARQUET
    tmp = run_dir / f"{TEMP_PREFIX}{layout.PARQUET}.{os.getpid()}.{os.urandom(3).hex()}"
    try:
        pq.write_table(table, tmp, row_group_size=max(1, len(values)), use_dictionary=["key"],
                       compression="snappy")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    return final


def current_parquet_meta(run_dir: Path, rank: int = 0) -> tuple[bytes, dict] | None:
    """data.parquet's metadata (raw and parsed) when it was built from exactly the logs on
    disk for this rank; None when it is missing, foreign or out of date."""
    import pyarrow.parquet as pq

    try:
        with open_regular(run_dir / layout.PARQUET) as fh:      # a FIFO never blocks
            raw = (pq.read_schema(fh).metadata or {}).get(b"nuboard")
        meta = json.loads(raw) if raw else None
    except Exception:
        return None
    if not isinstance(meta, dict) or meta.get("format") != PARQUET_FORMAT or meta.get("rank") != rank:
        return None
    on_disk = []
    for _, _, log in layout.list_logs(run_dir, rank):
        try:
            on_disk.append([log.name, log.stat().st_size])
        except OSError:
            return None
    if on_disk != [list(x) for x in meta.get("sources", [])]:
        return None
    return raw, meta


def read_parquet_if_current(run_dir: Path, keys: Iterable[str] | None, rank: int = 0
                            ) -> dict[str, Scalar] | None:
    """The scalars from data.parquet, or None when it is missing, foreign or out of date."""
    import pyarrow.parquet as pq

    found = current_parquet_meta(run_dir, rank)
    if found is None:
        return None
    meta = found[1]
    try:        # ParquetFile.read gives one chunk a column; read_table gives many, far slower
        with open_regular(run_dir / layout.PARQUET) as fh:
            table = pq.ParquetFile(fh).read(columns=["step", "wall_time", "value"])
    except Exception:
        return None
    cols = [table.column(c).combine_chunks() for c in ("step", "wall_time", "value")]
    offsets = meta.get("keys", {})
    wanted = list(offsets) if keys is None else [k for k in keys if k in offsets]
    out = {}
    for name in wanted:
        start, n = offsets[name]
        out[name] = Scalar(*(_to_array(code, col, start, n)
                             for code, col in zip("qdd", cols)))
    return out


def _to_array(code: str, col, start: int, n: int) -> array:
    """Copy a slice of a null-free pyarrow column into an array.array (one memcpy)."""
    out = array(code)
    if n:
        data = col.buffers()[1]
        lo = (col.offset + start) * 8
        out.frombytes(memoryview(data)[lo: lo + n * 8])
    return out
