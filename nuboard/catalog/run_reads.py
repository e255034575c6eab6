"""Every read of the run side of the catalog that the faces make (Runs table, Timeline, Charts,
`nuboard ls`, `nuboard rm`), each one named function returning plain dicts, lists and ints.

The faces hold a `Catalog` (catalog/project_catalog.py) and pass it; each function opens one reader
connection. Queries are the language of docs/query.md, compiled by catalog/query.py.

Hidden runs (the project's hidden.json, files/hidden_runs.py) are applied when a list is read,
not indexed: the reads that list a query's runs take `hidden` (False, the default: leave them
out; True: only them; None: every run), so a hide shows on the next page without a sync and
`nuboard reindex` has nothing to keep. Reads of runs named by id show them whatever the mark.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

from sqlalchemy import bindparam, case, false, func, literal, or_, select, true

from nuboard.files.hidden_runs import read_hidden

from .query import compile_query
from .tables import artifacts, config, lineage, runs, scalars, tags, versions

ID_CHUNK = 500                   # ids per IN (...) list, under SQLite's bound-parameter limit
NAME_LIMIT = 2000                # config keys and scalar names offered to the column chooser
SORTABLE = {"name": runs.c.name, "status": runs.c.status, "id": runs.c.run_id,
            "start": runs.c.created, "duration": runs.c.duration_s,
            "group": runs.c.group_name, "host": runs.c.host}
SUMMARY_KINDS = {"scalar": scalars.c.last, "min": scalars.c.min, "max": scalars.c.max}


class SortKeyError(ValueError):
    """A sort key the runs cannot be ordered by (the message names good ones)."""


class RunsPage(NamedTuple):
    """One page of runs: how many match, the page shown (clamped), how many pages, its rows."""
    total: int
    page: int
    pages: int
    rows: list[dict]


def check_query(query: str, *, now: float) -> None:
    """Raise QuerySyntaxError when the query does not parse (before any catalog is opened)."""
    compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))


def hidden_clause(catalog, hidden: bool | None):
    """The condition on `runs` of the hidden mark: hidden=False leaves the project's hidden
    runs out, True keeps only them, None every run. Past ID_CHUNK ids the list is written into
    the statement (quoted by SQLAlchemy), so no count of hidden runs meets a bound-parameter
    limit."""
    if hidden is None:
        return true()
    ids = sorted(read_hidden(catalog.root, catalog.project))
    if not ids:
        return false() if hidden else true()
    listed = bindparam("hidden_ids", ids, expanding=True, literal_execute=len(ids) > ID_CHUNK)
    return runs.c.run_id.in_(listed) if hidden else runs.c.run_id.not_in(listed)


def _where(catalog, query: str | None, now: float, hidden: bool | None = False):
    """The project's runs, narrowed by the query when it has text, and by the hidden mark."""
    where = runs.c.project_id == catalog.project_id
    if query is not None and query.strip():
        where = where & compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))
    if hidden is not None:
        where = where & hidden_clause(catalog, hidden)
    return where


def _sort_exprs(key: str) -> list:
    """The expressions a sort key orders by (a config value: its number, then its text)."""
    if key in SORTABLE:
        return [SORTABLE[key]]
    kind, _, name = key.partition(":")
    if kind == "config" and name:
        mine = (config.c.run == runs.c.id, config.c.key == name)
        return [select(config.c.value_num).where(*mine).scalar_subquery(),
                select(config.c.value_text).where(*mine).scalar_subquery()]
    if kind in SUMMARY_KINDS and name:
        return [select(SUMMARY_KINDS[kind]).where(scalars.c.run == runs.c.id, scalars.c.rank == 0,
                                                  scalars.c.name == name).scalar_subquery()]
    if key == "tags":
        return [select(func.min(tags.c.tag)).where(tags.c.run == runs.c.id).scalar_subquery()]
    raise SortKeyError(f"cannot sort by {key!r}: use a column such as start, name or config:lr")


def _order(sort: str, desc: bool) -> list:
    """ORDER BY for a sort key: its values, missing ones last (said outright: SQLite sorts NULL
    lowest, PostgreSQL highest), then the run id."""
    order = [(e.desc() if desc else e.asc()).nulls_last() for e in _sort_exprs(sort)]
    order.append(runs.c.run_id.desc() if desc else runs.c.run_id.asc())
    return order


