"""`nuboard up`: serve the viewer over every project under a folder."""
from __future__ import annotations

import os
import re
from pathlib import Path

import click

from nuboard.files.layout import find_projects, resolve_root
from nuboard.remote.urls import is_url, shown

from .completion import complete_dir
from .options import catalog_option, debug_option
from .progress_bar import with_bar
from .projects import check_root

READ_ONLY_WITH_EDITS = ("--read-only refuses every edit and --edit-artifacts turns the artifact edits "
                        "on: give one of them, not both.")
READ_ONLY_WITH_RUN_EDITS = ("--read-only refuses every edit and --edit-runs turns the run edits "
                            "(hide, delete, restore) on: give one of them, not both.")
URL_WITH_EDITS = ("{url} is served read-only (a mirror of the bucket), so {flag} cannot be given "
                  "with it: edit where the runs are written, then 'nuboard sync push'.")
CATALOG_ENV = "NUBOARD_CATALOG_URL"     # catalog.server.ENV; that module imports SQLAlchemy (slow)
HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?", re.IGNORECASE)


def check_host_name(value: str) -> str:
    """An --allowed-host value: a DNS name or an IP address, with no port or path."""
    import ipaddress
    try:
        ipaddress.ip_address(value.strip("[]"))
        return value
    except ValueError:
        pass
    if len(value) > 253 or not HOST_NAME.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is not a host name: give a name such as 'nuboard.lab.example' or an "
            "address, without a port or path.")
    return value


@click.command("up", short_help="Serve the viewer (Runs, Charts, run details).")
@click.argument("directory", metavar="[DIR|URL]", required=False, shell_complete=complete_dir)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; 0.0.0.0 or :: for every interface. Anything but "
                   "loopback is reachable by others: there is no login.")
@click.option("--port", default=None, type=click.IntRange(0, 65535), metavar="N",
              help="Port to listen on [default: 6464]; 0 picks a free one.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              callback=lambda _ctx, _param, value: tuple(check_host_name(v) for v in value),
              help="Also answer requests that name this host (a reverse proxy's name); "
                   "repeatable. Names that are not this machine's are refused.")
@click.option("--edit-artifacts", is_flag=True,
              help="Show and accept the forms that add and unlink artifact versions.")
@click.option("--edit-runs", is_flag=True,
              help="Show and accept hiding runs, deleting them to runs/.trash/ and restoring them.")
@click.option("--read-only", is_flag=True,
              help="Refuse every edit, notes and saved views included (not with "
                   "--edit-artifacts or --edit-runs).")
@catalog_option
@debug_option
def up(directory: str | None, host: str, port: int | None, allowed_hosts: tuple[str, ...],
       edit_artifacts: bool, edit_runs: bool, read_only: bool) -> None:
    """Serve the viewer over every project under DIR (default $NUBOARD_DIR, else
    ./experiments), on 127.0.0.1 unless --host says otherwise. Ctrl-C stops it.

    Given a URL (s3://bucket/experiments, as `nuboard sync push` fills it), it pulls the
    bucket into a mirror under $NUBOARD_CACHE_DIR/mirrors/ (default ~/.cache/nuboard) and
    serves that, read-only, pulling again every 5 s while a run is running and every minute
    otherwise ($NUBOARD_MIRROR_INTERVAL=S: every S s, and 12 S s); the page header says how
    fresh it is.

    It opens every project's catalog first (saying so at once, and how far it got when that
    takes long), then prints the URL, so that no page waits for a catalog; it says so too
    when --edit-artifacts, --edit-runs or --read-only is given.

    With --edit-runs, a run's page has Hide and Delete buttons: a hidden run leaves every
    list (`nuboard ls --hidden` lists it), a deleted one moves whole to the project's
    runs/.trash/ after a confirmation naming what uses it (never while it runs, nor while an
    artifact version references its files), and the project's Trash page restores it.

    With --host 0.0.0.0 (or ::) the viewer answers to this machine's names and addresses;
    a request naming any other host (a DNS-rebinding page) gets 403.

    \b
    Example:
      nuboard demo && nuboard up
      nuboard up /data/experiments --port 7000
      nuboard up s3://lab-bucket/experiments
      nuboard up --edit-runs
      nuboard up /data/experiments --host 0.0.0.0 --read-only --allowed-host nuboard.lab.example
      nuboard up /lab/experiments --host 0.0.0.0 --read-only \\
          --catalog postgresql+psycopg://nuboard@db.lab.example/nuboard
    """
    if read_only and edit_artifacts:
        raise click.UsageError(READ_ONLY_WITH_EDITS)
    if read_only and edit_runs:
        raise click.UsageError(READ_ONLY_WITH_RUN_EDITS)
    mirror = None
    if is_url(directory):
        for flag, given in (("--edit-artifacts", edit_artifacts), ("--edit-runs", edit_runs)):
            if given:
                raise click.UsageError(URL_WITH_EDITS.format(url=shown(directory), flag=flag))
        from nuboard.web.mirror import Mirror, mirror_folder, pull_interval
        mirror = Mirror(directory, mirror_folder(directory), busy_every=pull_interval())
        root = mirror.folder
    else:
        root = resolve_root(directory)
        check_root(root)
    if os.environ.get(CATALOG_ENV, "").strip():
        check_catalog_server(root)
    if mirror is not None:
        first_pull(mirror)
    click.echo(opening_line(root, len(find_projects(root))), err=True)    # before the viewer's imports
    from nuboard.web.app import create_app
    from nuboard.web.server import DEFAULT_PORT, serve
    app = create_app(root, host=host, allowed_hosts=allowed_hosts, edit_artifacts=edit_artifacts,
                     read_only=read_only, edit_runs=edit_runs, mirror=mirror)
    if mirror is not None:
        mirror.start()
    try:
        serve(app, root if mirror is None else shown(mirror.url), host,    # the URL announced
              DEFAULT_PORT if port is None else port,
              lambda line: click.echo(line, err=line.startswith("Warning")),
              lambda line: click.echo(line, err=True))
    finally:
        if mirror is not None:
            mirror.stop()


def first_pull(mirror) -> None:
    """Pull the bucket into its mirror (web/mirror.py) once, with a progress bar on a terminal
    and a line saying what came; StorageError (one line, exit 1) when the store fails."""
    click.echo(f"Pulling {shown(mirror.url)} into the mirror {str(mirror.folder)!r} ...", err=True)
    summary = with_bar("Pulling", mirror.pull)
    line = summary.line()
    click.echo(line[:1].upper() + line[1:], err=True)     # 'Pulled 3 runs, ... from s3://...'


def check_catalog_server(root: Path) -> None:
    """With a catalog server: one line and exit 1 now when it is down (not a 503 on each page),
    else a line naming it."""
    from nuboard.catalog.server import catalog_url, check_reachable, shown_url
    url = catalog_url()
    if url is not None:
        check_reachable(url)
        click.echo(f"Catalog: {shown_url(url)} (a schema per project of {str(root)!r})", err=True)


def opening_line(root: Path, projects: int) -> str:
    """The line `nuboard up` prints at once: what it opens before it prints the URL."""
    if projects == 0:
        return f"No projects in {str(root)!r} yet; starting the viewer ..."
    if projects == 1:
        return f"Opening the catalog of 1 project in {str(root)!r} ..."
    return f"Opening the catalogs of {projects} projects in {str(root)!r} ..."
