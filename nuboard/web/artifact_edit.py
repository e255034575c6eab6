"""Adding, unlinking and restoring versions from the viewer (only with --edit-artifacts).

Registered only when the viewer was started with --edit-artifacts, so without it every
route here is a 404; never on a --read-only viewer, which refuses every edit (create_app
raises for both, and `nuboard up --read-only --edit-artifacts` is a usage error). Each POST
passes the CSRF token and Origin checks (security.py). The files change first (add_artifact,
unlink_version, restore_version, each all or nothing); the catalog is synced after.
"""
from __future__ import annotations

import warnings
from urllib.parse import urlencode

from flask import Blueprint, abort, redirect, render_template, request, url_for

from nuboard.artifacts import (
    TYPES,
    VersionStateError,
    add_artifact,
    list_artifacts,
    list_versions,
    promote_run_path,
    restore_version,
    unlink_version,
)
from nuboard.errors import NuBoardError
from nuboard.files import layout

from .artifact_data import VersionMissing, version_info
from .artifacts_page import known_artifact
from .context import catalogs, load_project, root_dir, wants_json
from .version_form import (
    META_KINDS,
    META_ROWS,
    VersionForm,
    check_form,
    field_messages,
    flagged,
    meta_row_count,
)

artifact_edit = Blueprint("artifact_edit", __name__)
artifact_edit.url_value_preprocessor(load_project)


def _form_vars(form: VersionForm, checked=None, review: bool = False) -> dict:
    """The form page's values; after a submit (checked given) every field's messages."""
    names = list_artifacts(form.project, dir=root_dir()) \
        if form.project in catalogs().projects() else []
    messages = field_messages(form, checked, live=False) if checked is not None else {}
    return {"form": form, "checked": checked, "review": review, "types": TYPES,
            "meta_kinds": META_KINDS, "meta_rows": max(META_ROWS, len(form.metadata) + 1),
            "project": form.project, "names": names, "messages": messages,
            "flagged": flagged(messages), "touched": "*" if checked is not None else "",
            "path_base": _path_base(form)}


def _path_base(form: VersionForm) -> str:
    """The folder a relative path starts from: the run's, or the served folder."""
    if form.run:
        return str(layout.run_dir(root_dir(), form.project, form.run))
    return str(root_dir())


@artifact_edit.get("/p/<project:project>/.artifacts/new")
def new(project: str):
    """The form: ?name= prefills the name; ?run=<id>&path=<in the run> starts from a run's file."""
    args = request.args
    form = VersionForm(project=project, name=args.get("name", ""), path=args.get("path", ""),
                       run=args.get("run", ""), store="copy" if args.get("run") else "reference")
    if form.run and not (layout.run_dir(root_dir(), project, form.run) / layout.RUN_JSON).is_file():
        abort(404, description=f"Run {form.run!r} not found in project {project!r}.")
    return render_template("new_version.html", **_form_vars(form))


def _read_form(project: str) -> VersionForm:
    form = VersionForm.from_fields(request.form, project)
    if form.project not in catalogs().projects():
        abort(400, description=f"There is no project {form.project!r} under the served folder.")
    return form


@artifact_edit.post("/p/<project:project>/.artifacts/check")
@artifact_edit.post("/api/p/<project:project>/.artifacts/check", endpoint="check_json")
def check(project: str):
    """The form's fields checked as the user types: a fragment with the lines beside each
    field (out-of-band swaps), problems only for the fields the user has left."""
    form = _read_form(project)
    checked = check_form(form, root_dir(), read_data=False)
    if wants_json():
        return _checked_json(checked)
    messages = field_messages(form, checked, live=True)
    return render_template("_version_check.html", form=form, messages=messages,
                           flagged=flagged(messages), meta_rows=meta_row_count(request.form))


def _checked_json(checked) -> dict:
    return {"ok": checked.ok, "problems": checked.problems, "notes": checked.notes,
            "warnings": checked.warnings, "same_as": checked.same_as,
            "files": checked.source.file_count if checked.source else None,
            "bytes": checked.source.total_bytes if checked.source else None}


@artifact_edit.post("/p/<project:project>/.artifacts/review")
def review(project: str):
    """Everything checked; the review with Add (or Add anyway), or the form with its problems."""
    form = _read_form(project)
    checked = check_form(form, root_dir())
    status = 200 if checked.ok else 400
    return render_template("new_version.html", **_form_vars(form, checked, review=checked.ok)), status


