"""The run table's columns, built from the catalog's rows (catalog/table_reads.py).

One row a run; the columns, in order: project, id, name, status, created, ended, duration,
tags, group, host, notes; then `config.<key>` for each flattened config key, sorted; then
`<scalar>.last`, `<scalar>.min`, `<scalar>.max` for each rank-0 scalar, sorted by name.
A run without a key or scalar has null there.

The rows are turned into columns whole (one pyarrow array a field), and the config and
summary cells are placed by pyarrow (index_in, take), not cell by cell in Python: 10,000 runs
of 7 config keys and 10 scalars take tens of milliseconds.
"""
from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from nuboard.catalog.sync import config_value
from nuboard.files.records import display_status, parse_time, run_duration

SUMMARIES = ("last", "min", "max")
CONFIG_PREFIX = "config."
TIMESTAMP = pa.timestamp("us", tz="UTC")
RUN_SCHEMA = pa.schema([
    ("project", pa.string()), ("id", pa.string()), ("name", pa.string()), ("status", pa.string()),
    ("created", TIMESTAMP), ("ended", TIMESTAMP), ("duration", pa.float64()),
    ("tags", pa.list_(pa.string())), ("group", pa.string()), ("host", pa.string()),
    ("notes", pa.string()),
])
"""The columns every run table has, before its config and scalar columns."""
_TEXT, _NUM, _ID = pa.string(), pa.float64(), pa.int64()
RUN_ROW = pa.struct([("id", _ID), ("run_id", _TEXT), ("name", _TEXT), ("status", _TEXT),
                     ("group_name", _TEXT), ("host", _TEXT), ("notes", _TEXT), ("created", _TEXT),
                     ("ended", _TEXT), ("duration_s", _NUM), ("heartbeat_mtime", _NUM),
                     ("lost_after", _NUM)])
"""The row of catalog/table_reads.py's RUN_FIELDS."""
_TAG_ROW = pa.struct([("run", _ID), ("tag", _TEXT)])
_CONFIG_ROW = pa.struct([("run", _ID), ("key", _TEXT), ("type", _TEXT), ("value_num", _NUM),
                         ("value_text", _TEXT)])
_SCALAR_ROW = pa.struct([("run", _ID), ("name", _TEXT), ("last", _NUM), ("min", _NUM),
                         ("max", _NUM)])


class RunColumns(NamedTuple):
    """What build_columns gives: the table; the scalar names with summary columns (sorted);
    and, for the records, the catalog's row id of each row and the config rows."""
    table: pa.Table
    scalar_names: list[str]
    row_ids: list[int]
    config_rows: list[tuple]


def build_columns(rows, project: str, now: float) -> RunColumns:
    """The run table of a TableRows read (rows in its order: newest first)."""
    fields = _columns(rows.runs, RUN_ROW)
    n = len(rows.runs)
    row_ids = fields[0]
    columns = _fixed_columns(fields, rows.tags, n, project, now)
    columns.update(_config_columns(rows.config, row_ids, n))
    summaries = _summary_columns(rows.scalars, row_ids, n)
    columns.update(summaries)
    names = list(dict.fromkeys(c.rpartition(".")[0] for c in summaries))
    return RunColumns(pa.table(columns), names, row_ids.to_pylist(), rows.config)


def _columns(rows: list[tuple], kinds: pa.StructType) -> list[pa.Array]:
    """Row tuples as one array a field (pyarrow converts them in one pass, in C++)."""
    array = pa.array(rows, kinds)
    return [array.field(i) for i in range(kinds.num_fields)]


def _positions(run_ids: pa.Array, row_ids: pa.Array) -> pa.Array:
    """Each catalog row id's row in the table."""
    return pc.index_in(run_ids, value_set=row_ids)


def _slots(at: pa.Array, n: int) -> pa.Array:
    """For each of n rows, the i with at[i] equal to it (each row is in `at` at most once),
    else null: values.take(_slots(at, n)) spreads values over n rows, nulls between."""
    return pc.index_in(pa.array(range(n), pa.int64()), value_set=at)


def _groups(codes: pa.Array) -> list[tuple[int, pa.Array]]:
    """(code, the indices of its rows) of each code of a dictionary's indices."""
    order = pc.sort_indices(codes)
    ordered = codes.take(order)
    counts = pc.value_counts(ordered)
    out, start = [], 0
    for code, count in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()):
        out.append((code, order.slice(start, count)))
        start += count
    return out


# -- the columns of every run -----------------------------------------------------------------

