"""Run details: Overview (with editable notes, refreshed while the run runs), Console (live
tail) and the tabs' JSON twins. Every tab says when the run is hidden from the lists, and with
--edit-runs has its Hide (or Unhide) and Delete buttons (their routes: web/run_edit.py)."""
from __future__ import annotations

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from nuboard.catalog.run_reads import run_scalar_rows
from nuboard.errors import NuBoardError
from nuboard.files import layout, runjson
from nuboard.files.edits import EditConflictError, edit_notes, notes_fingerprint
from nuboard.files.hidden_runs import read_hidden
from nuboard.files.names import MAX_NOTES

from .charts import chart_context
from .console_text import ConsoleView, read_console_file
from .containment import open_file_inside
from .context import (
    catalogs,
    edits_allowed,
    heartbeat_watch,
    is_fragment,
    load_project,
    project_catalog,
    root_dir,
    tab_overview,
    wants_json,
)
from .media_section import media_context
from .run_colours import project_colours
from .run_details import RunMissing, RunUnreadable, run_overview
from .run_results import scalar_results
from .security import form_limit
from .timeline_data import produced_versions

run_page = Blueprint("run", __name__)
run_page.url_value_preprocessor(load_project)
TABS = ("overview", "console", "files", "charts", "media")
# The notes form's largest body: MAX_NOTES characters of up to 4 UTF-8 bytes, each byte
# url-encoded as %XX, and room for the other fields.
NOTES_FORM_BYTES = MAX_NOTES * 4 * 3 + 64 * 1024


def overview(project: str, run_id: str) -> dict:
    """The Overview's data; 404 when the run is gone, 422 naming what is wrong with its
    run.json when that cannot be shown (Console and Files still can: see tab_overview)."""
    try:
        run = run_overview(root_dir(), project, run_id, watch=heartbeat_watch())
    except RunMissing as exc:
        abort(404, description=str(exc))
    except RunUnreadable as exc:
        abort(422, description=str(exc))
    run["outputs"] = with_made_versions(run["outputs"], made_versions(project, run_id))
    return run


def overview_or_none(project: str, run_id: str) -> dict | None:
    """The Overview's data, or None when the run's run.json cannot be shown (what a page about
    the run shows beside it: the delete confirmation)."""
    try:
        return overview(project, run_id)
    except HTTPException:
        return None


def run_hidden(project: str, run_id: str) -> bool:
    """Whether the run is hidden from the lists (the project's hidden.json)."""
    return run_id in read_hidden(root_dir(), project)


def with_results(run: dict) -> dict:
    """The Overview's data with its Results (run_results.scalar_results): what the page and
    its JSON twin show, and the notes form does not need."""
    run["results"] = scalar_results(layout.run_dir(root_dir(), run["project"], run["id"]),
                                    run_scalar_rows(project_catalog(), run["id"]),
                                    run["prefixes"])
    return run


def made_versions(project: str, run_id: str) -> list[dict]:
    """The versions the catalog says this run made (their producer, or a 'produced' edge),
    in this project or another: what the Timeline and the lineage show."""
    return produced_versions(catalogs().get(project), {run_id}, catalogs().find).get(run_id, [])


def with_made_versions(outputs: list[dict], made: list[dict]) -> list[dict]:
    """run.json's outputs, then each version made from the run that they do not name."""
    named = {(o.get("project"), o.get("name"), o.get("version")) for o in outputs}
    return outputs + [{"project": v["project"], "name": v["name"], "version": v["version"],
                       "state": v["state"]}
                      for v in made if (v["project"], v["name"], v["version"]) not in named]


def with_notes_base(run: dict) -> dict:
    """The Overview's data with `notes_base`, what the notes form names as the notes it was
    opened with: the fingerprint of the whole notes. Notes over MAX_NOTES (written by another
    tool) are shown cut, so for those run.json is read again; if it changed meanwhile, the base
    is the shown text's, which a save then finds stale (409), as it is."""
    shown = run.get("notes")
    whole = shown
    if isinstance(shown, str) and len(shown) == MAX_NOTES:      # perhaps cut: read them whole
        try:
            doc = runjson.read_run(layout.run_dir(root_dir(), run["project"], run["id"]))
            notes = doc.get("notes") if isinstance(doc, dict) else None
        except (OSError, ValueError, RecursionError):
            notes = None
        if isinstance(notes, str) and notes[:MAX_NOTES] == shown:
            whole = notes
    run["notes_base"] = notes_fingerprint(whole)
    return run