def count_runs(catalog, query: str | None = None, *, now: float, status: str | None = None,
               hidden: bool | None = False) -> int:
    """How many of the project's runs the query matches (and have this catalog status);
    hidden: as hidden_clause."""
    where = _where(catalog, query, now, hidden)
    if status is not None:
        where = where & (runs.c.status == status)
    with catalog.reader.connect() as conn:
        return conn.execute(select(func.count()).select_from(runs).where(where)).scalar_one()


def running_count(catalog) -> int:
    """How many of the project's runs the catalog holds as 'running' (lost ones included),
    hidden ones left out."""
    return count_runs(catalog, None, now=0.0, status="running")


def find_runs(catalog, query: str | None = None, *, now: float, sort: str = "start",
              desc: bool = True, limit: int | None = None, offset: int = 0,
              fields: tuple[str, ...] | None = None, hidden: bool | None = False) -> list[dict]:
    """The `runs` rows (every column, or `fields`) the query matches, in the sort's order;
    hidden: as hidden_clause (hidden runs are left out unless asked).

    Raises:
        QuerySyntaxError: the query does not parse.
        SortKeyError: an unknown sort key.
    """
    columns = [runs.c[f] for f in fields] if fields else [runs]
    stmt = select(*columns).where(_where(catalog, query, now, hidden)).order_by(*_order(sort, desc))
    if limit is not None:
        stmt = stmt.limit(limit).offset(offset)
    with catalog.reader.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(stmt)]


