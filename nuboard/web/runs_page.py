"""The Runs page: the project picker, the query box, the table, saved views (and JSON twins)."""
from __future__ import annotations

import time
from urllib.parse import urlencode

from flask import Blueprint, abort, redirect, render_template, request, url_for

from nuboard.catalog import run_reads
from nuboard.catalog.query import QuerySyntaxError
from nuboard.catalog.query_keys import completion_keys, query_warnings

from . import artifact_data, runs_shape, runs_table, views
from .context import (
    catalogs,
    edits_allowed,
    is_fragment,
    load_project,
    project_catalog,
    root_dir,
    wants_json,
)
from .run_colours import project_colours

runs_page = Blueprint("runs", __name__)
runs_page.url_value_preprocessor(load_project)


@runs_page.get("/")
@runs_page.get("/api/projects", endpoint="projects_json")
def index():
    names = catalogs().projects()
    if wants_json():
        return {"root": str(root_dir()), "projects": names}
    if len(names) == 1:
        return redirect(url_for("runs.runs", project=names[0]))
    return render_template("index.html", names=names)


def table_args(view: dict | None = None) -> dict:
    """The table's state from the URL, a saved view filling what the URL leaves out
    (columns [] when none are chosen: the table shows its default columns; widths {column: px}
    and the grouping key, runs_shape's; a bad width or key is a 400 naming it)."""
    view = view or {}
    args = request.args
    cols = args.get("cols")
    columns = [c for c in cols.split(",") if c] if cols else list(view.get("columns") or [])
    sort = args.get("sort") or view.get("sort") or "start"
    desc_arg = args.get("desc")
    desc = (desc_arg != "0") if desc_arg is not None else bool(view.get("desc", True))
    try:
        page = max(1, int(args.get("page", "1")))
        per_page = int(args.get("per_page", str(runs_table.PER_PAGE)))
    except ValueError:
        abort(400, description="page and per_page must be whole numbers.")
    query = args.get("q")
    if query is None:
        query = view.get("query") or ""
    try:
        widths = (runs_shape.parse_widths(args["widths"]) if "widths" in args
                  else dict(view.get("widths") or {}))
        group = runs_shape.check_group(args["group"] if "group" in args
                                       else view.get("group") or "")
    except runs_shape.ShapeError as exc:
        abort(400, description=str(exc))
    hidden = args.get("hidden", "0")
    if hidden not in ("0", "1"):
        abort(400, description=f"hidden={hidden[:20]!r}: give 1 (the hidden runs) or 0.")
    return {"query": query, "columns": columns, "sort": sort, "desc": desc, "page": page,
            "per_page": per_page, "widths": widths, "group": group, "hidden": hidden == "1"}


def _table(project: str, state: dict) -> tuple[dict | None, str | None]:
    catalog = catalogs().get(project)
    try:
        defaults = None if state["columns"] else _defaults(project)
        shown = {k: v for k, v in state.items() if k != "widths"}
        return runs_table.table_page(catalog, now=time.time(), defaults=defaults, **shown), None
    except QuerySyntaxError as exc:
        return None, str(exc)
    except runs_table.TableError as exc:
        return None, str(exc)


def query_notes(project: str, query: str) -> tuple[str | None, list[str]]:
    """The query's syntax error (None when it parses) and its warnings (unknown keys)."""
    try:
        return None, query_warnings(catalogs().get(project), query)
    except QuerySyntaxError as exc:
        return str(exc), []


@runs_page.get("/api/p/<project:project>/.query-keys")
def query_keys(project: str):
    """What the query box completes: fields, config keys, scalars, tag/status/group values."""
    return {"project": project, **catalogs().remember(project, "query-keys", completion_keys)}


def state_url(project: str, state: dict, **change) -> str:
    """The Runs page URL of a table state with some parts changed."""
    merged = dict(state, **change)
    params = {"q": merged["query"], "cols": ",".join(merged["columns"]), "sort": merged["sort"],
              "desc": "1" if merged["desc"] else "0", "page": str(merged["page"])}
    if not merged["columns"]:
        del params["cols"]                       # the default columns, as the project changes
    if merged.get("per_page", runs_table.PER_PAGE) != runs_table.PER_PAGE:
        params["per_page"] = str(merged["per_page"])
    if merged.get("widths"):
        params["widths"] = runs_shape.widths_text(merged["widths"])
    if merged.get("group"):
        params["group"] = merged["group"]
    if merged.get("hidden"):
        params["hidden"] = "1"
    return url_for("runs.runs", project=project) + "?" + urlencode(params)


