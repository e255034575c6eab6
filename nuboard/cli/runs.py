"""`nuboard ls`, `nuboard rm` and `nuboard reindex`: the commands around runs."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click

from nuboard.errors import NuBoardError, RunNotFoundError
from nuboard.files import layout
from nuboard.files.names import check_folder_name
from nuboard.files.records import run_record

from . import formats
from .completion import complete_project, complete_run
from .options import (
    catalog_option,
    check_one_format,
    debug_option,
    dir_option,
    format_options,
    stdin_is_terminal,
    stdout_is_terminal,
)
from .projects import check_project_exists, check_root, find_projects, open_catalog


class RunKeptError(NuBoardError, RuntimeError):
    """`nuboard rm` keeps a run: an artifact version references it, or it is still running."""


class ConfirmationError(NuBoardError, RuntimeError):
    """`nuboard rm` was not confirmed."""


@contextlib.contextmanager
def catalog_of(root: Path, project: str) -> Iterator:
    """The project's Catalog, opened; a catalog server that goes away while a command uses it
    ends the command with one line, not the SQL it was running (one_line_errors)."""
    from nuboard.catalog.project_catalog import one_line_errors
    with one_line_errors(), open_catalog(root, project) as catalog:
        yield catalog


# ---- nuboard ls ----

def checked_query(text: str | None, now: float) -> str | None:
    """The --query text, checked (None without one); QuerySyntaxError when it does not parse."""
    if text is None:
        return None
    from nuboard.catalog.run_reads import check_query
    check_query(text, now=now)
    return text


def list_runs(catalog, query: str | None, limit: int | None, now: float,
              hidden: bool | None = False) -> list[dict]:
    """The project's runs that match the query, newest first, as ls records, each with
    "media": entries per media key on rank 0 ({} for a run without media) and "hidden"
    (whether it is hidden in the viewer). hidden: False leaves the hidden runs out, True lists
    only them, None every run."""
    from nuboard.catalog.media_reads import media_keys
    from nuboard.catalog.run_reads import find_runs, tags_by_run
    from nuboard.files.hidden_runs import read_hidden

    rows = find_runs(catalog, query, now=now, limit=limit, hidden=hidden)
    by_run = tags_by_run(catalog, [r["id"] for r in rows])
    media = media_keys(catalog, [r["run_id"] for r in rows])
    marked = read_hidden(catalog.root, catalog.project)
    return [dict(run_record(r, by_run[r["id"]], catalog.project, now),
                 media={k: m["count"] for k, m in media[r["run_id"]].items()},
                 hidden=r["run_id"] in marked) for r in rows]


def _print_runs(records: list[dict], with_project: bool, as_json: bool, as_csv: bool) -> None:
    if as_json:
        click.echo(formats.as_json(records))
        return
    if as_csv:
        click.echo(formats.as_csv(formats.RUN_FIELDS,
                                    ([r[f] for f in formats.RUN_FIELDS] for r in records)), nl=False)
        return
    headers = formats.table_headers(with_project)
    rows = [formats.run_cells(r, with_project=with_project) for r in records]
    if stdout_is_terminal():
        from rich.console import Console
        Console().print(formats.rich_table(headers, rows, status_column=int(with_project)))
    else:
        click.echo(formats.plain_table(headers, rows))


@click.command("ls", short_help="List runs (a table, --json or --csv).")
@click.argument("project", required=False, shell_complete=complete_project)
@click.option("--query", "-q", metavar="Q", help="Only the runs this query matches (docs/query.md).")
@format_options
@click.option("--limit", "-n", type=click.IntRange(min=1), metavar="N",
              help="Show at most N runs (the newest).")
@click.option("--hidden", "only_hidden", is_flag=True,
              help="List only the runs hidden in the viewer.")
@click.option("--all", "-a", "every", is_flag=True,
              help="List hidden runs too (not with --hidden).")
@dir_option
@catalog_option
@debug_option
def ls(project: str | None, query: str | None, as_json: bool, as_csv: bool, limit: int | None,
       only_hidden: bool, every: bool, root: Path) -> None:
    """List runs, newest first: status (lost shown as lost), name, id, group, tags, start,
    duration, host.

    Runs hidden in the viewer (`nuboard up --edit-runs`; the project's hidden.json) are left
    out: --hidden lists only them, --all lists them with the others.

    Without PROJECT, the runs of every project under the folder. The catalog is brought up
    to date from the files first; a run folder it skips (damaged or half written) has a line
    on stderr saying why, and so does a run whose run.json holds more than the API writes
    (it is shown cut to the API's limits). A rich table on a terminal, aligned plain text in
    a pipe. A key the query compares that no run has is a warning on stderr, naming the
    nearest known key.

    \b
    Example:
      nuboard ls llm --query 'tag:baseline lr>=1e-3' --limit 20
      nuboard ls team/llm --json | jq '.[].id'
    """
    check_one_format(as_json, as_csv)
    if only_hidden and every:
        raise click.UsageError("--hidden lists only the hidden runs and --all every run: give "
                               "one of them, not both.")
    hidden = True if only_hidden else None if every else False
    now = time.time()
    from nuboard.catalog.query import QuerySyntaxError
    try:
        query = checked_query(query, now)
    except QuerySyntaxError as exc:
        shown = query if len(query) <= 60 else query[:57] + "..."
        raise click.UsageError(f"bad --query {shown!r}: {exc}") from None
    if project is not None:
        names = [check_project_exists(root, project)]
    else:
        check_root(root)
        names = find_projects(root)
    from nuboard.catalog.query_keys import known_names, warnings_for
    from nuboard.catalog.sync import sync
    records: list[dict] = []
    known: list[dict] = []
    for name in names:
        with catalog_of(root, name) as catalog:
            report = sync(catalog)
            records.extend(list_runs(catalog, query, limit, now, hidden))
            if query:
                known.append(known_names(catalog, query))
        for line in formats.skip_lines("ls", layout.runs_dir(root, name), report):
            click.echo(line, err=True)
    for line in warnings_for(query, known) if query else ():
        click.echo(f"nuboard ls: {line}", err=True)
    records.sort(key=lambda r: (r["start"] or "", r["id"]), reverse=True)
    if limit is not None:
        records = records[:limit]
    for line in formats.cut_lines("ls", records):
        click.echo(line, err=True)
    _print_runs(records, project is None, as_json, as_csv)


# ---- nuboard rm ----

def referencing_versions(root: Path, project: str, run_id: str) -> list[str]:
    """The linked artifact versions ('llm/best:v2') whose files lie in this run's folder
    (catalog/run_trash_rule.py), each project's catalog opened for the look and closed.
    `nuboard rm` keeps a run for which this returns anything, unless --force.
    """
    from nuboard.catalog.run_trash_rule import referencing_versions as referencing

    return referencing(root, project, run_id, lambda other: catalog_of(root, other))


def locate_runs(root: Path, run_ids: list[str], project: str | None) -> list[tuple[str, str]]:
    """(project, run_id) of each run named; RunNotFoundError naming every one that is missing."""
    for run_id in run_ids:
        check_folder_name(run_id, "run id")
    if project is not None:
        projects = [check_project_exists(root, project)]
    else:
        check_root(root)
        projects = find_projects(root)
    found, missing = [], []
    for run_id in run_ids:
        where = [p for p in projects if layout.run_dir(root, p, run_id).is_dir()]
        if not where:
            missing.append(run_id)
        elif len(where) > 1:
            raise RunNotFoundError(
                f"Run {run_id!r} is in several projects ({', '.join(where)}); pass --project "
                "to say which. Nothing was removed.")
        else:
            found.append((where[0], run_id))
    if missing:
        names = ", ".join(repr(m) for m in missing)
        place = f"project {project!r}" if project is not None else f"any project under {str(root)!r}"
        hint = f"nuboard ls {project}" if project is not None else "nuboard ls"
        raise RunNotFoundError(
            f"Run{'s' if len(missing) > 1 else ''} {names} not found in {place}. "
            f"Run '{hint}' to list runs. Nothing was removed.")
    return found


def check_removable(root: Path, targets: list[tuple[str, str]]) -> None:
    """Raise RunKeptError for a run an artifact version references, or one still running.

    Still running: its heartbeat is fresh (status.run_status), or its process (the heartbeat's
    pid and host) is alive on this host, however old the heartbeat is.
    """
    from nuboard.catalog.run_trash_rule import still_running
    for project, run_id in targets:
        versions = referencing_versions(root, project, run_id)
        if versions:
            raise RunKeptError(
                f"Run {run_id!r} in project {project!r} is kept: artifact versions reference its "
                f"files ({', '.join(versions)}). Unlink those versions first "
                f"({unlink_commands(root, versions)}), or pass --force. Nothing was removed.")
        why = still_running(layout.run_dir(root, project, run_id))
        if why is not None:
            raise RunKeptError(
                f"Run {run_id!r} in project {project!r} is still running ({why}); stop it first, "
                "or pass --force. Nothing was removed.")


def unlink_commands(root: Path, versions: list[str]) -> str:
    """The commands that unlink these versions, to paste into this shell: 'nuboard artifact unlink ...'."""
    import shlex
    where = "" if str(root) == str(layout.resolve_root(None)) else f" --dir {shlex.quote(str(root))}"
    return " && ".join(f"nuboard artifact unlink {shlex.quote(v)}{where}" for v in versions)


def remove_runs(root: Path, targets: list[tuple[str, str]]) -> list[str]:
    """Remove run folders and their catalog rows; return what could not be deleted.

    Each folder is first renamed to a hidden name in `runs/` (which sync ignores), then its
    rows are deleted in one transaction, then the hidden folder is deleted.
    """
    from nuboard.catalog.run_writes import delete_runs

    problems: list[str] = []
    by_project: dict[str, list[str]] = {}
    for project, run_id in targets:
        by_project.setdefault(project, []).append(run_id)
    for project, run_ids in by_project.items():
        with catalog_of(root, project) as catalog:
            moved: list[tuple[str, Path]] = []
            try:
                for run_id in run_ids:
                    folder = layout.run_dir(root, project, run_id)
                    trash = folder.with_name(f".removing-{run_id}-{os.getpid()}")
                    os.replace(folder, trash)
                    moved.append((run_id, trash))
                delete_runs(catalog, run_ids)
            except BaseException:
                for run_id, trash in moved:         # put the folders back: nothing removed
                    try:
                        os.replace(trash, layout.run_dir(root, project, run_id))
                    except OSError:
                        pass
                raise
        for run_id, trash in moved:
            problem = _delete_tree(trash)
            if problem:
                problems.append(f"{str(trash)!r} ({problem})")
            else:
                click.echo(f"Removed {project}/{run_id}")
    return problems


def _delete_tree(path: Path) -> str | None:
    """Delete a folder (a link only as a link); the first thing that could not go, or None."""
    if path.is_symlink():
        try:
            path.unlink()
        except OSError as exc:
            return str(exc)
        return None
    errors: list[str] = []

    def note(_func, where, exc) -> None:
        errors.append(f"{where}: {exc[1] if isinstance(exc, tuple) else exc}")

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=note)
    else:
        shutil.rmtree(path, onerror=note)
    return errors[0] if errors else None


@click.command("rm", short_help="Remove runs: folders and catalog rows.")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN...", shell_complete=complete_run)
@click.option("--project", "-p", metavar="P", shell_complete=complete_project,
              help="The project of the runs [default: found by run id under the folder].")
@click.option("--force", is_flag=True,
              help="Remove even a run an artifact version references, or one still running.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask; needed when stdin is not a terminal.")
@click.option("--trash", "to_trash", is_flag=True,
              help="Move the folders whole to their project's runs/.trash/ instead of deleting "
                   "them ('nuboard trash restore' brings them back).")
@dir_option
@catalog_option
@debug_option
def rm(run_ids: tuple[str, ...], project: str | None, force: bool, yes: bool, to_trash: bool,
       root: Path) -> None:
    """Remove runs: their folders and their catalog rows.

    Asks first on a terminal; without one, --yes is needed. A run whose files an artifact
    version references, or that is still running, is kept unless --force. When any run
    named is missing, nothing is removed. With --trash the folders move whole to
    runs/.trash/ (as the viewer's Delete does), to be listed by 'nuboard trash ls'.

    \b
    Example:
      nuboard rm 20261017T0930-c589c96e 20261017T1012-0b1d2e3f --project llm
      nuboard rm 20261017T0930-c589c96e --trash --yes
    """
    ids = list(dict.fromkeys(run_ids))
    targets = locate_runs(root, ids, project)
    if not force:
        check_removable(root, targets)
    if not yes:
        if not stdin_is_terminal():
            raise ConfirmationError(
                f"Refusing to remove {_runs(len(targets))} without confirmation: stdin is not a "
                "terminal. Pass --yes to remove without asking.")
        for p, run_id in targets:
            click.echo(f"  {p}/{run_id}")
        asked = (f"Move {_runs(len(targets))} to the trash?" if to_trash else
                 f"Remove {_runs(len(targets))} (folders and catalog rows)?")
        if not click.confirm(asked, default=False):
            raise ConfirmationError("Nothing was removed.")
    if to_trash:
        from .run_trash import trash_runs
        trash_runs(root, targets)
        return
    problems = remove_runs(root, targets)
    if problems:
        raise NuBoardError(f"Removed from the catalog, but could not delete {'; '.join(problems)}: "
                           "delete it by hand.")


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


# ---- nuboard reindex ----

def summary_line(project: str, report) -> str:
    """'llm: 12 runs indexed, 1 skipped' on one line (each skipped run has its own line on stderr).

    A rebuild reads every run again: those the catalog knew count as updated, the others as
    added, and both were indexed.
    """
    versions = len(report.skipped_versions)
    line = f"{project}: {_runs(report.added + report.updated)} indexed, {len(report.skipped)} skipped"
    return line + (f", {versions} artifact version{'s' * (versions != 1)} skipped" if versions else "")


@click.command("reindex", short_help="Rebuild the catalog from the files.")
@click.argument("project", required=False, shell_complete=complete_project)
@dir_option
@catalog_option
@debug_option
def reindex(project: str | None, root: Path) -> None:
    """Rebuild the catalog from the files: every run indexed again from nothing.

    Without PROJECT, every project under the folder. Shows a progress bar on a terminal,
    then one line per project: how many runs were indexed and skipped. Each run skipped (a
    damaged or half-written folder) has a line on stderr saying why; that is not an error.

    \b
    Example:
      nuboard reindex team/llm
    """
    from nuboard.catalog.sync import sync
    if project is not None:
        names = [check_project_exists(root, project)]
    else:
        check_root(root)
        names = find_projects(root)
    from rich.console import Console
    console = Console(stderr=True)
    for name in names:
        with catalog_of(root, name) as catalog:
            if console.is_terminal:
                report = _sync_with_bar(console, catalog, name, sync)
            else:
                report = sync(catalog, full=True)
        for line in formats.skip_lines("reindex", layout.runs_dir(root, name), report):
            click.echo(line, err=True)
        click.echo(summary_line(name, report))


def _sync_with_bar(console, catalog, name: str, sync):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn(f"[bold]{name}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(name, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return sync(catalog, full=True, progress=progress)
