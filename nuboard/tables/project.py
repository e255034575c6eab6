"""The project a table is read from: its name and folder checked, its catalog opened and synced."""
from __future__ import annotations

import contextlib
import datetime as dt
import os
from pathlib import Path
from typing import Iterator

from nuboard.errors import NuBoardError
from nuboard.files import layout
from nuboard.files.names import check_project


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
