"""What the query box knows of a project: the keys and values it completes, and the warnings
for keys no run has (docs/query.md, "Warnings" and "Completion").

Reads only; the faces pass a `Catalog` and get plain dicts, lists and sets back.
"""
from __future__ import annotations

from sqlalchemy import select

from .query_syntax import FIELDS, STATUSES, SUMMARIES, compared, key_warnings, parse_query
from .run_reads import ID_CHUNK, NAME_LIMIT, column_choices
from .tables import config, runs, scalars, tags


def completion_keys(catalog) -> dict:
    """The lists the query box completes from, each sorted and at most NAME_LIMIT long:
    {'fields', 'summaries', 'config', 'scalar', 'values': {'tag', 'status', 'group'}}."""
    choices = column_choices(catalog)
    with catalog.reader.connect() as conn:
        tag_values = [r[0] for r in conn.execute(
            select(tags.c.tag).distinct().order_by(tags.c.tag).limit(NAME_LIMIT))]
        groups = [r[0] for r in conn.execute(
            select(runs.c.group_name).distinct()
            .where(runs.c.project_id == catalog.project_id, runs.c.group_name.isnot(None))
            .order_by(runs.c.group_name).limit(NAME_LIMIT))]
    return {"fields": list(FIELDS), "summaries": list(SUMMARIES), "config": choices["config"],
            "scalar": choices["scalar"],
            "values": {"tag": tag_values, "status": list(STATUSES), "group": groups}}


def known_names(catalog, query: str) -> dict[str, set[str]]:
    """The config keys and rank-0 scalar names the catalog has, as far as the query's warnings
    need them: every key the query compares that some run has, and the first NAME_LIMIT of
    each kind to suggest from. {'config': set, 'scalar': set}.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    wanted = list(compared(parse_query(query)))
    if not wanted:
        return {"config": set(), "scalar": set()}
    keys = sorted({t.key for t in wanted if t.source != "scalar"})
    names = sorted({t.key for t in wanted if t.source != "config"})
    found = {"config": set(), "scalar": set()}
    with catalog.reader.connect() as conn:
        for i in range(0, len(keys), ID_CHUNK):
            found["config"].update(r[0] for r in conn.execute(
                select(config.c.key).distinct().where(config.c.key.in_(keys[i:i + ID_CHUNK]))))
        for i in range(0, len(names), ID_CHUNK):
            found["scalar"].update(r[0] for r in conn.execute(
                select(scalars.c.name).distinct().where(scalars.c.rank == 0,
                                                        scalars.c.name.in_(names[i:i + ID_CHUNK]))))
    if all(t.key in found["config"] or t.key in found["scalar"] for t in wanted):
        return found                        # nothing unknown: no list to suggest from
    choices = column_choices(catalog)
    return {kind: found[kind] | set(choices[kind]) for kind in found}


def warnings_for(query: str, known: list[dict[str, set[str]]]) -> list[str]:
    """The query's warnings against the names of one or more catalogs (known_names of each):
    one line for each key that none of them has.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    config_names = set().union(*(k["config"] for k in known)) if known else set()
    scalar_names = set().union(*(k["scalar"] for k in known)) if known else set()
    return key_warnings(parse_query(query), config_names, scalar_names)


def query_warnings(catalog, query: str) -> list[str]:
    """The warnings of a query over one project's catalog ([] for an empty query).

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    if not query.strip():
        return []
    return warnings_for(query, [known_names(catalog, query)])
