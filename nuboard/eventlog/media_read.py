"""Reading a run's media back: entries from the MEDIA records of one rank's logs, and values.

    entries = rank_media(run_dir)              # the logs only: cheap, for pages and the catalog
    value = load_value(entries[0])             # text, histogram, or a table's rows

rank_media applies the resume rule per key (reader.RunReader.media) and orders entries by key,
then step, then as logged. A record's file is a path relative to the run folder under media/
(logfile.check_media refuses any other); entries give it absolute.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from .reader import RunReader

INLINE = {"histogram": ("counts", "edges", "min", "max", "sum", "count", "dropped")}


class MediaEntry(NamedTuple):
    """One media entry of a run.

    key, step, wall_time, kind ("image", "histogram", "text", "table", "audio"); path: the
    absolute path of its file (None for what lives in the log: histograms, short text);
    value: the text, the histogram ({"counts", "edges", "min", "max", "sum", "count",
    "dropped"}) or the table ({"columns", "kinds", "rows"}), None until loaded for a file;
    caption, width, height (images), sample_rate (audio): None where they do not apply;
    record: the record as written; rank and session: the log it came from.

    A NamedTuple (immutable; `entry._replace(value=...)`): a viewer reads thousands at once,
    and a frozen dataclass costs five times as much to make.
    """
    key: str
    step: int
    wall_time: float
    kind: str
    path: Path | None = None
    value: Any = None
    caption: str | None = None
    width: int | None = None
    height: int | None = None
    sample_rate: int | None = None
    record: dict = {}
    rank: int = 0
    session: int = 0


def rank_media(run_dir: "str | os.PathLike[str]", rank: int = 0,
               keys: Iterable[str] | None = None) -> list[MediaEntry]:
    """One rank's media entries (keys, or all), from its event logs; files are not opened."""
    reader = RunReader(run_dir, rank)
    reader.refresh()
    return entries_of(reader, keys)


def entries_of(reader: RunReader, keys: Iterable[str] | None = None) -> list[MediaEntry]:
    """The media entries of a RunReader that has read its logs (see rank_media)."""
    base = Path(os.path.abspath(reader.path))
    return [_entry(base, reader.rank, session, doc) for session, doc in reader.media(keys)]


def _entry(base: Path, rank: int, session: int, doc: dict) -> MediaEntry:
    kind = doc["kind"]
    file = doc.get("file")
    value: Any = None
    if kind == "histogram":
        value = {name: doc.get(name) for name in INLINE["histogram"]}
    elif kind == "text" and file is None:
        value = doc.get("text") if isinstance(doc.get("text"), str) else ""
    return MediaEntry(doc["key"], doc["step"], float(doc["wall"]), kind,
                      base / file if isinstance(file, str) else None, value,
                      _text_or_none(doc.get("caption")), _int_or_none(doc.get("width")),
                      _int_or_none(doc.get("height")), _int_or_none(doc.get("sample_rate")),
                      doc, rank, session)


def load_value(entry: MediaEntry) -> Any:
    """The entry's value: the text (read from its .txt when long), the histogram, the table
    ({"columns": [...], "kinds": [...], "rows": [[cell, ...], ...]}, image cells as absolute
    paths); None for images and audio. Raises OSError for a file that cannot be read and
    ValueError for one that is not what its record says."""
    if entry.value is not None or entry.path is None:
        return entry.value
    if entry.kind == "text":
        from nuboard.files.jsonfile import open_regular
        with open_regular(entry.path) as fh:
            return fh.read().decode("utf-8")
    if entry.kind == "table":
        return read_table(entry.path, entry.path.parents[_depth(entry)])
    return None


def loaded(entries: list[MediaEntry]) -> list[MediaEntry]:
    """The entries with their values loaded (load_value), as nb.read_media returns them."""
    return [e._replace(value=load_value(e)) if e.value is None and e.kind in ("text", "table") else e
            for e in entries]


def _depth(entry: MediaEntry) -> int:
    """How many folders up from the entry's file the run folder is."""
    return len(entry.record["file"].split("/")) - 1


def read_table(path: Path, run_dir: Path) -> dict:
    """A table file (nuboard/media/table.py writes it) as columns, kinds and rows of plain
    values: a "mixed" column's JSON cells decoded, an image cell as its absolute path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nuboard.files.jsonfile import open_regular
    with open_regular(path) as fh:
        table = pq.read_table(pa.BufferReader(fh.read()))
    raw = (table.schema.metadata or {}).get(b"nuboard")
    described = json.loads(raw) if raw else {}
    kinds = [c.get("kind", "") for c in described.get("columns", [])]
    if len(kinds) != table.num_columns:
        raise ValueError(f"{path} is not a NuBoard table (its columns are not described)")
    columns = []
    for column, kind in zip(table.columns, kinds):
        cells = column.to_pylist()
        if kind == "mixed":
            cells = [None if c is None else _mixed_cell(json.loads(c), run_dir) for c in cells]
        elif kind == "image":
            cells = [None if c is None else str(run_dir / c) for c in cells]
        columns.append(cells)
    rows = [list(row) for row in zip(*columns)] if columns else []
    return {"columns": list(table.column_names), "kinds": kinds, "rows": rows}


def _mixed_cell(value: Any, run_dir: Path) -> Any:
    if isinstance(value, dict) and isinstance(value.get("image"), str):
        return str(run_dir / value["image"])
    return value


def media_keys(entries: Iterable[MediaEntry]) -> dict[str, dict]:
    """{key: {"kind", "count", "first_step", "last_step"}} of entries (the first kind seen)."""
    out: dict[str, dict] = {}
    for e in entries:
        found = out.get(e.key)
        if found is None:
            out[e.key] = {"kind": e.kind, "count": 1, "first_step": e.step, "last_step": e.step}
        else:
            found["count"] += 1
            found["first_step"] = min(found["first_step"], e.step)
            found["last_step"] = max(found["last_step"], e.step)
    return out


def _int_or_none(value: Any) -> int | None:
    return value if type(value) is int else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
