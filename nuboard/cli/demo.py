"""`nuboard demo [DIR] [--live]`: write the demo projects to try the viewer on."""
from __future__ import annotations

import shlex
from pathlib import Path

import click

from nuboard.files.layout import resolve_root

from .options import debug_option


@click.command("demo", short_help="Write demo projects to try the viewer on.")
@click.argument("dir", metavar="[DIR]", required=False)
@click.option("--dir", "dir_option", metavar="DIR", default=None,
              help="The same as the DIR argument.")
@click.option("--live", is_flag=True,
              help="Then start one more run that keeps logging until Ctrl-C (or SIGTERM).")
@debug_option
def demo(dir: str | None, dir_option: str | None, live: bool) -> None:
    """Write the demo projects into DIR: datasets, llm-pretrain and vit-ablations.

    DIR defaults to $NUBOARD_DIR, else ./experiments. The demo is written through the public
    API by real processes: a learning-rate sweep, runs with two ranks, a resumed run, a fork,
    a crashed and a lost run, dataset versions with their lineage, a checkpoint and the
    evaluation that used it. It takes about ten seconds. When DIR already holds the demo,
    nothing is written; when it holds one of those projects without being the demo, nothing
    is written and the command fails.

    With --live, one more llm-pretrain run (live-lr3e-4) then logs a few points a second,
    for the viewer's live charts, until Ctrl-C; it then finishes cleanly.

    \b
    Examples:
      nuboard demo /tmp/nuboard-demo && nuboard up /tmp/nuboard-demo
      nuboard demo /tmp/nuboard-demo --live
    """
    if dir is not None and dir_option is not None and Path(dir) != Path(dir_option):
        raise click.UsageError(f"DIR {dir!r} and --dir {dir_option!r} differ: give one of them.")
    root = resolve_root(dir if dir is not None else dir_option)
    from nuboard.demo import run_live, write_demo
    found = write_demo(root, progress=click.echo)
    if found.written:
        click.echo(f"Wrote the demo in {found.seconds:.1f} s: {len(found.runs)} runs in "
                   f"{root}.")
    hint = f"nuboard up {shlex.quote(str(root))}"
    if not live:
        click.echo(f"See it with:\n  {hint}")
        return
    click.echo(f"See it with '{hint}' in another terminal.")
    run_id = run_live(root, progress=click.echo)
    click.echo(f"Finished the live run {run_id}.")
