"""The catalog reads of the sweep views (Scatter, parallel coordinates): a query's runs, or runs
named by id, with chosen config values and rank-0 scalar summaries: the query is evaluated once
(a config comparison over 10,000 runs costs about 0.1 s each time), then one statement for the
config values and one for the summaries of the runs found, on one reader connection. A query's
runs leave the project's hidden runs out (run_reads.hidden_clause); runs named by id are shown."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select

from .query import compile_query
from .run_reads import hidden_clause
from .tables import config, runs, scalars

IN_CHUNK = 5000     # row ids per IN (...): one statement for the sweep views' runs
RUN_FIELDS = ("id", "run_id", "name", "status", "created", "heartbeat_mtime", "lost_after")


def _where(catalog, query: str, run_ids: list[str] | None, now: float):
    """The project's runs the query matches, and among `run_ids` when given (else those not
    hidden)."""
    where = runs.c.project_id == catalog.project_id
    if query.strip():
        where = where & compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))
    if run_ids is not None:
        where = where & runs.c.run_id.in_(run_ids)
    else:
        where = where & hidden_clause(catalog, False)
    return where


def sweep_rows(catalog, *, query: str = "", run_ids: list[str] | None = None, now: float,
               config_keys: list[str], scalar_names: list[str],
               limit: int) -> tuple[int, list[dict]]:
    """How many runs match, and the newest `limit` of them, newest first (`run_ids`: at most
    IN_CHUNK of them in one statement), each
    {RUN_FIELDS..., 'config': {key: {'type', 'value_num', 'value_text'}},
    'scalars': {name: {'last', 'min', 'max'}}} for the keys and names asked.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    where = _where(catalog, query, run_ids, now)
    order = (runs.c.created.desc(), runs.c.run_id.desc())
    with catalog.reader.connect() as conn:
        rows = [dict(r._mapping, config={}, scalars={}) for r in conn.execute(
            select(*(runs.c[f] for f in RUN_FIELDS)).where(where).order_by(*order).limit(limit))]
        total = len(rows) if len(rows) < limit else conn.execute(
            select(func.count()).select_from(runs).where(where)).scalar_one()
        by_id = {r["id"]: r for r in rows}
        ids = list(by_id)
        for i in range(0, len(ids) if config_keys else 0, IN_CHUNK):
            for r in conn.execute(select(config.c.run, config.c.key, config.c.type,
                                         config.c.value_num, config.c.value_text)
                                  .where(config.c.run.in_(ids[i:i + IN_CHUNK]),
                                         config.c.key.in_(config_keys))):
                by_id[r.run]["config"][r.key] = {"type": r.type, "value_num": r.value_num,
                                                 "value_text": r.value_text}
        for i in range(0, len(ids) if scalar_names else 0, IN_CHUNK):
            for r in conn.execute(select(scalars.c.run, scalars.c.name, scalars.c.last,
                                         scalars.c.min, scalars.c.max)
                                  .where(scalars.c.run.in_(ids[i:i + IN_CHUNK]),
                                         scalars.c.rank == 0, scalars.c.name.in_(scalar_names))):
                by_id[r.run]["scalars"][r.name] = {"last": r.last, "min": r.min, "max": r.max}
    return total, rows
