"""The catalog's reads for artifacts: versions, lineage edges, the runs that used a version.

Every query the artifact-side faces (`nuboard artifact`, the Artifacts pages, the lineage
graph) run against a project's catalog is one function here, returning plain rows: dicts
or NamedTuples, never SQLAlchemy rows. Each takes the Catalog the face holds (its `reader`
engine and `project_id`). Long lists of keys are asked CHUNK at a time, under SQLite's limit
on bound parameters.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

from sqlalchemy import and_, select, tuple_

from .tables import artifacts, lineage, runs, versions

CHUNK = 400


class VersionSummary(NamedTuple):
    """What a lineage node shows of a version."""
    type: str | None
    description: str | None
    unlinked: bool


class LineageEdge(NamedTuple):
    """One DISTINCT edge: a run (run_project, run_id) and a version it produced or used."""
    run_project: str
    run_id: str
    artifact_project: str
    artifact_name: str
    version: int


class RunSummary(NamedTuple):
    """What a link to a run shows: its name, and what its status is computed from."""
    name: str
    status: str
    heartbeat_mtime: float | None
    lost_after: float | None


# -- versions -------------------------------------------------------------------------------

def version_rows(catalog, *, unlinked: bool | None = None, name: str | None = None) -> list[dict]:
    """The project's versions, newest first (by created, then number): every column of
    `versions` plus the artifact's `name`. unlinked: only the unlinked (True) or the linked
    (False) ones; name: only that artifact's."""
    stmt = (select(artifacts.c.name, versions)
            .join(artifacts, versions.c.artifact == artifacts.c.id)
            .where(artifacts.c.project_id == catalog.project_id))
    if unlinked is not None:
        stmt = stmt.where(versions.c.unlinked == unlinked)
    if name is not None:
        stmt = stmt.where(artifacts.c.name == name)
    stmt = stmt.order_by(versions.c.created.desc().nulls_last(), versions.c.version.desc())
    with catalog.reader.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(stmt)]


def version_summaries(catalog, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], VersionSummary]:
    """{(name, number): VersionSummary} for those of `keys` the project's catalog holds."""
    keys = list(keys)
    found = {}
    with catalog.reader.connect() as conn:
        for i in range(0, len(keys), CHUNK):
            stmt = (select(artifacts.c.name, versions.c.version, versions.c.type,
                           versions.c.description, versions.c.unlinked)
                    .join(artifacts, versions.c.artifact == artifacts.c.id)
                    .where(artifacts.c.project_id == catalog.project_id,
                           tuple_(artifacts.c.name, versions.c.version).in_(keys[i:i + CHUNK])))
            for name, number, kind, description, unlinked in conn.execute(stmt):
                found[(name, number)] = VersionSummary(kind, description, bool(unlinked))
    return found


# -- lineage --------------------------------------------------------------------------------

def used_by(catalog, project: str, name: str, number: int) -> list[tuple[str, str]]:
    """The runs (run_project, run_id) that used project/name:vN, sorted, each once."""
    with catalog.reader.connect() as conn:
        rows = conn.execute(select(lineage.c.run_project, lineage.c.run_id).distinct()
                            .where(lineage.c.kind == "used", lineage.c.artifact_project == project,
                                   lineage.c.artifact_name == name, lineage.c.version == number)
                            .order_by(lineage.c.run_project, lineage.c.run_id)).all()
    return [(p, r) for p, r in rows]


def used_from_other_projects(catalog, project: str) -> list[tuple[str, str]]:
    """(artifact_project, artifact_name) of the other projects' artifacts that the project's
    runs used, each once."""
    with catalog.reader.connect() as conn:
        rows = conn.execute(select(lineage.c.artifact_project, lineage.c.artifact_name)
                            .distinct().where(lineage.c.kind == "used",
                                              lineage.c.run_project == project,
                                              lineage.c.artifact_project != project)).all()
    return [(p, a) for p, a in rows]


def edges_of_versions(catalog, kind: str, keys: Iterable[tuple[str, str, int]]) -> set[LineageEdge]:
    """The edges of `kind` ('produced' or 'used') that end at one of the versions
    (artifact_project, artifact_name, version) in `keys`."""
    return _edges(catalog, kind, (lineage.c.artifact_project, lineage.c.artifact_name,
                                  lineage.c.version), keys)


def edges_of_runs(catalog, kind: str, keys: Iterable[tuple[str, str]]) -> set[LineageEdge]:
    """The edges of `kind` ('produced' or 'used') that start at one of the runs
    (run_project, run_id) in `keys`."""
    return _edges(catalog, kind, (lineage.c.run_project, lineage.c.run_id), keys)


def _edges(catalog, kind: str, columns: tuple, keys: Iterable[tuple]) -> set[LineageEdge]:
    keys = sorted(set(keys))
    found: set[LineageEdge] = set()
    with catalog.reader.connect() as conn:
        for i in range(0, len(keys), CHUNK):
            chunk = keys[i:i + CHUNK]
            match = (and_(*(c == v for c, v in zip(columns, chunk[0]))) if len(chunk) == 1
                     else tuple_(*columns).in_(chunk))
            stmt = (select(lineage.c.run_project, lineage.c.run_id, lineage.c.artifact_project,
                           lineage.c.artifact_name, lineage.c.version)
                    .distinct().where(lineage.c.kind == kind, match))
            found.update(LineageEdge(*row) for row in conn.execute(stmt).all())
    return found


def lineage_projects(catalog) -> tuple[frozenset, frozenset]:
    """(the artifact projects, the run projects) that the catalog's lineage edges name."""
    with catalog.reader.connect() as conn:
        arts = conn.execute(select(lineage.c.artifact_project).distinct()).scalars().all()
        run_projects = conn.execute(select(lineage.c.run_project).distinct()).scalars().all()
    return frozenset(arts), frozenset(run_projects)


# -- the runs an edge names -----------------------------------------------------------------

def run_summaries(catalog, run_ids: Iterable[str]) -> dict[str, RunSummary]:
    """{run_id: RunSummary} for those of `run_ids` the project's catalog holds."""
    run_ids = list(run_ids)
    found = {}
    with catalog.reader.connect() as conn:
        for i in range(0, len(run_ids), CHUNK):
            stmt = (select(runs.c.run_id, runs.c.name, runs.c.status, runs.c.heartbeat_mtime,
                           runs.c.lost_after)
                    .where(runs.c.project_id == catalog.project_id,
                           runs.c.run_id.in_(run_ids[i:i + CHUNK])))
            for run_id, name, status, heartbeat, lost_after in conn.execute(stmt):
                found[run_id] = RunSummary(name, status, heartbeat, lost_after)
    return found
