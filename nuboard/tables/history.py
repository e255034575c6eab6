"""nb.history: every point of the runs a query matches, one row a point, as a pyarrow.Table.

A finished run is read from its data.parquet (the step, wall_time and value columns as they
are, a key's rows sliced by the file's own offsets), a running run or one without a current
data.parquet from its event logs, as read_scalars does. The project, run_id and key columns
are dictionary arrays: each run's chunk holds only integer codes into one shared dictionary.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, NamedTuple

import pyarrow as pa

from nuboard.eventlog.parquet import ParquetChangedError, current_parquet_meta, read_table
from nuboard.eventlog.source import rank_scalars
from nuboard.files import layout

from .project import matching_runs

_NAMES = pa.dictionary(pa.int32(), pa.string())
HISTORY_SCHEMA = pa.schema([("project", _NAMES), ("run_id", _NAMES), ("rank", pa.int32()),
                            ("key", _NAMES), ("step", pa.int64()), ("wall_time", pa.float64()),
                            ("value", pa.float64())])
"""The columns of nb.history's table, in order."""


class _Chunk(NamedTuple):
    """One run's points: the run's position, its key codes (into the shared key dictionary),
    and its step, wall_time and value arrays."""
    run: int
    keys: pa.Array
    columns: list


def _parquet_points(run_dir: Path, rank: int, match, codes: dict[str, int]) -> _Chunk | None:
    """The points of a current data.parquet; None when there is none (or it changed)."""
    found = current_parquet_meta(run_dir, rank)
    if found is None:
        return None
    raw, meta = found
    try:
        table = read_table(run_dir, raw)
    except (ParquetChangedError, OSError, pa.ArrowException):
        return None
    spans = meta.get("keys")
    if not isinstance(spans, dict):
        return None
    parts, keys = [], []
    for name, span in spans.items():
        if not (isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span)
                and 0 <= span[0] and 0 <= span[1] and span[0] + span[1] <= table.num_rows):
            return None                              # metadata of the wrong shape: read the logs
        if span[1] and (match is None or match(name)):
            parts.append(table.slice(span[0], span[1]))
            keys.append(pa.repeat(pa.scalar(codes.setdefault(name, len(codes)), pa.int32()), span[1]))
    if parts and len(parts) == len(spans) and _back_to_back(list(spans.values()), table.num_rows):
        parts = [table]                              # every row, in the file's order: no copy
    return _chunk(parts, keys)


def _back_to_back(spans: list, rows: int) -> bool:
    """Whether the [first row, count] spans follow each other from row 0 to the last row."""
    at = 0
    for start, count in spans:
        if start != at:
            return False
        at += count
    return at == rows


def _log_points(run_dir: Path, rank: int, match, codes: dict[str, int]) -> _Chunk:
    """The points of the rank's event logs (a running run, or no current data.parquet)."""
    parts, keys = [], []
    for name, s in rank_scalars(run_dir, rank, parquet=False).items():
        n = len(s.values)
        if not n or (match is not None and not match(name)):
            continue
        parts.append(pa.table([pa.Array.from_buffers(kind, n, [None, pa.py_buffer(buf)])
                               for kind, buf in ((pa.int64(), s.steps), (pa.float64(), s.wall_times),
                                                 (pa.float64(), s.values))],
                              names=["step", "wall_time", "value"]))
        keys.append(pa.repeat(pa.scalar(codes.setdefault(name, len(codes)), pa.int32()), n))
    return _chunk(parts, keys)


def _chunk(parts: list, keys: list) -> _Chunk:
    if not parts:
        return _Chunk(-1, pa.array([], pa.int32()), [])
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    return _Chunk(-1, pa.concat_arrays(keys) if len(keys) > 1 else keys[0],
                  [table.column(c).combine_chunks() for c in ("step", "wall_time", "value")])


def run_points(run_dir: Path, rank: int, match=None, codes: dict[str, int] | None = None) -> _Chunk:
    """One run's points on `rank` (those of the names `match` takes, else all), from a current
    data.parquet, else its event logs; key codes are added to `codes` as names are met."""
    codes = {} if codes is None else codes
    found = _parquet_points(run_dir, rank, match, codes)
    return found if found is not None else _log_points(run_dir, rank, match, codes)


def assemble(project: str, run_ids: list[str], rank: int, chunks: list[_Chunk],
             codes: dict[str, int]) -> pa.Table:
    """One table of every run's chunk (chunk.run indexes run_ids), concatenated once."""
    run_names = pa.array(run_ids, pa.string())
    key_names = pa.array(list(codes), pa.string())
    project_names = pa.array([project], pa.string())
    columns: list[list] = [[] for _ in HISTORY_SCHEMA]
    for chunk in chunks:
        n = len(chunk.keys)
        if not n:
            continue
        zeros = pa.repeat(pa.scalar(0, pa.int32()), n)
        columns[0].append(pa.DictionaryArray.from_arrays(zeros, project_names))
        columns[1].append(pa.DictionaryArray.from_arrays(
            pa.repeat(pa.scalar(chunk.run, pa.int32()), n), run_names))
        columns[2].append(pa.repeat(pa.scalar(rank, pa.int32()), n))
        columns[3].append(pa.DictionaryArray.from_arrays(chunk.keys, key_names))
        for i, array in enumerate(chunk.columns, 4):
            columns[i].append(array)
    return pa.Table.from_arrays([pa.chunked_array(c, f.type) for c, f in zip(columns, HISTORY_SCHEMA)],
                                schema=HISTORY_SCHEMA)


def history(project: str, keys: "str | Iterable[str] | None" = None, query: str | None = None,
            rank: int = 0, dir: "str | os.PathLike[str] | None" = None) -> pa.Table:
    """Every point of the matching runs' scalars (nuboard.history has the docs)."""
    with matching_runs(project, keys, query, rank, dir) as (found, _):
        pass
    codes: dict[str, int] = {}
    chunks = []
    for i, run_id in enumerate(found.run_ids):
        run_dir = layout.run_dir(found.root, found.project, run_id)
        try:
            chunks.append(run_points(run_dir, found.rank, found.match, codes)._replace(run=i))
        except FileNotFoundError:
            continue                                 # removed since the sync
    return assemble(found.project, found.run_ids, found.rank, chunks, codes)
