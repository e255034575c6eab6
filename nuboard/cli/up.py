"""`nuboard up`: serve the viewer over every project under a folder."""
from __future__ import annotations

import re

import click

from nuboard.files.layout import resolve_root

from .options import catalog_option, debug_option
from .projects import check_root

READ_ONLY_WITH_EDITS = ("--read-only refuses every edit and --edit-artifacts turns the artifact edits "
                        "on: give one of them, not both.")
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
@click.argument("directory", metavar="[DIR]", required=False)
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
@click.option("--read-only", is_flag=True,
              help="Refuse every edit, notes and saved views included (not with "
                   "--edit-artifacts).")
@catalog_option
@debug_option
def up(directory: str | None, host: str, port: int | None, allowed_hosts: tuple[str, ...],
       edit_artifacts: bool, read_only: bool) -> None:
    """Serve the viewer over every project under DIR (default $NUBOARD_DIR, else
    ./experiments), on 127.0.0.1 unless --host says otherwise. Ctrl-C stops it.

    With --host 0.0.0.0 (or ::) the viewer answers to this machine's names and addresses;
    a request naming any other host (a DNS-rebinding page) gets 403.

    \b
    Example:
      nuboard demo && nuboard up
      nuboard up /data/experiments --port 7000
      nuboard up /data/experiments --host 0.0.0.0 --read-only --allowed-host nuboard.lab.example
      nuboard up /lab/experiments --host 0.0.0.0 --read-only \\
          --catalog postgresql+psycopg://nuboard@db.lab.example/nuboard
    """
    if read_only and edit_artifacts:
        raise click.UsageError(READ_ONLY_WITH_EDITS)
    from nuboard.web.app import create_app
    from nuboard.web.server import DEFAULT_PORT, serve
    root = resolve_root(directory)
    check_root(root)
    from nuboard.catalog.server import catalog_url, check_reachable, shown_url
    url = catalog_url()
    if url is not None:
        check_reachable(url)               # a server that is down: one line now, not on each page
        click.echo(f"Catalog: {shown_url(url)} (a schema per project of {str(root)!r})", err=True)
    app = create_app(root, host=host, allowed_hosts=allowed_hosts, edit_artifacts=edit_artifacts,
                     read_only=read_only)
    serve(app, root, host, DEFAULT_PORT if port is None else port,
          lambda line: click.echo(line, err=line.startswith("Warning")))
