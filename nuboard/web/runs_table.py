"""The Runs table as data: which runs match, in what order, one page of them, with columns.

Columns are named `name`, `status`, `start`, `duration`, `tags`, `group`, `host`, `id`,
`config:<key>` (a flattened config value) and `scalar:<name>`, `min:<name>`, `max:<name>`
(rank 0's last, smallest and largest value of a scalar). When none are chosen the table shows
results (default_columns). Each number is written as on every page (number_text). Sorting
and paging run in SQLite, so a page of a 10,000-run project reads 10,000 index entries at most
and 100 rows; by duration, in the order of the durations shown (_duration_order). Grouped by a
key (`group`), the matching runs' ids are ordered group by group here and paged in Python, the
groups' counts and means read by catalog/run_groups.py.
"""
from __future__ import annotations

from typing import Any

from nuboard.catalog import run_groups, run_reads
from nuboard.catalog.sync import config_value
from nuboard.files.names import RESERVED_DEFAULTS
from nuboard.files.records import display_status, run_duration, run_record

from .number_text import cell_text
from .run_colours import project_colours

BASE_COLUMNS = ("status", "name", "id", "start", "duration", "tags", "group", "host")
DEFAULT_CONFIG_KEYS = 6          # config columns shown when none are chosen
DEFAULT_SCALARS = 4              # scalar columns shown when none are chosen
PER_PAGE = 100
MAX_PER_PAGE = 500
MAX_COLUMNS = 40
SUMMARIES = {"scalar": "last", "min": "min", "max": "max"}
DURATION_FIELDS = ("run_id", "status", "created", "ended", "duration_s", "heartbeat_mtime",
                   "lost_after")
"""The fields of `runs` that the duration a run shows is worked out from."""
ROW_FIELDS = ("id", "run_id", "name", "status", "group_name", "host", "notes", "cut", "created",
              "ended", "duration_s", "heartbeat_mtime", "lost_after", "world_size",
              "parent_run_id", "parent_step")
"""The fields of `runs` that a row of the table shows."""


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


def default_columns(catalog) -> list[str]:
    """The columns of a table nobody configured: status, name, the config keys whose values
    differ between the project's runs (up to 6, in key order), the last value of the scalars
    most runs logged (up to 4; timing/ and system/ ones only when too few others), start and
    duration."""
    keys = sorted(run_reads.differing_config_keys(catalog, DEFAULT_CONFIG_KEYS))
    names = run_reads.shared_scalar_names(catalog, DEFAULT_SCALARS, last=RESERVED_DEFAULTS)
    late = tuple(prefix + "/" for prefix in RESERVED_DEFAULTS)
    names.sort(key=lambda n: (n.startswith(late), n))
    return (["status", "name"] + [f"config:{k}" for k in keys] + [f"scalar:{n}" for n in names]
            + ["start", "duration"])


def table_page(catalog, *, query: str = "", sort: str = "start", desc: bool = True,
               page: int = 1, per_page: int = PER_PAGE, columns: list[str] | None = None,
               defaults: list[str] | None = None, group: str = "", hidden: bool = False,
               now: float) -> dict:
    """One page of the project's runs: {'total', 'page', 'pages', 'runs': [record...]}.

    columns: the chosen columns; none chosen: `defaults`, else default_columns(catalog).
    Each record has 'values' (the config:/scalar: cells as numbers), 'cells' (the same as the
    page writes them, each number as number_text writes it) and 'colour' (the run's, as on
    every page);
    'numeric' lists the columns whose cells are all numbers (right-aligned).

    group: a key to group the rows by ('group', 'host', 'config:<key>'; '' for none): the rows
    come group by group (group_order), in the sort's order within each; 'groups' lists every
    group of the matching runs {'label', 'value', 'count', 'means', 'cells'} (the mean of each
    config:/scalar:/min:/max: column over the group, None without numbers, and as written) and
    each record's 'group_index' is its group's place in that list; 'averaged' lists the
    columns with a mean in some group.

    hidden: list the runs hidden in the viewer (hidden.json) instead of the others.

    Raises:
        QuerySyntaxError: the query does not parse.
        TableError: an unknown column or sort key.
    """
    chosen = bool(columns)
    columns = check_columns(list(columns or defaults or default_columns(catalog)))
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    groups: list[dict] = []
    try:
        if group:
            found, in_group, groups = _grouped(catalog, query, group, columns, now=now,
                                               sort=sort, desc=desc, page=page,
                                               per_page=per_page, hidden=hidden)
        elif sort == "duration":
            found = _page_of(catalog, _duration_order(catalog, query, now=now, desc=desc,
                                                      hidden=hidden), page, per_page)
        else:
            found = run_reads.runs_page(catalog, query, now=now, sort=sort, desc=desc, page=page,
                                        per_page=per_page, hidden=hidden)
    except run_reads.SortKeyError as exc:
        raise TableError(str(exc)) from None
    ids = [r["id"] for r in found.rows]
    by_tags = run_reads.tags_by_run(catalog, ids)
    values = _column_values(catalog, ids, columns)
    records = []
    colours = project_colours(catalog.project)
    for row in found.rows:
        record = run_record(row, by_tags[row["id"]], catalog.project, now)
        record["values"] = values[row["id"]]
        record["world_size"] = row.get("world_size")
        record["parent"] = row.get("parent_run_id")
        record["nested"] = record["parent"] is not None and row.get("parent_step") is None
        record["colour"] = colours.run(row["run_id"])
        if group:
            record["group_index"] = in_group.get(row["run_id"])
        records.append(record)
    numeric = format_cells(records, [c for c in columns if ":" in c])
    return {"total": found.total, "page": found.page, "pages": found.pages, "per_page": per_page,
            "columns": columns, "chosen": chosen, "numeric": numeric, "sort": sort,
            "desc": desc, "group": group, "groups": groups, "runs": records, "hidden": hidden,
            "averaged": [c for c in columns if any(g["means"].get(c) is not None
                                                   for g in groups)]}


