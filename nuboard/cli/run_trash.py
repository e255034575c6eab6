"""`nuboard trash ls` and `nuboard trash restore`, and the move of `nuboard rm --trash`: runs kept
whole in their project's runs/.trash/ (files/run_trash.py), as the viewer's Delete leaves them."""
from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import click

from nuboard.errors import RunNotFoundError
from nuboard.files.names import check_folder_name

from . import formats
from .completion import complete_project, complete_trashed_run
from .options import catalog_option, check_one_format, debug_option, dir_option, format_options
from .projects import check_project_exists, check_root, find_projects, open_catalog

TRASH_FIELDS = ["project", "id", "name", "status", "trashed"]


@contextlib.contextmanager
def _synced(root: Path, project: str) -> Iterator:
    """The project's catalog, opened and brought up to date from its run folders."""
    from nuboard.catalog.project_catalog import one_line_errors
    from nuboard.catalog.sync import sync
    with one_line_errors(), open_catalog(root, project) as catalog:
        sync(catalog)
        yield catalog


def trash_runs(root: Path, targets: list[tuple[str, str]]) -> None:
    """Move each run's folder to its project's runs/.trash/, then sync those catalogs (the
    runs leave them). A run that cannot move stops the rest; those moved stay moved."""
    from nuboard.files.run_trash import move_to_trash
    _move_each(root, targets, move_to_trash, "Moved {}/{} to {}/runs/.trash/")


def _move_each(root: Path, targets: list[tuple[str, str]], move, said: str) -> None:
    """move(root, project, run_id) for each target, saying `said` (formatted with project,
    run id, project) after each; then sync the projects touched, also when one fails."""
    touched: set[str] = set()
    try:
        for project, run_id in targets:
            move(root, project, run_id)
            touched.add(project)
            click.echo(said.format(project, run_id, project))
    finally:
        for project in sorted(touched):
            with _synced(root, project):
                pass


def trashed_records(root: Path, projects: list[str]) -> list[dict]:
    """The runs in these projects' trash, the last moved first: {'project', 'id', 'name',
    'status', 'trashed' (ISO 8601, UTC)}."""
    from nuboard.files import runjson
    from nuboard.files.run_trash import list_trash
    out = []
    for project in projects:
        for entry in list_trash(root, project):
            try:
                doc = runjson.read_run(entry["path"])
            except (OSError, ValueError):
                doc = None
            doc = doc if isinstance(doc, dict) else {}
            when = dt.datetime.fromtimestamp(entry["trashed"], dt.timezone.utc)
            out.append({"project": project, "id": entry["id"],
                        "name": doc.get("name") if isinstance(doc.get("name"), str) else "",
                        "status": doc.get("status") if isinstance(doc.get("status"), str) else "",
                        "trashed": when.isoformat(timespec="seconds").replace("+00:00", "Z")})
    out.sort(key=lambda r: r["trashed"], reverse=True)
    return out


@click.group("trash")
def trash() -> None:
    """Runs moved to a project's runs/.trash/ (by the viewer's Delete or `nuboard rm --trash`).

    \b
    Example:
      nuboard trash ls llm
      nuboard trash restore 20261017T0930-c589c96e
    """


def _projects(root: Path, project: str | None) -> list[str]:
    if project is not None:
        return [check_project_exists(root, project)]
    check_root(root)
    return find_projects(root)


@trash.command("ls")
@click.argument("project", required=False, shell_complete=complete_project)
@format_options
@dir_option
@debug_option
def trash_ls(project: str | None, as_json: bool, as_csv: bool, root: Path) -> None:
    """List the runs in the trash, the last moved first (every project without PROJECT)."""
    check_one_format(as_json, as_csv)
    records = trashed_records(root, _projects(root, project))
    if as_json:
        click.echo(formats.as_json(records))
    elif as_csv:
        click.echo(formats.as_csv(TRASH_FIELDS, ([r[f] for f in TRASH_FIELDS] for r in records)),
                   nl=False)
    else:
        click.echo(formats.plain_table([f.upper() for f in TRASH_FIELDS],
                                       [[r[f] for f in TRASH_FIELDS] for r in records]))


@trash.command("restore")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN...",
                shell_complete=complete_trashed_run)
@click.option("--project", "-p", metavar="P", shell_complete=complete_project,
              help="The project of the runs [default: found by run id in every project's trash].")
@dir_option
@catalog_option
@debug_option
def trash_restore(run_ids: tuple[str, ...], project: str | None, root: Path) -> None:
    """Move runs back from the trash, whole, and index them again. A run whose id was taken
    again meanwhile stays in the trash (an error says so).

    \b
    Example:
      nuboard trash restore 20261017T0930-c589c96e --project llm
    """
    from nuboard.files.run_trash import restore_from_trash, trashed_dir
    projects = _projects(root, project)
    targets = []
    for run_id in dict.fromkeys(run_ids):
        check_folder_name(run_id, "run id")
        where = [p for p in projects if trashed_dir(root, p, run_id).is_dir()]
        if not where:
            hint = f"nuboard trash ls {project}" if project else "nuboard trash ls"
            raise RunNotFoundError(f"Run {run_id!r} is not in the trash. Run '{hint}' to list "
                                   "the runs there.")
        if len(where) > 1:
            raise RunNotFoundError(f"Run {run_id!r} is in the trash of several projects "
                                   f"({', '.join(where)}); pass --project to say which.")
        targets.append((where[0], run_id))
    _move_each(root, targets, restore_from_trash, "Restored {}/{}")
