"""Hiding, deleting and restoring runs from the viewer (with `nuboard up --edit-runs`).

    POST /p/<project>/.hide            run=<id> (repeatable), hidden=1|0, back=run|runs
    GET  /p/<project>/.delete?runs=<id>,...   the confirmation: what uses each run, what keeps it
    POST /p/<project>/.delete          runs=<id>,...: each folder moved to runs/.trash/<id>
    GET  /p/<project>/.trash           the runs in the trash (Restore buttons with --edit-runs)
    POST /p/<project>/.trash/restore   run=<id>: moved back and indexed again

Each has its JSON twin under /api/. The blueprint is always registered: without --edit-runs
every route but the Trash list answers 403 saying so (and --read-only refuses the flag:
create_app raises, `nuboard up` is a usage error). The app checks the CSRF token and the
Origin of every POST (security.py).

A hide is a mark in the project's hidden.json (files/hidden_runs.py): the lists leave the run
out, its page still shows it. A delete follows `nuboard rm`'s rule (catalog/run_trash_rule.py):
a run whose files an artifact version references, or that still runs, is kept, with the reason;
when any run named is kept, none is moved. The folder moves whole (files/run_trash.py); the
catalog is synced after, which drops the run's rows, and indexes it again after a restore.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
from typing import Callable

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from nuboard.catalog.run_reads import child_runs
from nuboard.catalog.run_trash_rule import still_running, versions_in_runs
from nuboard.errors import NuBoardError, RunExistsError, RunNotFoundError
from nuboard.files import layout, runjson
from nuboard.files.hidden_runs import HiddenRunsError, read_hidden, set_hidden
from nuboard.files.run_trash import TrashError, list_trash, move_to_trash, restore_from_trash

from .context import catalogs, known_run, load_project, root_dir, wants_json
from .run_page import overview_or_none

run_edit = Blueprint("run_edit", __name__)
run_edit.url_value_preprocessor(load_project)
MAX_RUNS = 5000                     # runs one hide or delete may name (a sweep page's cap)


def run_edits_on() -> bool:
    """Whether this viewer was started with --edit-runs."""
    return bool(current_app.config.get("NUBOARD_EDIT_RUNS"))


def run_edits(what: str) -> Callable:
    """Refuse the route with 403 unless the viewer was started with --edit-runs."""
    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(*args, **kwargs):
            if current_app.config.get("NUBOARD_READ_ONLY"):
                abort(403, description=f"This viewer was started with --read-only: {what}.")
            if not run_edits_on():
                abort(403, description=f"This viewer was started without --edit-runs: {what}. "
                                       "Start it with 'nuboard up --edit-runs' to hide, delete "
                                       "and restore runs.")
            return view(*args, **kwargs)
        return checked
    return decorate


def named_runs(project: str, values: list[str], what: str) -> list[str]:
    """The run ids named (comma-separated or repeated), each once, each a run of the project
    (else 404; 400 for none, too many or a name that cannot be a run id)."""
    ids = list(dict.fromkeys(p.strip() for v in values for p in v.split(",") if p.strip()))
    if not ids:
        abort(400, description=f"{what}: name at least one run (run=<id>).")
    if len(ids) > MAX_RUNS:
        abort(400, description=f"{what}: {len(ids):,} runs named, at most {MAX_RUNS:,} at once.")
    for run_id in ids:
        known_run(project, run_id)
    return ids


def _lent(project: str):
    """A catalog the viewer holds, lent for the rule's look at another project."""
    return contextlib.nullcontext(catalogs().get(project))


def run_facts(project: str, run_id: str) -> dict:
    """What the confirmation shows of one run: its name and status, the artifact versions it
    made and used (run.json, and the catalog's producers), the runs forked from it, and why it
    is kept ('running'), if it is."""
    run = overview_or_none(project, run_id) or {"name": run_id, "status": "unknown",
                                                "inputs": [], "outputs": []}
    folder = layout.run_dir(root_dir(), project, run_id)
    return {"id": run_id, "name": run.get("name") or run_id, "status": run.get("status"),
            "made": run.get("outputs", []), "used": run.get("inputs", []),
            "forks": child_runs(catalogs().get(project), run_id),
            "running": still_running(folder), "references": []}


def delete_plan(project: str, run_ids: list[str]) -> dict:
    """The confirmation's data: each run's facts, with the versions whose files lie in it
    (those keep it, as `nuboard rm` keeps it), and whether every run may go."""
    runs = [run_facts(project, run_id) for run_id in run_ids]
    refs = versions_in_runs(root_dir(), project, run_ids, _lent)
    for run in runs:
        run["references"] = refs[run["id"]]
        run["kept"] = keep_reason(project, run)
    return {"project": project, "runs": runs, "allowed": not any(r["kept"] for r in runs),
            "trash": f"{project}/runs/.trash/"}


def keep_reason(project: str, run: dict) -> str | None:
    """Why `nuboard rm`'s rule keeps the run (None when it may go)."""
    if run["references"]:
        return (f"Run {run['id']!r} is kept: artifact versions reference its files "
                f"({', '.join(run['references'])}). Unlink those versions first.")
    if run["running"]:
        return f"Run {run['id']!r} is still running ({run['running']}); stop it first."
    return None


# ---- hide ----