def _ordered_ids(catalog, query: str, *, now: float, sort: str, desc: bool,
                 hidden: bool = False) -> list[str]:
    """The run ids of every matching run, in the order the table shows them ungrouped."""
    if sort == "duration":
        return _duration_order(catalog, query, now=now, desc=desc, hidden=hidden)
    return [r["run_id"] for r in run_reads.find_runs(catalog, query, now=now, sort=sort,
                                                     desc=desc, fields=("run_id",),
                                                     hidden=hidden)]


def _page_of(catalog, ordered: list[str], page: int, per_page: int) -> run_reads.RunsPage:
    """Page `page` (clamped) of these run ids, their rows read by id."""
    pages = max(1, -(-len(ordered) // per_page))
    page = max(1, min(page, pages))
    ids = ordered[(page - 1) * per_page:page * per_page]
    found = run_reads.runs_by_id(catalog, ids, ROW_FIELDS)
    return run_reads.RunsPage(len(ordered), page, pages, [found[i] for i in ids if i in found])


def _grouped(catalog, query: str, key: str, columns: list[str], *, now: float, sort: str,
             desc: bool, page: int, per_page: int, hidden: bool = False
             ) -> tuple[run_reads.RunsPage, dict[str, int], list[dict]]:
    """A page of the runs group by group, each run's group (by run id) and every group.

    The groups and their means come from one grouped read of every matching run
    (run_groups); the order within a group is the sort's, kept by a stable sort of the
    ordered run ids on their group's place (a run synced between the reads goes last)."""
    by_run, rows = run_groups.group_rows(catalog, query, now=now, key=key, columns=columns,
                                         hidden=hidden)
    place = {g.key: i for i, g in enumerate(rows)}
    in_group = {run_id: place[k] for run_id, k in by_run.items()}
    ordered = _ordered_ids(catalog, query, now=now, sort=sort, desc=desc, hidden=hidden)
    ordered.sort(key=lambda r: in_group.get(r, len(rows)))
    groups = []
    for g in rows:
        value = None if g.key.type is None else config_value(g.key.type, g.key.num, g.key.text)
        label = ("(no value)" if g.key.type is None else "null" if value is None
                 else cell_text(value) or repr(value))
        groups.append({"label": label,
                       "value": value, "count": g.count, "means": g.means,
                       "cells": {c: cell_text(m) for c, m in g.means.items()}})
    return _page_of(catalog, ordered, page, per_page), in_group, groups


def _duration_order(catalog, query: str, *, now: float, desc: bool,
                    hidden: bool = False) -> list[str]:
    """The run ids of every matching run in the order of the duration the table shows
    (run_duration: a running run's so far, a lost one's up to its last heartbeat, which the
    catalog's duration_s does not hold), unknown ones last, then by run id, as run_reads
    orders. Worked out here from DURATION_FIELDS (a 10,000-run project: one read of 10,000
    short rows)."""
    rows = run_reads.find_runs(catalog, query, now=now, fields=DURATION_FIELDS, hidden=hidden)
    shown = {r["run_id"]: run_duration(r, display_status(r["status"], r["heartbeat_mtime"], now,
                                                         r["lost_after"]), now) for r in rows}
    known = sorted((r for r in shown if shown[r] is not None), key=lambda r: (shown[r], r),
                   reverse=desc)
    return known + sorted((r for r in shown if shown[r] is None), reverse=desc)


def format_cells(records: list[dict], columns: list[str]) -> list[str]:
    """Write each record's 'cells' from its 'values', each as its own text (a number as
    number_text writes it on every page, whatever else its column holds); return the columns
    whose filled cells are all numbers (right-aligned)."""
    numeric = []
    for record in records:
        record["cells"] = {}
        record.setdefault("values", {})
    for col in columns:
        column = [r["values"].get(col) for r in records]
        for record, value in zip(records, column):
            record["cells"][col] = cell_text(value)
        filled = [v for v in column if v is not None]
        if filled and all(_is_number(v) for v in filled):
            numeric.append(col)
    return numeric


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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


def available_columns(catalog) -> dict[str, list[str]]:
    """Config keys and rank-0 scalar names present in the project, for the column chooser."""
    return run_reads.column_choices(catalog)


def running_count(catalog) -> int:
    """How many of the project's runs the catalog holds as running."""
    return run_reads.running_count(catalog)
