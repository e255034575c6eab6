"""What the page modules share about the request: the app's catalogs and caches, whether JSON
or a fragment is asked for, the project and run of the URL (checked once per request by
`load_project`, kept in `g`), and the `edits_allowed` rule for --read-only and for a bucket's
mirror (`nuboard up s3://...`, web/mirror.py), which is served read-only.

The factory (app.py) imports the pages; the pages import this module, never app.py.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable

from flask import abort, current_app, g, request

from nuboard.errors import NuBoardError
from nuboard.files import layout
from nuboard.files.names import check_folder_name, check_project
from nuboard.files.status import HeartbeatWatch

from .catalogs import Catalogs
from .chart_prefetch import Prefetch
from .chartdata import SeriesCache
from .run_details import RunMissing, RunUnreadable, run_overview


def catalogs() -> Catalogs:
    return current_app.extensions["nuboard_catalogs"]


def series_cache() -> SeriesCache:
    return current_app.extensions["nuboard_series"]


def prefetch() -> Prefetch:
    """The first charts' data computed while the Charts page loads (web/chart_prefetch.py)."""
    return current_app.extensions["nuboard_prefetch"]


def root_dir() -> Path:
    return current_app.config["NUBOARD_ROOT"]


def heartbeat_watch() -> HeartbeatWatch:
    """The app's memory of runs' heartbeats (a run whose heartbeat stopped is 'lost')."""
    return current_app.extensions.setdefault("nuboard_watch", HeartbeatWatch())


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.args.get("format") == "json"


def is_fragment() -> bool:
    """An htmx request for part of a page (a history restore gets the whole page)."""
    return (request.headers.get("HX-Request") == "true"
            and request.headers.get("HX-History-Restore-Request") != "true")


def known_project(project: str) -> str:
    """The project named in the URL, or 404 (400 for a name that cannot be a project)."""
    try:
        project = check_project(project)
    except NuBoardError as exc:
        abort(400, description=str(exc))
    if project not in catalogs().projects():
        catalogs().forget_projects()
        if project not in catalogs().projects():
            abort(404, description=f"There is no project {project!r} under "
                                   f"{str(root_dir())!r}.")
    return project


def known_run(project: str, run_id: str) -> tuple[str, str]:
    """The project and run named in the URL, or 404 (400 for a name that cannot be one)."""
    project = known_project(project)
    try:
        check_folder_name(run_id, "run id")
    except NuBoardError as exc:
        abort(400, description=str(exc))
    if not os.path.lexists(layout.run_dir(root_dir(), project, run_id) / layout.RUN_JSON):
        abort(404, description=f"Run {run_id!r} not found in project {project!r}.")
    return project, run_id


def tab_overview(project: str, run_id: str) -> dict:
    """What the Console and Files tabs show of the run: the Overview's data, or, for a run
    whose run.json cannot be shown, its id and the reason (its files can still be seen)."""
    try:
        return run_overview(root_dir(), project, run_id, watch=heartbeat_watch())
    except RunMissing as exc:
        abort(404, description=str(exc))
    except RunUnreadable as exc:
        return {"project": project, "id": run_id, "name": run_id, "status": "unknown",
                "damaged": str(exc)}


def load_project(endpoint: str | None, values: dict | None) -> None:
    """Check the URL's <project> (and <run_id>) once per request, before the view runs, so
    views do not: they get g.project (and g.run_id), and project_catalog(). A project or run
    that is not there is a 404 (a name that cannot be one a 400)."""
    if not values or "project" not in values:
        return
    if "run_id" in values:
        g.project, g.run_id = known_run(values["project"], values["run_id"])
    else:
        g.project = known_project(values["project"])


def project_catalog():
    """The Catalog of the URL's project, as g.catalog: opened (and synced when stale) on first
    use in the request, so a page that does not read it (a download, the console) does not."""
    if "catalog" not in g:
        g.catalog = catalogs().get(g.project)
    return g.catalog


def mirror():
    """The bucket this viewer serves a mirror of (web/mirror.Mirror), or None for a folder."""
    return current_app.extensions.get("nuboard_mirror")


def read_only_refusal(what: str) -> str:
    """Why an edit is refused: '... --read-only: <what>.', or over a bucket's mirror 's3://lab/exp
    is served read-only: <what>; edit where the runs are written, then ...'."""
    served = mirror()
    if served is not None:
        return served.refusal(what)
    return f"This viewer was started with --read-only: {what}."


def edits_allowed(what: str) -> Callable:
    """Refuse the route with 403 under --read-only (and over a mirror): read_only_refusal."""
    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(*args, **kwargs):
            if current_app.config["NUBOARD_READ_ONLY"]:
                abort(403, description=read_only_refusal(what))
            return view(*args, **kwargs)
        return checked
    return decorate
