"""nb.media: every media entry of the runs a query matches, one row an entry, as a pyarrow.Table.

The entries are those nb.read_media gives per run (eventlog/media_read.py: the resume rule
applied, ordered by key, then step, then as logged), runs newest first. Only the runs the
catalog says logged media on the rank are read, so a project of scalar-only runs costs one
catalog read. `value` is text: a text entry's text, a histogram's or a table's JSON (what
json.loads makes of it is read_media's dict), null for images and audio (their file is
`path`); one column type whatever the kinds, so a table of mixed kinds stays one table.
"""
from __future__ import annotations

import json
import os
from typing import Iterable

import pyarrow as pa

from nuboard.eventlog.media_read import MediaEntry, load_value, rank_media
from nuboard.files import layout

from .project import matching_runs

_NAMES = pa.dictionary(pa.int32(), pa.string())
MEDIA_SCHEMA = pa.schema([
    ("run_id", _NAMES), ("key", _NAMES), ("step", pa.int64()), ("wall_time", pa.float64()),
    ("kind", _NAMES), ("path", pa.string()), ("value", pa.string()), ("caption", pa.string()),
    ("width", pa.int64()), ("height", pa.int64()), ("sample_rate", pa.int64())])
"""The columns of nb.media's table, in order."""


def value_text(entry: MediaEntry) -> str | None:
    """The entry's value as the `value` column holds it: the text itself, a histogram's or a
    table's JSON, None for an image or audio, and None for a file that cannot be read (a run
    removed meanwhile, a damaged table): `path` still names it."""
    try:
        value = load_value(entry)
    except (OSError, ValueError):
        return None
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def media(project: str, keys: "str | Iterable[str] | None" = None, query: str | None = None,
          rank: int = 0, dir: "str | os.PathLike[str] | None" = None) -> pa.Table:
    """Every media entry of the matching runs (nuboard.media has the docs)."""
    from nuboard.catalog.media_reads import media_keys
    with matching_runs(project, keys, query, rank, dir) as (found, catalog):
        logged = media_keys(catalog, found.run_ids, found.rank)
    match, rank, run_ids = found.match, found.rank, found.run_ids
    rows: dict[str, list] = {f.name: [] for f in MEDIA_SCHEMA}
    for run_id in run_ids:
        wanted = [k for k in logged[run_id] if match is None or match(k)]
        if not wanted:
            continue
        for e in rank_media(layout.run_dir(found.root, found.project, run_id), rank, wanted):
            for name, value in (("run_id", run_id), ("key", e.key), ("step", e.step),
                                ("wall_time", e.wall_time), ("kind", e.kind),
                                ("path", None if e.path is None else str(e.path)),
                                ("value", value_text(e)), ("caption", e.caption),
                                ("width", e.width), ("height", e.height),
                                ("sample_rate", e.sample_rate)):
                rows[name].append(value)
    return pa.Table.from_arrays(
        [pa.array(rows[f.name], pa.string()).dictionary_encode() if f.type == _NAMES
         else pa.array(rows[f.name], f.type) for f in MEDIA_SCHEMA], schema=MEDIA_SCHEMA)
