"""The Runs table as data: which runs match, in what order, one page of them, with columns.

Columns are named `name`, `status`, `start`, `duration`, `tags`, `group`, `host`, `id`,
`config:<key>` (a flattened config value) and `scalar:<name>`, `min:<name>`, `max:<name>`
(rank 0's last, smallest and largest value of a scalar).
Sorting and paging run in SQLite, so a page of a 10,000-run project reads 10,000 index
entries at most and 100 rows.
"""
from __future__ import annotations

import json
from typing import Any

from nuboard.catalog import run_reads
from nuboard.files.records import run_record

BASE_COLUMNS = ("status", "name", "id", "start", "duration", "tags", "group", "host")
DEFAULT_COLUMNS = ("status", "name", "start", "duration", "tags", "group", "host")
PER_PAGE = 100
MAX_PER_PAGE = 500
MAX_COLUMNS = 40
SUMMARIES = {"scalar": "last", "min": "min", "max": "max"}


class TableError(ValueError):
    """A column or sort key the table does not know (shown under the query box)."""


def check_columns(columns: list[str]) -> list[str]:
    """Columns as asked, checked: known base names, or config:, scalar:, min:, max: and a key."""
    out = []
    for col in columns[:MAX_COLUMNS]:
        col = col.strip()
        if not col or col in out:
            continue
        kind, sep, key = col.partition(":")
        if col in BASE_COLUMNS or (sep and (kind == "config" or kind in SUMMARIES) and key):
            out.append(col)
        else:
            raise TableError(f"unknown column {col!r}: use one of {', '.join(BASE_COLUMNS)}, "
                             "config:<key>, or scalar:<name> (min:<name>, max:<name>)")
    return out


def table_page(catalog, *, query: str = "", sort: str = "start", desc: bool = True,
               page: int = 1, per_page: int = PER_PAGE, columns: list[str] | None = None,
               now: float) -> dict:
    """One page of the project's runs: {'total', 'page', 'pages', 'runs': [record...]}.

    Raises:
        QuerySyntaxError: the query does not parse.
        TableError: an unknown column or sort key.
    """
    columns = check_columns(list(columns or DEFAULT_COLUMNS))
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    try:
        found = run_reads.runs_page(catalog, query, now=now, sort=sort, desc=desc, page=page,
                                    per_page=per_page)
    except run_reads.SortKeyError as exc:
        raise TableError(str(exc)) from None
    ids = [r["id"] for r in found.rows]
    by_tags = run_reads.tags_by_run(catalog, ids)
    values = _column_values(catalog, ids, columns)
    records = []
    for row in found.rows:
        record = run_record(row, by_tags[row["id"]], catalog.project, now)
        record["values"] = values[row["id"]]
        record["world_size"] = row.get("world_size")
        record["parent"] = row.get("parent_run_id")
        records.append(record)
    return {"total": found.total, "page": found.page, "pages": found.pages, "per_page": per_page,
            "columns": columns, "sort": sort, "desc": desc, "runs": records}


def _column_values(catalog, ids: list[int], columns: list[str]) -> dict[int, dict[str, Any]]:
    """The config: and scalar:/min:/max: cells of these runs, by row id then column name."""
    values: dict[int, dict[str, Any]] = {i: {} for i in ids}
    if not ids:
        return values
    keys = [c.split(":", 1)[1] for c in columns if c.startswith("config:")]
    for run, cells in run_reads.config_cells(catalog, ids, keys).items():
        for key, c in cells.items():
            values[run]["config:" + key] = config_value(c["type"], c["value_num"],
                                                        c["value_text"])
    wanted = [c.partition(":") for c in columns]
    names = sorted({key for kind, _, key in wanted if kind in SUMMARIES})
    kinds = {kind for kind, _, _ in wanted if kind in SUMMARIES}
    for run, found in run_reads.scalar_summaries(catalog, ids, names).items():
        for name, summary in found.items():
            for kind in kinds:
                values[run][f"{kind}:{name}"] = summary[SUMMARIES[kind]]
    return values


def config_value(kind: str, num: float | None, text: str | None) -> Any:
    """A config cell as its value: ints as ints, bools as bools, JSON texts parsed."""
    if kind == "int" and num is not None:
        return int(num)
    if kind == "bool" and num is not None:
        return bool(num)
    if kind == "float":
        return num if num is not None else text
    if kind == "str":
        return text
    if kind == "null":
        return None
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return text


def available_columns(catalog) -> dict[str, list[str]]:
    """Config keys and rank-0 scalar names present in the project, for the column chooser."""
    return run_reads.column_choices(catalog)


def running_count(catalog) -> int:
    """How many of the project's runs the catalog holds as running."""
    return run_reads.running_count(catalog)
