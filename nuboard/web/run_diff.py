"""The Diff page: 2 to 20 runs side by side (status, group, tags, git, config, packages), only
the rows that differ unless ?all=1, and its JSON twin /api/p/<project>/.diff?runs=a,b.

The runs come as ?runs=<id>,<id>,...; too few, too many or a name that cannot be a run id is a
400 naming the count or the value and the rule. A run that is not there, or whose files cannot
be read, keeps its column with a note (web/run_diff_data.py).
"""
from __future__ import annotations

from flask import Blueprint, abort, render_template, request, url_for

from .context import heartbeat_watch, load_project, root_dir, wants_json
from .run_colours import project_colours
from .run_diff_data import MAX_RUNS, MIN_RUNS, RunsArgError, parse_run_ids, run_diff

run_diff_page = Blueprint("run_diff", __name__)
run_diff_page.url_value_preprocessor(load_project)


def every_row() -> bool:
    """?all=1 shows every row; anything else (or nothing) only the rows that differ."""
    return request.args.get("all", "") in ("1", "true", "yes", "on")


def diff_url(project: str, run_ids: list[str], *, every: bool, json: bool = False) -> str:
    """The page (or its twin) of these runs, with or without ?all=1."""
    endpoint = "run_diff.page_json" if json else "run_diff.page"
    args = {"runs": ",".join(run_ids)}
    if every:
        args["all"] = "1"
    return url_for(endpoint, project=project, **args)


@run_diff_page.get("/p/<project:project>/.diff")
@run_diff_page.get("/api/p/<project:project>/.diff", endpoint="page_json")
def page(project: str):
    try:
        run_ids = parse_run_ids(request.args.getlist("runs"))
    except RunsArgError as exc:
        abort(400, description=str(exc))
    every = every_row()
    data = run_diff(root_dir(), project, run_ids, every_row=every, watch=heartbeat_watch())
    colours = project_colours(project)
    for run in data["runs"]:
        run["colour"] = colours.run(run["id"])
        run["url"] = url_for("run.details", project=project, run_id=run["id"])
    if wants_json():
        return {"project": project, **data}
    return render_template("run_diff.html", project=project, data=data, run_ids=run_ids,
                           toggle_url=diff_url(project, run_ids, every=not every),
                           json_url=diff_url(project, run_ids, every=every, json=True),
                           min_runs=MIN_RUNS, max_runs=MAX_RUNS)
