"""`nuboard up`: serve the viewer over every project under a folder."""
from __future__ import annotations

import click

from nuboard.files.layout import resolve_root

from .options import debug_option
from .projects import check_root


@click.command("up", short_help="Serve the viewer (Runs, Charts, run details).")
@click.argument("directory", metavar="[DIR]", required=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback is reachable by others: there is "
                   "no login.")
@click.option("--port", default=None, type=click.IntRange(0, 65535), metavar="N",
              help="Port to listen on [default: 6464]; 0 picks a free one.")
@click.option("--edit-artifacts", is_flag=True,
              help="Show and accept the forms that add and unlink artifact versions.")
@click.option("--read-only", is_flag=True,
              help="Refuse every edit, notes and saved views included.")
@debug_option
def up(directory: str | None, host: str, port: int | None, edit_artifacts: bool,
       read_only: bool) -> None:
    """Serve the viewer over every project under DIR (default $NUBOARD_DIR, else
    ./experiments), on 127.0.0.1 unless --host says otherwise. Ctrl-C stops it.

    \b
    Example:
      nuboard demo && nuboard up
      nuboard up /data/experiments --port 7000
    """
    from nuboard.web.app import create_app
    from nuboard.web.server import DEFAULT_PORT, serve
    root = resolve_root(directory)
    check_root(root)
    app = create_app(root, host=host, edit_artifacts=edit_artifacts, read_only=read_only)
    serve(app, root, host, DEFAULT_PORT if port is None else port,
          lambda line: click.echo(line, err=line.startswith("Warning")))
