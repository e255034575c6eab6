"""The `nuboard` command: one group, errors as one line, a traceback only with --debug."""
from __future__ import annotations

import contextlib
import io
import sys

import click

from nuboard import __version__
from nuboard.errors import NuBoardError


class _Group(click.Group):
    """Errors as one line: a usage error exits 2, anything else 1; --debug shows the traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            raise                                   # click quiets a closed pipe (| head)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"nuboard: {error_line(exc)}", err=True)
            ctx.exit(1)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        # Text that is not UTF-8 (a file name's surrogate escapes, kept so in a manifest) is
        # printed escaped as \udcff, never a UnicodeEncodeError; in JSON that is a valid escape.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors="backslashreplace")
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            if isinstance(exc, click.exceptions.NoArgsIsHelpError):     # `nuboard` alone: the help
                exc.show()
            else:
                click.echo(usage_line(exc), err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("nuboard: aborted.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def error_line(exc: BaseException) -> str:
    """One line for an error: our own and OS errors as they are, others with their type."""
    if isinstance(exc, (NuBoardError, OSError)):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc} (run 'nuboard --debug ...' for a traceback)"
    return " ".join(text.split()) or type(exc).__name__


def usage_line(exc: click.UsageError) -> str:
    """A usage error as one line: the command, what is wrong, where the help is."""
    path = exc.ctx.command_path if exc.ctx is not None else "nuboard"
    message = " ".join(exc.format_message().split())
    return f"{path}: {message} (see '{path} --help')"


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nuboard")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """NuBoard: a local-first experiment tracker.

    \b
    Example:
      nuboard ls llm --query 'tag:baseline lr>=1e-3'
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
    from nuboard.eventlog.logfile import dump_lines
    for line in dump_lines(file, limit=limit):
        click.echo(line)


from .artifacts import artifact  # noqa: E402
from .completion import completion  # noqa: E402
from .demo import demo  # noqa: E402
from .export import export  # noqa: E402
from .importing import import_  # noqa: E402
from .run_trash import trash  # noqa: E402
from .runs import ls, reindex, rm  # noqa: E402 (the commands, registered below)
from .sql import sql  # noqa: E402
from .sync import sync  # noqa: E402
from .up import up  # noqa: E402

for _command in (ls, rm, trash, sql, reindex, artifact, import_, export, demo, up, sync, completion):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="nuboard")


if __name__ == "__main__":
    sys.exit(main())