def runs_page(catalog, query: str | None = None, *, now: float, sort: str = "start",
              desc: bool = True, page: int = 1, per_page: int = 100,
              hidden: bool | None = False) -> RunsPage:
    """Page `page` (clamped to 1..pages) of the runs the query matches, `per_page` a page;
    hidden: as hidden_clause."""
    where = _where(catalog, query, now, hidden)  # a bad query, then a bad sort key, fail
    order = _order(sort, desc)                   # before any read
    with catalog.reader.connect() as conn:
        total = conn.execute(select(func.count()).select_from(runs).where(where)).scalar_one()
        pages = max(1, -(-total // per_page))
        page = max(1, min(page, pages))
        rows = [dict(r._mapping) for r in conn.execute(
            select(runs).where(where).order_by(*order).limit(per_page)
            .offset((page - 1) * per_page))]
    return RunsPage(total, page, pages, rows)


def runs_by_id(catalog, run_ids: list[str], fields: tuple[str, ...]) -> dict[str, dict]:
    """The `runs` rows of these run ids (those in the catalog), by run id, with `fields`."""
    columns = [runs.c[f] for f in dict.fromkeys(("run_id", *fields))]
    out: dict[str, dict] = {}
    with catalog.reader.connect() as conn:
        for i in range(0, len(run_ids), ID_CHUNK):
            for r in conn.execute(select(*columns).where(
                    runs.c.project_id == catalog.project_id,
                    runs.c.run_id.in_(run_ids[i:i + ID_CHUNK]))):
                out[r.run_id] = dict(r._mapping)
    return out


def newest_run_ids(catalog, count: int) -> list[str]:
    """The run ids of the project's `count` newest runs that are not hidden, newest first."""
    with catalog.reader.connect() as conn:
        return [r[0] for r in conn.execute(
            select(runs.c.run_id).where(runs.c.project_id == catalog.project_id,
                                        hidden_clause(catalog, False))
            .order_by(runs.c.created.desc(), runs.c.run_id.desc()).limit(count))]


def tags_by_run(catalog, row_ids: list[int]) -> dict[int, list[str]]:
    """Each run's tags in order, by the run's row id (every id given has a list)."""
    out: dict[int, list[str]] = {i: [] for i in row_ids}
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for run, tag in conn.execute(select(tags.c.run, tags.c.tag)
                                         .where(tags.c.run.in_(row_ids[i:i + ID_CHUNK]))
                                         .order_by(tags.c.run, tags.c.tag)):
                out[run].append(tag)
    return out


def config_cells(catalog, row_ids: list[int], keys: list[str]) -> dict[int, dict[str, dict]]:
    """The flattened config values of these keys, by row id then key:
    {'type', 'value_num', 'value_text'} as the `config` table holds them."""
    out: dict[int, dict[str, dict]] = {i: {} for i in row_ids}
    if not row_ids or not keys:
        return out
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for r in conn.execute(select(config).where(config.c.run.in_(row_ids[i:i + ID_CHUNK]),
                                                       config.c.key.in_(keys))):
                out[r.run][r.key] = {"type": r.type, "value_num": r.value_num,
                                     "value_text": r.value_text}
    return out


def scalar_summaries(catalog, row_ids: list[int], names: list[str]) -> dict[int, dict[str, dict]]:
    """Rank 0's summary of these scalars, by row id then name: {'last', 'min', 'max'}."""
    out: dict[int, dict[str, dict]] = {i: {} for i in row_ids}
    if not row_ids or not names:
        return out
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for r in conn.execute(select(scalars.c.run, scalars.c.name, scalars.c.last,
                                         scalars.c.min, scalars.c.max)
                                  .where(scalars.c.run.in_(row_ids[i:i + ID_CHUNK]),
                                         scalars.c.rank == 0, scalars.c.name.in_(names))):
                out[r.run][r.name] = {"last": r.last, "min": r.min, "max": r.max}
    return out


def column_choices(catalog) -> dict[str, list[str]]:
    """Config keys and rank-0 scalar names in the catalog, sorted, at most NAME_LIMIT of each:
    {'config': [...], 'scalar': [...]}."""
    with catalog.reader.connect() as conn:
        keys = [r[0] for r in conn.execute(
            select(config.c.key).distinct().order_by(config.c.key).limit(NAME_LIMIT))]
        names = [r[0] for r in conn.execute(
            select(scalars.c.name).where(scalars.c.rank == 0).distinct()
            .order_by(scalars.c.name).limit(NAME_LIMIT))]
    return {"config": keys, "scalar": names}


def differing_config_keys(catalog, limit: int = 6) -> list[str]:
    """Up to `limit` config keys whose values differ between the catalog's runs (at least two
    distinct values among the runs that hold the key), those most runs hold first, then in key
    order; a key that one run alone holds never differs. One scan of the (key, value) index."""
    with catalog.reader.connect() as conn:
        return [r[0] for r in conn.execute(
            select(config.c.key).group_by(config.c.key)
            .having(func.count(config.c.value_text.distinct()) > 1)
            .order_by(func.count().desc(), config.c.key).limit(limit))]


def shared_scalar_names(catalog, limit: int = 4, last: tuple[str, ...] = ()) -> list[str]:
    """Up to `limit` scalar names, those with the most summaries in the catalog (runs times the
    ranks that logged them) first, then in name order; names whose first segment is in `last`
    (such as timing, system) after all others. One scan of the name index."""
    late = or_(*(scalars.c.name.startswith(prefix + "/", autoescape=True) for prefix in last))
    is_late = case((late, 1), else_=0) if last else literal(0)
    with catalog.reader.connect() as conn:
        return [r[0] for r in conn.execute(
            select(scalars.c.name).group_by(scalars.c.name)
            .order_by(func.max(is_late), func.count().desc(), scalars.c.name).limit(limit))]


def scalar_names_and_ranks(catalog, row_ids: list[int]) -> tuple[list[str], list[int]]:
    """The scalar names these runs logged, in the order first logged, and the ranks that logged
    them, sorted (ranks [0] when there are none). Each run's names come in the order of its
    logs; the run that logged the most names leads (a training run, not the evaluation run that
    happens to be newest), then the others in the order given, adding what they logged besides."""
    if not row_ids:
        return [], [0]
    found: dict[int, list[tuple[str, int]]] = {}
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for run, name, rank in conn.execute(
                    select(scalars.c.run, scalars.c.name, scalars.c.rank)
                    .where(scalars.c.run.in_(row_ids[i:i + ID_CHUNK]))
                    .order_by(scalars.c.run, scalars.c.rank, scalars.c.seq)):
                found.setdefault(run, []).append((name, rank))
    leading = sorted(range(len(row_ids)), key=lambda i: (-len(found.get(row_ids[i], ())), i))
    pairs = [pair for i in leading for pair in found.get(row_ids[i], ())]
    return list(dict.fromkeys(n for n, _ in pairs)), sorted({r for _, r in pairs}) or [0]


def config_rows(catalog, row_ids: list[int]) -> dict[int, dict[str, dict]]:
    """Every flattened config value of these runs, by row id then key (in the config's own
    order): {'type', 'value_num', 'value_text'} as the `config` table holds them."""
    out: dict[int, dict[str, dict]] = {i: {} for i in row_ids}
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for r in conn.execute(select(config).where(config.c.run.in_(row_ids[i:i + ID_CHUNK]))
                                  .order_by(config.c.run, config.c.seq)):
                out[r.run][r.key] = {"type": r.type, "value_num": r.value_num,
                                     "value_text": r.value_text}
    return out


def last_steps(catalog, row_ids: list[int]) -> dict[int, int]:
    """The last step each run logged on rank 0 (its largest last_step), by row id; runs
    without one are left out."""
    out: dict[int, int] = {}
    with catalog.reader.connect() as conn:
        for i in range(0, len(row_ids), ID_CHUNK):
            for run, step in conn.execute(select(scalars.c.run, func.max(scalars.c.last_step))
                                          .where(scalars.c.run.in_(row_ids[i:i + ID_CHUNK]),
                                                 scalars.c.rank == 0)
                                          .group_by(scalars.c.run)):
                if step is not None:
                    out[run] = int(step)
    return out


def produced_refs(catalog) -> list[tuple[str, str, str, int]]:
    """(run id, artifact project, artifact name, version) of each version this project's runs
    produced: lineage 'produced' edges (any project's artifacts) and this project's versions'
    producers; repeats are possible across the two."""
    project = catalog.project
    with catalog.reader.connect() as conn:
        out = [(run_id, a_project, name, int(number)) for run_id, a_project, name, number in
               conn.execute(select(lineage.c.run_id, lineage.c.artifact_project,
                                   lineage.c.artifact_name, lineage.c.version).distinct()
                            .where(lineage.c.kind == "produced",
                                   lineage.c.run_project == project))]
        out += [(run_id, project, name, int(number)) for run_id, name, number in conn.execute(
            select(versions.c.producer_run, artifacts.c.name, versions.c.version)
            .join(artifacts, artifacts.c.id == versions.c.artifact)
            .where(artifacts.c.project_id == catalog.project_id,
                   versions.c.producer_project == project, versions.c.producer_run.isnot(None)))]
    return out


def version_facts(catalog, names: set[str]) -> dict[tuple[str, str, int], dict]:
    """Every version of these artifacts of the catalog's project, by (project, name, version):
    {'type' (the version's, else the artifact's), 'created' (ISO text), 'unlinked' (bool)}."""
    out: dict[tuple[str, str, int], dict] = {}
    names_list = sorted(names)
    with catalog.reader.connect() as conn:
        for i in range(0, len(names_list), ID_CHUNK):
            for row in conn.execute(
                    select(artifacts.c.name, versions.c.version, versions.c.type,
                           artifacts.c.type.label("artifact_type"), versions.c.created,
                           versions.c.unlinked)
                    .join(artifacts, artifacts.c.id == versions.c.artifact)
                    .where(artifacts.c.project_id == catalog.project_id,
                           artifacts.c.name.in_(names_list[i:i + ID_CHUNK]))):
                out[(catalog.project, row.name, int(row.version))] = {
                    "type": row.type or row.artifact_type, "created": row.created,
                    "unlinked": bool(row.unlinked)}
    return out


def reference_versions(catalog) -> list[dict[str, Any]]:
    """The project's linked versions stored by reference, by artifact name then version:
    {'name', 'version', 'base', 'location'} (where their files lie)."""
    with catalog.reader.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(
            select(artifacts.c.name, versions.c.version, versions.c.base, versions.c.location)
            .join(versions, versions.c.artifact == artifacts.c.id)
            .where(artifacts.c.project_id == catalog.project_id,
                   versions.c.storage == "reference", versions.c.unlinked.is_(False))
            .order_by(artifacts.c.name, versions.c.version))]


def run_scalar_rows(catalog, run_id: str, rank: int = 0) -> list[dict]:
    """One run's scalar summaries on `rank`, in the order first logged: {'name', 'last', 'min',
    'max' (NaN ignored), 'count', 'last_step'}; empty when the catalog does not hold the run."""
    with catalog.reader.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(
            select(scalars.c.name, scalars.c.last, scalars.c.min, scalars.c.max,
                   scalars.c.count, scalars.c.last_step)
            .join(runs, runs.c.id == scalars.c.run)
            .where(runs.c.project_id == catalog.project_id, runs.c.run_id == run_id,
                   scalars.c.rank == rank)
            .order_by(scalars.c.seq))]


def child_runs(catalog, run_id: str) -> list[dict]:
    """The project's runs forked from this run, oldest first: {'run_id', 'name'}."""
    with catalog.reader.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(
            select(runs.c.run_id, runs.c.name)
            .where(runs.c.project_id == catalog.project_id, runs.c.parent_run_id == run_id)
            .order_by(runs.c.created, runs.c.run_id))]
