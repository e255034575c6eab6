"""The catalog reads of the Runs table grouped by a key (`?group=`): each matching run's value
of the key, and per value how many runs hold it and the mean of each numeric column.

A key is a field of the run (`group`: the run's group, `host`) or a flattened config key
(`config:<key>`). The means are worked out in SQL over every run the query matches, not only
the page shown: AVG of a config key's numbers (ints and floats; bools, texts and lists are left
out) and of rank 0's last, min or max of a scalar; a column without a number has none (NULL).
"""
from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from sqlalchemy import Float, and_, case, cast, func, literal_column, null, select

from .query import compile_query
from .run_reads import hidden_clause
from .tables import config, runs, scalars

GROUP_FIELDS = {"group": runs.c.group_name, "host": runs.c.host}
"""The run fields a table can be grouped by, besides config:<key>."""
SUMMARY_FIELDS = {"scalar": "last", "min": "min", "max": "max"}
NUMERIC_CONFIG = ("int", "float")


class GroupKey(NamedTuple):
    """A run's value of the grouping key as the catalog holds it: (type, value_num,
    value_text) of a config cell, ('str', None, text) of a run field; all None when missing."""
    type: str | None
    num: float | None
    text: str | None


class GroupRow(NamedTuple):
    """One value of the key: how many matching runs hold it, and the mean of each column asked
    (None where the column has no number in the group)."""
    key: GroupKey
    count: int
    means: dict[str, float | None]


def _where(catalog, query: str, now: float, hidden: bool):
    """The project's runs but the hidden ones (hidden=True: the hidden ones only;
    run_reads.hidden_clause), narrowed by the query when it has text."""
    where = (runs.c.project_id == catalog.project_id) & hidden_clause(catalog, hidden)
    if query.strip():
        where = where & compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))
    return where


def _key_source(key: str):
    """(the FROM clause joined with the key's cell, its three key expressions, what to
    GROUP BY)."""
    if key in GROUP_FIELDS:
        field = GROUP_FIELDS[key]
        kind = case((field.is_(None), null()), else_=literal_column("'str'"))
        return runs, (kind.label("k_type"), cast(null(), Float).label("k_num"),
                      field.label("k_text")), (field,)
    name = key.partition(":")[2]
    cell = config.alias("k")
    source = runs.outerjoin(cell, and_(cell.c.run == runs.c.id, cell.c.key == name))
    return source, (cell.c.type.label("k_type"), cell.c.value_num.label("k_num"),
                    cell.c.value_text.label("k_text")), (cell.c.type, cell.c.value_num,
                                                         cell.c.value_text)


def _mean_terms(source, columns: list[str]):
    """The FROM clause joined with one cell per column asked, and AVG of each column's numbers
    (config:<key>, scalar:/min:/max:<name>; others are not averaged)."""
    terms = {}
    for i, col in enumerate(columns):
        kind, _, name = col.partition(":")
        if kind == "config" and name:
            cell = config.alias(f"c{i}")
            source = source.outerjoin(cell, and_(cell.c.run == runs.c.id, cell.c.key == name))
            terms[col] = func.avg(case((cell.c.type.in_(NUMERIC_CONFIG), cell.c.value_num)))
        elif kind in SUMMARY_FIELDS and name:
            cell = scalars.alias(f"s{i}")
            source = source.outerjoin(cell, and_(cell.c.run == runs.c.id, cell.c.rank == 0,
                                                 cell.c.name == name))
            terms[col] = func.avg(cell.c[SUMMARY_FIELDS[kind]])
    return source, terms


def group_rows(catalog, query: str, *, now: float, key: str, columns: list[str],
               hidden: bool = False) -> tuple[dict[str, GroupKey], list[GroupRow]]:
    """Each matching run's key (by run id), and one GroupRow per value of the key, in the
    order the table shows them: numbers ascending, then texts, then runs without the key.

    key: 'group', 'host' or 'config:<key>' (check_group_key checks it first).

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    where = _where(catalog, query, now, hidden)
    source, keys, by = _key_source(key)
    mean_source, terms = _mean_terms(source, columns)
    with catalog.reader.connect() as conn:
        by_run = {r.run_id: GroupKey(r.k_type, r.k_num, r.k_text) for r in conn.execute(
            select(runs.c.run_id, *keys).select_from(source).where(where))}
        names = list(terms)
        stmt = (select(*keys, func.count().label("n"),
                       *(t.label(f"m{i}") for i, t in enumerate(terms.values())))
                .select_from(mean_source).where(where).group_by(*by))
        groups = [GroupRow(GroupKey(r.k_type, r.k_num, r.k_text), r.n,
                           {name: getattr(r, f"m{i}") for i, name in enumerate(names)})
                  for r in conn.execute(stmt)]
    groups.sort(key=lambda g: group_order(g.key))
    return by_run, groups


def group_order(key: GroupKey) -> tuple:
    """Where a value of the key sorts: numbers ascending, then texts, then no value."""
    missing = key.type is None or key.type == "null"
    return (missing, key.num is None, key.num or 0.0, key.text or "")


def check_group_key(key: str) -> bool:
    """Whether the table can be grouped by this key: a run field of GROUP_FIELDS or
    config:<a key>."""
    kind, sep, name = key.partition(":")
    return key in GROUP_FIELDS or (kind == "config" and bool(sep) and bool(name))
