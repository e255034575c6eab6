"""The `nuboard` command: one group, errors as one line, a traceback only with --debug."""
from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import NuBoardError


class _Group(click.Group):
    """Prints a NuBoardError or OSError as one line and exits 1 (2 stays usage)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (NuBoardError, OSError) as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"nuboard: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nuboard")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """NuBoard: a local-first experiment tracker.

    \b
    Example:
      nuboard events dump experiments/llm/runs/20261017T0930-c589c96e/events.r0.s0.log
    """
    ctx.ensure_object(dict)["debug"] = debug


@cli.group()
def events() -> None:
    """Look inside event logs.

    \b
    Example:
      nuboard events dump experiments/llm/runs/<run_id>/events.r0.s0.log
    """


@events.command("dump")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--limit", default=20, show_default=True, type=click.IntRange(0),
              help="Points shown per record.")
def events_dump(file: str, limit: int) -> None:
    """Print an event log as text: its header, each record, and what the reader met.

    \b
    Example:
      nuboard events dump experiments/llm/runs/20261017T0930-c589c96e/events.r0.s0.log
    """
    from ..events import dump_lines
    for line in dump_lines(file, limit=limit):
        click.echo(line)


def main() -> None:
    cli(prog_name="nuboard")


if __name__ == "__main__":
    sys.exit(main())
