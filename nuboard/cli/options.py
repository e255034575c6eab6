"""Options every command takes: --dir, --debug, --catalog, and how a command tells a terminal
from a pipe."""
from __future__ import annotations

import os
import sys

import click

from nuboard.files.layout import resolve_root

from .completion import complete_dir


def _set_debug(ctx: click.Context, _param, value: bool) -> bool:
    if value:
        ctx.ensure_object(dict)["debug"] = True
    return value


def dir_option(command):
    """--dir DIR: the experiments root (default $NUBOARD_DIR, else ./experiments)."""
    return click.option(
        "--dir", "root", metavar="DIR", default=None, callback=lambda _c, _p, v: resolve_root(v),
        shell_complete=complete_dir,
        help="The experiments folder [default: $NUBOARD_DIR, else ./experiments].")(command)


def _set_catalog(_ctx: click.Context, _param, value: str | None) -> str | None:
    """--catalog URL stands for $NUBOARD_CATALOG_URL in this process and what it starts, so every
    catalog the command opens (and a viewer's) is on that server; an empty URL means SQLite."""
    if value is None:
        return None
    from nuboard.catalog.server import ENV, check_url
    if not value.strip():
        os.environ.pop(ENV, None)
        return None
    check_url(value)                        # a bad URL or a missing driver: one line, now
    os.environ[ENV] = value
    return value


def catalog_option(command):
    """--catalog URL: the shared catalog on PostgreSQL (default $NUBOARD_CATALOG_URL; docs/team.md)."""
    return click.option(
        "--catalog", metavar="URL", default=None, expose_value=False, callback=_set_catalog,
        help="Index into this PostgreSQL database, shared by a lab's hosts "
             "(postgresql+psycopg://user@host/db) [default: $NUBOARD_CATALOG_URL, else each "
             "project's SQLite file].")(command)


def debug_option(command):
    """--debug after the command too (`nuboard ls --debug`), the same as `nuboard --debug ls`."""
    return click.option("--debug", is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_debug, help="Show a traceback on errors.")(command)


def format_options(command):
    """--json and --csv (at most one of them)."""
    command = click.option("--csv", "as_csv", is_flag=True,
                           help="Print CSV with a header line.")(command)
    return click.option("--json", "as_json", is_flag=True,
                        help="Print a JSON list of objects.")(command)


def check_one_format(as_json: bool, as_csv: bool) -> None:
    if as_json and as_csv:
        raise click.UsageError("--json and --csv cannot be used together.")


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False
