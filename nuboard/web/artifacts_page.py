"""The Artifacts pages: the list, a version (facts, lineage, files), and their JSON twins."""
from __future__ import annotations

from pathlib import Path

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from nuboard.artifacts.names import check_artifact_name
from nuboard.errors import NuBoardError

from . import artifact_data
from .context import catalogs, is_fragment, load_project, project_catalog, wants_json

artifacts_page = Blueprint("artifacts", __name__)
artifacts_page.url_value_preprocessor(load_project)
MAX_FILTER = 1000


def known_artifact(project: str, name: str) -> tuple[str, str]:
    """The URL's project (load_project checked it) and artifact name, or 400 for a name
    that cannot be an artifact's."""
    try:
        check_artifact_name(name)
    except NuBoardError as exc:
        abort(400, description=str(exc))
    return project, name


def edit_on() -> bool:
    return bool(current_app.config["NUBOARD_EDIT_ARTIFACTS"])


@artifacts_page.get("/artifacts")
@artifacts_page.get("/api/artifacts", endpoint="all_json")
@artifacts_page.get("/p/<project:project>/.artifacts", endpoint="project_list")
@artifacts_page.get("/api/p/<project:project>/.artifacts", endpoint="project_json")
def listing(project: str | None = None):
    unlinked = request.args.get("unlinked") == "1"
    found = artifact_data.artifact_list(catalogs(), project, unlinked=unlinked)
    if wants_json():
        return {"project": project, "unlinked": unlinked, "artifacts": found}
    return render_template("artifacts.html", project=project, artifacts=found,
                           unlinked=unlinked, edit=edit_on())


@artifacts_page.get("/p/<project:project>/.artifact/<name>")
def latest(project: str, name: str):
    project, name = known_artifact(project, name)
    numbers = artifact_data.version_numbers(project_catalog(), name)
    if not numbers:
        abort(404, description=f"There is no artifact {name!r} in project {project!r}.")
    return redirect(url_for("artifacts.version", project=project, name=name,
                            number=max(numbers)))


def _info(project: str, name: str, number: int) -> dict:
    try:
        return artifact_data.version_info(catalogs(), project, name, number)
    except artifact_data.VersionMissing as exc:
        abort(404, description=str(exc))


@artifacts_page.get("/p/<project:project>/.artifact/<name>/v<int:number>")
@artifacts_page.get("/api/p/<project:project>/.artifact/<name>/v<int:number>", endpoint="version_json")
def version(project: str, name: str, number: int):
    project, name = known_artifact(project, name)
    info = _info(project, name, number)
    from .lineage import graph_json, lineage_graph, render_svg
    graph = lineage_graph(catalogs(), project, name, number)
    if wants_json():
        return {**info, "lineage": graph_json(graph)}
    svg = render_svg(graph, run_url=lambda n: url_for("run.details", project=n.project,
                                                      run_id=n.run_id),
                     version_url=lambda n: url_for("artifacts.version", project=n.project,
                                                   name=n.name, number=n.version))
    files = artifact_data.files_page(Path(info["manifest"]))
    return render_template("artifact.html", project=project, info=info, svg=svg, files=files,
                           needle="", edit=edit_on())


@artifacts_page.get("/p/<project:project>/.artifact/<name>/v<int:number>/files")
@artifacts_page.get("/api/p/<project:project>/.artifact/<name>/v<int:number>/files",
                    endpoint="files_json")
def files(project: str, name: str, number: int):
    """A page of the version's files: ?offset=N (1,000 at a time) and ?q=<part of the path>."""
    project, name = known_artifact(project, name)
    info = _info(project, name, number)
    try:
        offset = max(0, int(request.args.get("offset", "0")))
    except ValueError:
        abort(400, description="offset must be a whole number.")
    needle = request.args.get("q", "")[:MAX_FILTER]
    found = artifact_data.files_page(Path(info["manifest"]), offset=offset, needle=needle)
    if wants_json():
        return {"spec": info["spec"], "filter": needle, **found}
    template = "_artifact_files_rows.html" if offset and is_fragment() else "_artifact_files.html"
    return render_template(template, project=project, info=info, files=found, needle=needle)
