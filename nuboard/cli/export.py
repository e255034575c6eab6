"""`nuboard export`: a project's runs or history as a Parquet or CSV file."""
from __future__ import annotations

import time
from pathlib import Path

import click

from .completion import complete_project
from .options import catalog_option, debug_option, dir_option
from .projects import check_project_exists


@click.command(short_help="Write runs or history to a .parquet or .csv file.")
@click.argument("project", shell_complete=complete_project)
@click.option("--query", "-q", metavar="Q", help="Only the runs this query matches (docs/query.md).")
@click.option("--runs", "as_runs", is_flag=True, help="One row a run: config, tags, last/min/max.")
@click.option("--history", "as_history", is_flag=True,
              help="One row a point: project, run_id, rank, key, step, wall_time, value.")
@click.option("--keys", "-k", metavar="K", multiple=True,
              help="With --history: only this scalar (repeat it for more; a glob such as 'train/*').")
@click.option("--rank", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="With --history: which rank's points.")
@click.option("--output", "-o", "output", required=True, metavar="FILE",
              type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="The file to write: FILE.parquet or FILE.csv (replaced when it exists).")
@dir_option
@catalog_option
@debug_option
def export(project: str, query: str | None, as_runs: bool, as_history: bool, keys: tuple[str, ...], rank: int,
           output: Path, root: Path) -> None:
    """Write a project's runs (--runs) or every logged point (--history) to FILE.parquet or
    FILE.csv: the tables of nb.runs and nb.history (docs/tables.md).

    The catalog is brought up to date from the files first. The file is written under a
    temporary name and renamed at the end, so an interrupted export leaves no half file.
    In CSV the tags column is JSON text ('["a", "b"]').

    \b
    Example:
      nuboard export llm --runs -o runs.csv
      nuboard export llm --history --keys 'train/*' --query 'tag:baseline' -o history.parquet
    """
    from nuboard.errors import InvalidArgumentError
    from nuboard.tables.table_files import check_suffix

    try:
        check_suffix(output)
    except InvalidArgumentError as exc:
        raise click.UsageError(str(exc)) from None
    if as_runs == as_history:
        raise click.UsageError("pass one of --runs (one row a run) and --history (one row a point)"
                               f"{', not both' if as_runs else ''}.")
    if as_runs and (keys or rank):
        raise click.UsageError("--keys and --rank go with --history, not --runs.")
    now = time.time()
    from nuboard.catalog.query import QuerySyntaxError
    from nuboard.tables.project import check_query
    try:
        check_query(query, now)
    except QuerySyntaxError as exc:
        shown = query if len(query) <= 60 else query[:57] + "..."     # type: ignore[arg-type]
        raise click.UsageError(f"bad --query {shown!r}: {exc}") from None
    check_project_exists(root, project)

    from nuboard.tables import history, runs, write_table
    if as_runs:
        table = runs(project, query, root).to_arrow()
        count = f"{table.num_rows:,} run{'s' if table.num_rows != 1 else ''}"
    else:
        table = history(project, list(keys) or None, query, rank, root)
        run_count = len(table.column("run_id").unique()) if table.num_rows else 0
        count = f"{table.num_rows:,} point{'s' if table.num_rows != 1 else ''} of {run_count:,} " \
                f"run{'s' if run_count != 1 else ''}"
    write_table(table, output)
    click.echo(f"Wrote {count} to {output}.")