@runs_page.get("/p/<project:project>")
@runs_page.get("/api/p/<project:project>/runs", endpoint="runs_json")
def runs(project: str):
    view = None
    if request.args.get("view"):
        view = views.find_view(root_dir(), project, request.args["view"])
        if view is None:
            abort(404, description=f"No saved view {request.args['view']!r} in project "
                                   f"{project!r}.")
    state = table_args(view)
    table, error = _table(project, state)
    query_error, warnings = query_notes(project, state["query"])
    if wants_json():
        if error is not None:
            return {"error": error, "query": state["query"], "status": 400}, 400
        return {"project": project, "query": state["query"], "warnings": warnings,
                "widths": state["widths"], **table}    # 'hidden': the hidden runs listed
    context = {"project": project, "state": state, "table": table,
               "error": None if query_error else error, "query_error": query_error,
               "warnings": warnings, "view": view, "state_url": state_url,
               "widths_text": runs_shape.widths_text,
               "selected": view.get("runs", []) if view else [],
               "hidden_count": run_reads.count_runs(catalogs().get(project), now=time.time(),
                                                    hidden=True)}
    if is_fragment() and request.headers.get("HX-Target") == "runs-results":
        notes = render_template("_query_notes.html", oob=True, **context)
        if query_error:                 # the last good rows stay; the error shows by the box
            return notes, 200, {"HX-Reswap": "none", "HX-Push-Url": "false"}
        return render_template("_runs_results.html", **context) + notes
    context["saved_views"], context["views_note"] = views.read_views_noted(root_dir(), project)
    context["colours_note"] = project_colours(project).note
    context["skipped"] = catalogs().skipped(project)
    context["artifacts"] = _artifacts_without_runs(project, state, table)
    context["available"] = _available(project)
    context["base_columns"] = runs_table.BASE_COLUMNS
    return render_template("runs.html", **context)


def _artifacts_without_runs(project: str, state: dict, table: dict | None) -> list[dict]:
    """The project's artifacts when it has no run at all (a `datasets` project, say), for the
    page to show them rather than only "No runs"; [] when it has runs or a query is given."""
    if state["query"] or table is None or table["total"]:
        return []
    return artifact_data.artifact_list(catalogs(), project)


def _available(project: str) -> dict:
    """The column chooser's lists, computed again only when a sync changed the project."""
    return catalogs().remember(project, "columns", runs_table.available_columns)


def _defaults(project: str) -> list[str]:
    """The columns shown when none are chosen, computed again only when a sync changed the
    project."""
    return catalogs().remember(project, "default_columns", runs_table.default_columns)


@runs_page.get("/p/<project:project>/.views")
def views_list(project: str):
    return {"project": project, "views": views.read_views(root_dir(), project)}


@runs_page.post("/p/<project:project>/.views")
@edits_allowed("views cannot be saved")
def views_save(project: str):
    form = request.form
    try:
        columns = runs_table.check_columns([c for c in form.get("cols", "").split(",") if c])
        view = views.make_view(form.get("name", ""), form.get("q", ""), columns,
                               form.get("sort") or "start", form.get("desc", "1") != "0",
                               [r for r in form.get("runs", "").split(",") if r],
                               form.get("x") or "step",
                               widths=runs_shape.parse_widths(form.get("widths", "")),
                               group=runs_shape.check_group(form.get("group", "")))
        saved = views.save_view(root_dir(), project, view)
    except (runs_table.TableError, views.ViewError, runs_shape.ShapeError) as exc:
        abort(400, description=str(exc))
    views.index_views(project_catalog(), saved)
    target = url_for("runs.runs", project=project) + "?" + urlencode({"view": view["name"]})
    if is_fragment():
        return "", 204, {"HX-Redirect": target}
    return redirect(target, code=303)


@runs_page.post("/p/<project:project>/.views/delete")
@edits_allowed("views cannot be deleted")
def views_delete(project: str):
    name = request.form.get("name", "")
    try:
        deleted = views.delete_view(root_dir(), project, name)
    except views.ViewError as exc:
        abort(400, description=str(exc))
    if not deleted:
        abort(404, description=f"No saved view {name!r} in project {project!r}.")
    views.index_views(project_catalog(), views.read_views(root_dir(), project))
    return redirect(url_for("runs.runs", project=project), code=303)
