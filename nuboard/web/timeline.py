"""The Timeline page: a project's runs on a wall-time axis (sessions, forks, crashes, the
versions they made as diamonds), with the query box of the Runs page, and its JSON twin.

The page carries its data as JSON (a `type="application/json"` script element, never run)
and static/timeline.js draws it as SVG; while a run runs, the script asks the JSON twin
again every 5 s. At most LIMIT runs are drawn, the newest (app.config
NUBOARD_TIMELINE_LIMIT changes it).
"""
from __future__ import annotations

import time

from flask import Blueprint, current_app, render_template, request, url_for

from nuboard.catalog.query import QuerySyntaxError
from nuboard.catalog.query_keys import query_warnings

from .context import catalogs, load_project, wants_json
from .run_colours import project_colours
from .timeline_data import LIMIT, SessionCache
from .timeline_data import timeline as timeline_of

timeline = Blueprint("timeline", __name__)
timeline.url_value_preprocessor(load_project)
REFRESH_S = 5


def session_cache() -> SessionCache:
    """The app's cache of resumed runs' sessions (read from run.json when it changed)."""
    return current_app.extensions.setdefault("nuboard_timeline_sessions", SessionCache())


def _other_catalog(project: str):
    """Another project's catalog, to read the versions this project's runs made there (None
    when it cannot open: the diamonds go without their times)."""
    return catalogs().find(project)


def artifact_url(project: str, name: str, number: int) -> str:
    """The Artifacts page of one version: /p/<project>/.artifact/<name>/v<N>."""
    return url_for("artifacts.version", project=project, name=name, number=int(number))


def timeline_data(project: str, query: str) -> tuple[dict | None, str | None]:
    """The data the page draws, with links and each run's colour (the swatch by its name), or
    the query's error message."""
    try:
        data = timeline_of(catalogs().get(project), query=query, now=time.time(),
                           sessions=session_cache(), other_catalog=_other_catalog,
                           limit=int(current_app.config.get("NUBOARD_TIMELINE_LIMIT", LIMIT)))
    except QuerySyntaxError as exc:
        return None, str(exc)
    colours = project_colours(project)
    for run in data["runs"]:
        run["url"] = url_for("run.details", project=project, run_id=run["id"])
        run["colour"] = colours.run(run["id"])
        if run["parent"] is not None:
            run["parent"]["url"] = url_for("run.details", project=project,
                                           run_id=run["parent"]["id"])
        for version in run["versions"]:
            version["url"] = (artifact_url(version["project"], version["name"],
                                           version["version"])
                              if version["state"] != "missing" else None)
    data["refresh_s"] = REFRESH_S
    data["warnings"] = query_warnings(catalogs().get(project), query)
    return data, None


@timeline.get("/p/<project:project>/.timeline")
@timeline.get("/api/p/<project:project>/.timeline", endpoint="page_json")
def page(project: str):
    query = request.args.get("q", "")
    data, error = timeline_data(project, query)
    if wants_json():
        if error is not None:
            return {"error": error, "query": query, "status": 400}, 400
        return {"project": project, "query": query, **data}
    return render_template("timeline.html", project=project, query=query, data=data,
                           error=error, warnings=data["warnings"] if data else [])