@run_edit.post("/p/<project:project>/.hide")
@run_edit.post("/api/p/<project:project>/.hide", endpoint="hide_json")
@run_edits("runs cannot be hidden")
def hide(project: str):
    """Hide the runs named (hidden=1, the default) or show them again (hidden=0)."""
    form = request.form
    flag = form.get("hidden", "1")
    if flag not in ("0", "1"):
        abort(400, description=f"hidden={flag[:20]!r}: give 1 to hide the runs or 0 to show them.")
    ids = named_runs(project, form.getlist("run") + form.getlist("runs"), "hide")
    try:
        now = set_hidden(root_dir(), project, ids, flag == "1")
    except HiddenRunsError as exc:
        abort(409, description=str(exc))
    if wants_json():
        return {"project": project, "runs": ids, "hidden": flag == "1",
                "hidden_runs": sorted(now)}
    if form.get("back") == "runs" or len(ids) > 1:
        return redirect(url_for("runs.runs", project=project), 303)
    return redirect(url_for("run.details", project=project, run_id=ids[0]), 303)


# ---- delete ----

@run_edit.get("/p/<project:project>/.delete")
@run_edit.get("/api/p/<project:project>/.delete", endpoint="confirm_delete_json")
@run_edits("runs cannot be deleted")
def confirm_delete(project: str):
    """The confirmation page of deleting the runs of ?runs=<id>,..."""
    plan = delete_plan(project, named_runs(project, request.args.getlist("runs"), "delete"))
    if wants_json():
        return plan
    return render_template("confirm_delete_run.html", **plan)


@run_edit.post("/p/<project:project>/.delete")
@run_edit.post("/api/p/<project:project>/.delete", endpoint="delete_json")
@run_edits("runs cannot be deleted")
def delete(project: str):
    """Move the runs named to the trash, all of them or, when one is kept, none (409)."""
    plan = delete_plan(project, named_runs(project, request.form.getlist("runs"), "delete"))
    if not plan["allowed"]:
        message = " ".join(r["kept"] for r in plan["runs"] if r["kept"]) + " Nothing was moved."
        if wants_json():
            return {"error": message, "status": 409, **plan}, 409
        return render_template("confirm_delete_run.html", error=message, **plan), 409
    moved: list[str] = []
    try:
        for run in plan["runs"]:
            # checked again just before the move: a run resumed since the plan stays
            if still_running(layout.run_dir(root_dir(), project, run["id"])):
                raise TrashError(f"Run {run['id']!r} is running again (a fresh heartbeat or a "
                                 "live process): it stays where it is.")
            move_to_trash(root_dir(), project, run["id"])
            moved.append(run["id"])
    except (TrashError, RunNotFoundError) as exc:
        done = f" Moved before it: {', '.join(moved)}." if moved else " Nothing was moved."
        abort(409, description=str(exc).removesuffix(" Nothing was moved.") + done)
    finally:
        if moved:
            catalogs().sync_now(project)
    if wants_json():
        return {"project": project, "moved": moved, "trash": plan["trash"]}
    return redirect(url_for("run_edit.trash", project=project, moved=",".join(moved)), 303)


# ---- the trash ----

def trash_rows(project: str) -> list[dict]:
    """The runs in the project's trash, the last moved first: {'id', 'name', 'status',
    'trashed' (ISO 8601, UTC), 'path'}."""
    out = []
    for entry in list_trash(root_dir(), project):
        try:
            doc = runjson.read_run(entry["path"])
        except (OSError, ValueError):
            doc = None
        doc = doc if isinstance(doc, dict) else {}
        name = doc.get("name") if isinstance(doc.get("name"), str) else entry["id"]
        status = doc.get("status") if isinstance(doc.get("status"), str) else "unknown"
        when = dt.datetime.fromtimestamp(entry["trashed"], dt.timezone.utc)
        out.append({"id": entry["id"], "name": name, "status": status,
                    "start": doc.get("start_time") if isinstance(doc.get("start_time"), str) else None,
                    "trashed": when.isoformat().replace("+00:00", "Z"), "path": entry["path"]})
    return out


@run_edit.get("/p/<project:project>/.trash")
@run_edit.get("/api/p/<project:project>/.trash", endpoint="trash_json")
def trash(project: str):
    """The runs in the trash; with --edit-runs each has a Restore button."""
    rows = trash_rows(project)
    if wants_json():
        return {"project": project, "runs": rows, "edit_runs": run_edits_on()}
    moved = [m for m in request.args.get("moved", "").split(",") if m]
    return render_template("run_trash.html", project=project, runs=rows, moved=moved,
                           edit_runs=run_edits_on(),
                           hidden=len(read_hidden(root_dir(), project)))


@run_edit.post("/p/<project:project>/.trash/restore")
@run_edit.post("/api/p/<project:project>/.trash/restore", endpoint="restore_json")
@run_edits("runs cannot be restored")
def restore(project: str):
    """Move a run back from the trash (409 when a run of its id exists again) and index it."""
    run_id = request.form.get("run", "")
    try:
        restore_from_trash(root_dir(), project, run_id)
    except RunNotFoundError as exc:
        abort(404, description=str(exc))
    except (RunExistsError, TrashError) as exc:
        abort(409, description=str(exc))
    except NuBoardError as exc:           # a name that cannot be a run id
        abort(400, description=str(exc))
    catalogs().sync_now(project)
    if wants_json():
        return {"project": project, "restored": run_id}
    return redirect(url_for("run.details", project=project, run_id=run_id), 303)
