"""The Runs table as data: which runs match, in what order, one page of them, with columns.

Columns are named `name`, `status`, `start`, `duration`, `tags`, `group`, `host`, `id`,
`config:<key>` (a flattened config value) and `scalar:<name>`, `min:<name>`, `max:<name>`
(rank 0's last, smallest and largest value of a scalar).
Sorting and paging run in SQLite, so a page of a 10,000-run project reads 10,000 index
entries at most and 100 rows.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from sqlalchemy import func, select

from nuboard.catalog.query import compile_query
from nuboard.catalog.tables import config, runs, scalars, tags
from nuboard.files.records import run_record

BASE_COLUMNS = ("status", "name", "id", "start", "duration", "tags", "group", "host")
DEFAULT_COLUMNS = ("status", "name", "start", "duration", "tags", "group", "host")
SORTABLE = {"name": runs.c.name, "status": runs.c.status, "id": runs.c.run_id,
            "start": runs.c.created, "duration": runs.c.duration_s,
            "group": runs.c.group_name, "host": runs.c.host}
PER_PAGE = 100
MAX_PER_PAGE = 500
MAX_COLUMNS = 40
SUMMARIES = {"scalar": scalars.c.last, "min": scalars.c.min, "max": scalars.c.max}


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


def _sort_expr(key: str):
    if key in SORTABLE:
        return SORTABLE[key], None
    kind, _, name = key.partition(":")
    if kind == "config" and name:
        return (select(config.c.value_num).where(config.c.run == runs.c.id, config.c.key == name)
                .scalar_subquery(),
                select(config.c.value_text).where(config.c.run == runs.c.id, config.c.key == name)
                .scalar_subquery())
    if kind in SUMMARIES and name:
        return (select(SUMMARIES[kind]).where(scalars.c.run == runs.c.id, scalars.c.rank == 0,
                                             scalars.c.name == name).scalar_subquery(), None)
    if key == "tags":
        return select(func.min(tags.c.tag)).where(tags.c.run == runs.c.id).scalar_subquery(), None
    raise TableError(f"cannot sort by {key!r}: use a column such as start, name or "
                     "config:lr")


def table_page(catalog, *, query: str = "", sort: str = "start", desc: bool = True,
               page: int = 1, per_page: int = PER_PAGE, columns: list[str] | None = None,
               now: float) -> dict:
    """One page of the project's runs: {'total', 'page', 'pages', 'runs': [record...]}.

    Raises:
        QuerySyntaxError: the query does not parse.
        TableError: an unknown column or sort key.
    """
    columns = check_columns(list(columns or DEFAULT_COLUMNS))
    where = runs.c.project_id == catalog.project_id
    if query.strip():
        where = where & compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))
    first, second = _sort_expr(sort)
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    order = [first.desc().nulls_last() if desc else first.asc().nulls_last()]
    if second is not None:
        order.append(second.desc().nulls_last() if desc else second.asc().nulls_last())
    order.append(runs.c.run_id.desc() if desc else runs.c.run_id.asc())
    with catalog.reader.connect() as conn:
        total = conn.execute(select(func.count()).select_from(runs).where(where)).scalar_one()
        pages = max(1, math.ceil(total / per_page))
        page = max(1, min(page, pages))
        rows = [dict(r._mapping) for r in conn.execute(
            select(runs).where(where).order_by(*order).limit(per_page)
            .offset((page - 1) * per_page))]
        ids = [r["id"] for r in rows]
        by_tags: dict[int, list[str]] = {i: [] for i in ids}
        values: dict[int, dict[str, Any]] = {i: {} for i in ids}
        if ids:
            for run, tag in conn.execute(select(tags.c.run, tags.c.tag)
                                         .where(tags.c.run.in_(ids)).order_by(tags.c.tag)):
                by_tags[run].append(tag)
            keys = [c.split(":", 1)[1] for c in columns if c.startswith("config:")]
            if keys:
                for r in conn.execute(select(config).where(config.c.run.in_(ids),
                                                           config.c.key.in_(keys))):
                    values[r.run]["config:" + r.key] = config_value(r.type, r.value_num,
                                                                   r.value_text)
            wanted = [c.partition(":") for c in columns]
            names = sorted({key for kind, _, key in wanted if kind in SUMMARIES})
            kinds = {kind for kind, _, _ in wanted if kind in SUMMARIES}
            if names:
                for r in conn.execute(select(scalars.c.run, scalars.c.name, scalars.c.last,
                                             scalars.c.min, scalars.c.max)
                                      .where(scalars.c.run.in_(ids), scalars.c.rank == 0,
                                             scalars.c.name.in_(names))):
                    for kind in kinds:
                        values[r.run][f"{kind}:{r.name}"] = r._mapping[SUMMARIES[kind].name]
    records = []
    for row in rows:
        record = run_record(row, by_tags[row["id"]], catalog.project, now)
        record["values"] = values[row["id"]]
        record["world_size"] = row.get("world_size")
        record["parent"] = row.get("parent_run_id")
        records.append(record)
    return {"total": total, "page": page, "pages": pages, "per_page": per_page,
            "columns": columns, "sort": sort, "desc": desc, "runs": records}


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
    with catalog.reader.connect() as conn:
        keys = [r[0] for r in conn.execute(
            select(config.c.key).distinct().order_by(config.c.key).limit(2000))]
        names = [r[0] for r in conn.execute(
            select(scalars.c.name).where(scalars.c.rank == 0).distinct()
            .order_by(scalars.c.name).limit(2000))]
    return {"config": keys, "scalar": names}


def running_count(catalog) -> int:
    with catalog.reader.connect() as conn:
        return conn.execute(select(func.count()).select_from(runs).where(
            runs.c.project_id == catalog.project_id, runs.c.status == "running")).scalar_one()