def _fixed_columns(fields: list[pa.Array], tag_rows: list[tuple], n: int, project: str,
                   now: float) -> dict:
    """The RUN_SCHEMA columns: 'lost' and the duration so far are worked out for the runs
    that need it (running, or without a duration), the others' come from the catalog."""
    (row_ids, ids, names, statuses, groups, hosts, notes, created, ended, durations, beats,
     lost_after) = fields
    redo = pc.indices_nonzero(pc.or_(pc.equal(statuses, "running"), pc.is_null(durations)))
    if len(redo):
        statuses, durations = statuses.to_pylist(), durations.to_pylist()
        for i in redo.to_pylist():
            statuses[i] = display_status(statuses[i], beats[i].as_py(), now, lost_after[i].as_py())
            durations[i] = run_duration({"duration_s": durations[i], "created": created[i].as_py(),
                                         "ended": ended[i].as_py(), "heartbeat_mtime": beats[i].as_py()},
                                        statuses[i], now)
    tags: list[list[str]] = [[] for _ in range(n)]
    if tag_rows:
        runs, texts = _columns(tag_rows, _TAG_ROW)
        for pos, tag in zip(_positions(runs, row_ids).to_pylist(), texts.to_pylist()):
            tags[pos].append(tag)
    values = [pa.repeat(pa.scalar(project), n), ids, names, statuses, _times(created),
              _times(ended), durations, tags, groups, hosts, notes]
    return {f.name: v if isinstance(v, pa.Array) else pa.array(v, f.type)
            for f, v in zip(RUN_SCHEMA, values)}


def _times(texts: pa.Array) -> pa.Array:
    """ISO 8601 times as run.json writes them to UTC timestamps (missing or unreadable: null)."""
    try:
        return pc.cast(pc.if_else(pc.equal(texts, ""), pa.scalar(None, pa.string()), texts), TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):      # a hand-edited time: one by one
        return pa.array([parse_time(t) for t in texts.to_pylist()], TIMESTAMP)


# -- config -----------------------------------------------------------------------------------

def run_configs(columns: RunColumns) -> list[dict]:
    """Each row's config as logged, {key: value} with keys sorted (for the records)."""
    where = {row_id: i for i, row_id in enumerate(columns.row_ids)}
    out: list[dict] = [{} for _ in columns.row_ids]
    for run, key, kind, num, text in sorted(columns.config_rows, key=lambda r: r[1]):
        out[where[run]][key] = config_value(kind, num, text)
    return out


def _config_columns(config_rows: list[tuple], row_ids: pa.Array, n: int) -> dict:
    if not config_rows:
        return {}
    runs, keys, kinds, nums, texts = _columns(config_rows, _CONFIG_ROW)
    at = _positions(runs, row_ids)
    keys = keys.dictionary_encode()
    names = keys.dictionary.to_pylist()
    out = {}
    for code, rows in sorted(_groups(keys.indices), key=lambda g: names[g[0]]):
        column = config_column(kinds.take(rows), nums.take(rows), texts.take(rows))
        out[CONFIG_PREFIX + names[code]] = column.take(_slots(at.take(rows), n))
    return out


def config_column(kinds: pa.Array, nums: pa.Array, texts: pa.Array) -> pa.Array:
    """One key's values, typed: bool, int64, float64 or string where every value (nulls
    aside) is of that kind, else string (a str as it is, any other value as its JSON);
    only nulls: the null type."""
    is_null = pc.equal(kinds, "null")
    present = set(kinds.unique().to_pylist()) - {"null"}
    if not present:
        return pa.nulls(len(kinds))
    texts = pc.if_else(is_null, pa.scalar(None, pa.string()), texts)
    if present == {"str"}:
        return texts
    if present == {"bool"}:
        return pc.equal(texts, "true")
    try:
        if present == {"int"}:
            return pc.cast(texts, pa.int64())                   # exact, unlike value_num
        beyond_double = pc.any(pc.and_(pc.equal(kinds, "int"), pc.is_null(nums))).as_py()
        if present <= {"int", "float"} and not beyond_double:
            # value_num is null for NaN and inf: they are read from the text
            return pc.if_else(pc.is_valid(nums), nums, pc.cast(texts, pa.float64()))
    except pa.ArrowInvalid:                                     # an int beyond int64
        pass
    return texts


# -- scalar summaries -------------------------------------------------------------------------

def _summary_columns(scalar_rows: list[tuple], row_ids: pa.Array, n: int) -> dict:
    """`<name>.last/.min/.max` for each name, sorted."""
    if not scalar_rows:
        return {}
    runs, names, *arrays = _columns(scalar_rows, _SCALAR_ROW)
    at = _positions(runs, row_ids)
    encoded = names.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    out = {}
    for code, rows in sorted(_groups(encoded.indices), key=lambda g: names[g[0]]):
        slots = _slots(at.take(rows), n)
        for kind, array in zip(SUMMARIES, arrays):
            out[f"{names[code]}.{kind}"] = array.take(rows).take(slots)
    return out