def console_view(project: str, run_id: str) -> ConsoleView:
    """The run's files/output.log as a terminal shows it; nothing when it leads outside."""
    fh = open_file_inside(layout.run_dir(root_dir(), project, run_id), f"{layout.FILES}/output.log")
    if fh is None:
        return ConsoleView([], 0, False, 0, False)
    with fh:
        return read_console_file(fh)


@run_page.get("/p/<project:project>/.run/<run_id>")
@run_page.get("/api/p/<project:project>/.run/<run_id>", endpoint="details_json")
def details(project: str, run_id: str):
    tab = request.args.get("tab", "overview")
    if wants_json():
        return dict(with_results(overview(project, run_id)), hidden=run_hidden(project, run_id))
    if tab not in TABS:
        abort(404, description=f"No tab {tab!r}: use one of {', '.join(TABS)}.")
    run = (with_notes_base(with_results(overview(project, run_id))) if tab == "overview"
           else tab_overview(project, run_id))
    context = {"project": project, "run": run, "tab": tab,
               "run_colour": project_colours(project).run(run_id),
               "run_hidden": run_hidden(project, run_id),
               "edit_runs": bool(current_app.config.get("NUBOARD_EDIT_RUNS"))}
    if tab == "console":
        context["console"] = console_view(project, run_id)
    if tab == "files":
        from .files import page_listing
        context["listing"] = page_listing(project, run_id, "")
    if tab == "charts":
        context.update(chart_context(project, [run_id]), group_keys=[], group="")   # one run: no groups
        context.pop("found")
    if tab == "media":
        context.update(media_context(project, [{"id": run_id}]),
                       media_empty_note="This run logged no media.")
    return render_template("run.html", **context)


@run_page.get("/p/<project:project>/.run/<run_id>/live")
def live(project: str, run_id: str):
    """What the Overview's poller asks for every 2 s while the run runs: its status, duration,
    Results and the rest that changes, swapped in by id (templates/_run_live.html), and the
    poller again, without a poll once the run no longer runs. Asked outside htmx, the page."""
    if not is_fragment():
        return redirect(url_for("run.details", project=project, run_id=run_id))
    try:
        run = with_results(overview(project, run_id))
    except HTTPException as exc:        # gone or unreadable since: say so, and stop polling
        return render_template("_run_refresh.html", project=project, gone=exc.description,
                               run={"id": run_id, "status": "unknown"})
    return render_template("_run_refresh.html", project=project, run=run, gone=None)


@run_page.get("/p/<project:project>/.run/<run_id>/console")
def console(project: str, run_id: str):
    """The console from its end; with ?size=N, 204 (nothing to swap) while the file is that size."""
    view = console_view(project, run_id)
    running = tab_overview(project, run_id)["status"] == "running"
    if wants_json():
        return {"size": view.size, "truncated": view.truncated, "lines": view.lines,
                "running": running}
    if request.args.get("size") == str(view.size) and running and is_fragment():
        return "", 204
    return render_template("_console.html", project=project, run={"id": run_id,
                           "status": "running" if running else "done"}, console=view)


@run_page.get("/api/p/<project:project>/.run/<run_id>/console")
def console_json(project: str, run_id: str):
    view = console_view(project, run_id)
    return {"size": view.size, "truncated": view.truncated, "lines": view.lines}


@run_page.post("/p/<project:project>/.run/<run_id>/notes")
@form_limit(NOTES_FORM_BYTES)
@edits_allowed("notes cannot be edited")
def notes(project: str, run_id: str):
    """Replace the notes, if they are still what the form was opened with (else 409): the
    form names them by base_sha256 (with_notes_base), or as text (base, base_set)."""
    form = request.form
    text = form.get("notes", "").replace("\r\n", "\n")
    if form.get("base_sha256"):
        opened = {"fingerprint": form["base_sha256"]}
    else:
        opened = {"base": form.get("base") if form.get("base_set") == "1" else None}
    status = 200
    error = None
    try:
        edit_notes(layout.run_dir(root_dir(), project, run_id), text, **opened)
        catalogs().sync_now(project)
    except EditConflictError as exc:
        error, status = str(exc), 409
    except NuBoardError as exc:
        error, status = str(exc), 400
    except OSError as exc:            # run.json's lock or its write failed (never a 500)
        error, status = (f"the notes of run {run_id!r} could not be saved ({exc.strerror or exc}"
                         "): try again, or check that its folder can be written."), 409
    run = with_notes_base(overview(project, run_id))
    if wants_json():
        return ({"notes": run["notes"], "notes_base": run["notes_base"], "error": error}, status)
    return render_template("_notes.html", project=project, run=run, error=error,
                           draft=text if error else None), status
