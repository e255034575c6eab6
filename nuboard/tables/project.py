"""The project a table is read from: its name and folder checked, its catalog opened and synced."""
from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
import os
import re
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

from nuboard.errors import NuBoardError
from nuboard.eventlog.source import check_keys, check_rank
from nuboard.files import layout
from nuboard.files.names import check_project

_GLOB = re.compile(r"[*?\[]")


class ProjectNotFoundError(NuBoardError, ValueError):
    """nb.runs or nb.history was given a project that has no `runs/` folder under the root."""


def project_root(project: object, dir: "str | os.PathLike[str] | None") -> Path:
    """The root folder (dir, else $NUBOARD_DIR, else ./experiments), with the project's name
    checked and its `runs/` folder there; else ProjectNotFoundError saying where it looked."""
    project = check_project(project)
    root = layout.resolve_root(dir)
    if not layout.runs_dir(root, project).is_dir():       # type: ignore[arg-type]
        where = f"no folder {str(layout.runs_dir(root, project))!r}"    # type: ignore[arg-type]
        if not root.is_dir():
            where = f"the experiments folder {str(root)!r} does not exist"
        raise ProjectNotFoundError(
            f"Project {project!r} not found: {where}. Check the name, or pass dir= "
            "(or set NUBOARD_DIR) to the folder that holds your projects.")
    return root


def check_query(query: object, now: float) -> str | None:
    """The query (None or blank: every run), parsed once to fail before any catalog is opened.

    Raises InvalidTypeError for a query that is not a str, QuerySyntaxError for one that does
    not parse.
    """
    if query is None:
        return None
    if not isinstance(query, str):
        from nuboard.errors import InvalidTypeError
        raise InvalidTypeError(f"query must be a str (docs/query.md), not {type(query).__name__} "
                               f"({query!r:.80})")
    from nuboard.catalog.query import compile_query
    compile_query(query, now=dt.datetime.fromtimestamp(now, dt.timezone.utc))
    return query


@contextlib.contextmanager
def synced_catalog(root: Path, project: str) -> Iterator:
    """The project's catalog, opened and brought up to date from the run folders (as
    `nuboard ls` does: a run folder the sync skips, damaged or half written, is left out)."""
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync

    with Catalog(root, project) as catalog:
        sync(catalog)
        yield catalog


def key_matcher(keys: "str | Iterable[str] | None") -> Callable[[str], bool] | None:
    """A test of names for `keys` (None: every name): a name matches an entry that equals it,
    or that is a glob (with *, ? or [...], case-sensitive; * crosses '/') it matches."""
    keys = check_keys(keys)
    if keys is None:
        return None
    exact = frozenset(keys)
    globs = [fnmatch.translate(k) for k in keys if _GLOB.search(k)]
    if not globs:
        return exact.__contains__
    pattern = re.compile("|".join(f"(?:{g})" for g in globs))
    return lambda name: name in exact or pattern.match(name) is not None


class Matching(NamedTuple):
    """What nb.history and nb.media read: the root, the project, the test of key names (None:
    all), the rank, and the run ids the query matched, newest first."""
    root: Path
    project: str
    match: Callable[[str], bool] | None
    rank: int
    run_ids: list[str]


@contextlib.contextmanager
def matching_runs(project: object, keys: object, query: object, rank: object,
                  dir: "str | os.PathLike[str] | None") -> Iterator[tuple[Matching, object]]:
    """Every argument checked before a catalog is opened, then the synced catalog and the runs
    the query matches: (Matching, catalog), the catalog open for the block. The query's
    warnings are QueryWarnings at the caller's line (query_warn.py)."""
    from nuboard.catalog.run_reads import find_runs

    from .query_warn import warn_query
    now = time.time()
    match = key_matcher(keys)                          # type: ignore[arg-type]
    rank = check_rank(rank)
    project = check_project(project)
    root = project_root(project, dir)
    query = check_query(query, now)
    with synced_catalog(root, project) as catalog:     # type: ignore[arg-type]
        warn_query(catalog, query)
        run_ids = [r["run_id"] for r in find_runs(catalog, query, now=now, fields=("run_id",))]
        yield Matching(root, project, match, rank, run_ids), catalog     # type: ignore[arg-type]