@artifact_edit.post("/p/<project:project>/.artifacts/add")
@artifact_edit.post("/api/p/<project:project>/.artifacts/add", endpoint="add_json")
def add(project: str):
    """Add the version (a reference; from a run, a copy or a reference), then open it."""
    form = _read_form(project)
    checked = check_form(form, root_dir())
    if checked.ok and checked.same_as is not None and not form.anyway:
        checked.problems["path"] = (f"the files are the same as {form.name}:v{checked.same_as}; "
                                    "press Add anyway to add them again")
    if not checked.ok:
        if wants_json():
            return _checked_json(checked), 400
        return render_template("new_version.html", **_form_vars(form, checked)), 400
    options = dict(type=form.type.strip().lower(), metadata=checked.metadata,
                   description=form.description.strip(), checksum=form.checksum)
    try:
        made, warned = _add(form, checked, options)
    except NuBoardError as exc:
        checked.problems["path"] = str(exc)
        if wants_json():
            return _checked_json(checked), 400
        return render_template("new_version.html", **_form_vars(form, checked)), 400
    catalogs().sync_now(made.project)
    target = url_for("artifacts.version", project=made.project, name=made.name,
                     number=made.version)
    spec = f"{made.project}/{made.name}:v{made.version}"
    if wants_json():
        return {"added": spec, "url": target, "warnings": warned}, 201
    if warned:                      # said on a page of its own, never only in the server's log
        return render_template("version_added.html", project=made.project, spec=spec,
                               url=target, warnings=warned), 201
    return redirect(target + "?added=1", code=303)       # the version's page confirms it


def _add(form: VersionForm, checked, options: dict) -> tuple:
    """Add the version; return it and the RuntimeWarnings its add gave (entries left out),
    recorded rather than emitted or raised, whatever the process's warning filters say."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        if form.run:
            run_dir = layout.run_dir(root_dir(), form.project, form.run)
            rel = checked.source.real.relative_to(run_dir.resolve())
            made = promote_run_path(run_dir, rel.as_posix(), form.name,
                                    copy=form.store == "copy", **options)
        else:
            made = add_artifact(form.project, form.name, str(checked.source.real),
                                reference=True, dir=root_dir(), **options)
    warned = []
    for w in caught:
        if issubclass(w.category, RuntimeWarning):
            warned.append(str(w.message))
        else:                       # not ours to show: passed on as it came
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return made, warned


@artifact_edit.get("/p/<project:project>/.artifact/<name>/v<int:number>/unlink")
def confirm_unlink(project: str, name: str, number: int):
    project, name = known_artifact(project, name)
    if number not in list_versions(project, name, dir=root_dir()):
        abort(404, description=f"There is no linked version {name}:v{number} in {project!r}.")
    return render_template("confirm_unlink.html", project=project, name=name, numbers=[number],
                           action=url_for("artifact_edit.unlink", project=project, name=name,
                                          number=number), **_users(project, name, [number]))


def _users(project: str, name: str, numbers: list[int]) -> dict:
    """The runs that used the versions, for the unlink pages: `users` (each run once, as a
    run card), `used_by` ({number: how many runs used that version})."""
    users: dict[tuple[str, str], dict] = {}
    used_by: dict[int, int] = {}
    for number in numbers:
        try:
            cards = version_info(catalogs(), project, name, number)["used_by"]
        except VersionMissing:          # not indexed yet: no runs known to have used it
            cards = []
        used_by[number] = len(cards)
        for card in cards:
            users.setdefault((card["project"], card["run_id"]), card)
    ordered = sorted(users.values(), key=lambda c: (c["project"], c["name"], c["run_id"]))
    return {"users": ordered, "used_by": used_by}


@artifact_edit.post("/p/<project:project>/.artifact/<name>/v<int:number>/unlink")
def unlink(project: str, name: str, number: int):
    project, name = known_artifact(project, name)
    _change(unlink_version, project, name, number)
    return redirect(url_for("artifacts.project_list", project=project) + "?"
                    + urlencode({"unlinked": "1"}), code=303)


def _change(change, project: str, name: str, number: int) -> None:
    """Unlink or restore one version (all or nothing), then index it: 409 when it is already
    in that state, 404 when there is no such version."""
    try:
        change(project, name, number, dir=root_dir())
    except VersionStateError as exc:
        abort(409, description=str(exc))
    except NuBoardError as exc:
        abort(404, description=str(exc))
    catalogs().sync_now(project)


def _linked(project: str, name: str) -> list[int]:
    numbers = list_versions(project, name, dir=root_dir())
    if not numbers:
        abort(404, description=f"Artifact {name!r} of {project!r} has no linked versions.")
    return numbers


@artifact_edit.get("/p/<project:project>/.artifact/<name>/unlink-all")
def confirm_unlink_all(project: str, name: str):
    project, name = known_artifact(project, name)
    numbers = _linked(project, name)
    return render_template("confirm_unlink.html", project=project, name=name, numbers=numbers,
                           action=url_for("artifact_edit.unlink_all", project=project, name=name),
                           **_users(project, name, numbers))


@artifact_edit.post("/p/<project:project>/.artifact/<name>/unlink-all")
def unlink_all(project: str, name: str):
    project, name = known_artifact(project, name)
    for number in _linked(project, name):
        try:
            unlink_version(project, name, number, dir=root_dir())
        except NuBoardError:
            continue                     # unlinked meanwhile by someone else: already done
    catalogs().sync_now(project)
    return redirect(url_for("artifacts.project_list", project=project) + "?unlinked=1", code=303)


@artifact_edit.post("/p/<project:project>/.artifact/<name>/v<int:number>/restore")
def restore(project: str, name: str, number: int):
    project, name = known_artifact(project, name)
    _change(restore_version, project, name, number)
    return redirect(url_for("artifacts.version", project=project, name=name, number=number),
                    code=303)
