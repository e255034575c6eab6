"""Options every command takes: --dir, --debug, and how a command tells a terminal from a pipe."""
from __future__ import annotations

import sys

import click

from nuboard.files.layout import resolve_root


def _set_debug(ctx: click.Context, _param, value: bool) -> bool:
    if value:
        ctx.ensure_object(dict)["debug"] = True
    return value


def dir_option(command):
    """--dir DIR: the experiments root (default $NUBOARD_DIR, else ./experiments)."""
    return click.option(
        "--dir", "root", metavar="DIR", default=None, callback=lambda _c, _p, v: resolve_root(v),
        help="The experiments folder [default: $NUBOARD_DIR, else ./experiments].")(command)


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
