"""`nuboard sync push URL` and `nuboard sync pull URL`: an experiments folder and a bucket kept
alike, incrementally (nuboard/sync; docs/team.md, "Without a shared folder")."""
from __future__ import annotations

import json
from pathlib import Path

import click

from .completion import complete_project
from .options import debug_option, dir_option
from .progress_bar import with_bar
from .projects import check_project_exists, check_root


@click.group()
def sync() -> None:
    """Copy runs and artifacts to and from object storage (S3, GCS, Azure, any fsspec URL).

    The bucket mirrors the experiments folder: URL/<project>/runs/<id>/... Only what changed
    travels; catalogs never do. Credentials and endpoint come from the client's own settings
    (AWS_PROFILE, AWS_ENDPOINT_URL for MinIO, ...).

    \b
    Example:
      nuboard sync push s3://lab/experiments          # on the compute node
      nuboard sync pull s3://lab/experiments --dir ~/exp   # on your laptop
    """


def _common(command):
    command = click.option("--json", "as_json", is_flag=True,
                           help="Print the summary as a JSON object.")(command)
    command = click.option("--project", "-p", "projects", multiple=True, metavar="PROJECT",
                           shell_complete=complete_project,
                           help="Only this project (repeatable) [default: every project].")(command)
    command = dir_option(command)
    command = debug_option(command)
    return click.argument("url", metavar="URL")(command)


@sync.command("push")
@_common
def push_command(url: str, root: Path, projects: tuple[str, ...], as_json: bool) -> None:
    """Send what changed in the experiments folder to URL.

    Run folders, artifact versions and project documents (saved views, colours, hidden runs)
    are sent, data before the records that name it; an event log is cut at its last complete
    record. A push that is cut off is finished by the next one; a second push with nothing
    changed writes nothing.

    \b
    Example:
      nuboard sync push s3://lab/experiments --dir /scratch/$USER/experiments
    """
    from nuboard.sync import push
    check_root(root)
    wanted = [check_project_exists(root, p) for p in projects] or None
    _report(with_bar("Pushing", lambda progress: push(url, root, projects=wanted, progress=progress)),
            as_json)


@sync.command("pull")
@_common
def pull_command(url: str, root: Path, projects: tuple[str, ...], as_json: bool) -> None:
    """Fetch what changed at URL into the experiments folder.

    Each run is written in order (run.json last) and each file atomically, so a viewer open on
    the folder never sees a half-copied run. A run here that is another run of the same id is
    left as it is, naming it (exit 1). Nothing here is deleted.

    \b
    Example:
      nuboard sync pull s3://lab/experiments --dir ~/experiments -p llm
    """
    from nuboard.files.names import check_project
    from nuboard.sync import pull
    if root.exists() and not root.is_dir():
        check_root(root)
    wanted = [check_project(p) for p in projects] or None
    _report(with_bar("Pulling", lambda progress: pull(url, root, projects=wanted, progress=progress)),
            as_json)


def _report(summary, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({**summary.as_dict(), "summary": summary.line()}, indent=2,
                              ensure_ascii=False))
    else:
        click.echo(summary.line())
