"""`nuboard sql`: one read-only SQL statement over a project's catalog (docs/cli.md)."""
from __future__ import annotations

from pathlib import Path

import click

from nuboard.catalog.sql_console import ReadOnlyError, SqlError, run_statement

from . import formats
from .completion import complete_project
from .options import catalog_option, check_one_format, debug_option, dir_option, format_options, stdout_is_terminal
from .projects import pick_project
from .runs import catalog_of

__all__ = ["sql", "run_statement", "unique_names", "ReadOnlyError", "SqlError"]


def unique_names(columns: list[str]) -> list[str]:
    """Column names as JSON keys: a repeated name gets ':2', ':3'."""
    seen: dict[str, int] = {}
    out = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}:{seen[name]}")
    return out


@click.command("sql", short_help="Run a read-only SQL query on a catalog.")
@click.argument("statement", metavar='"SELECT ..."')
@click.option("--project", "-p", metavar="P", shell_complete=complete_project,
              help="The project whose catalog to query [default: the only project].")
@format_options
@dir_option
@catalog_option
@debug_option
def sql(statement: str, project: str | None, as_json: bool, as_csv: bool, root: Path) -> None:
    """Run one read-only SQL statement over a project's catalog and print the rows.

    The catalog is brought up to date from the files first, then opened read-only: a
    statement that would write fails and changes nothing. The tables (runs, tags, config,
    scalars, ...) are a stable interface, described in docs/cli.md.

    \b
    Example:
      nuboard sql "SELECT r.run_id, s.last FROM runs r JOIN scalars s ON s.run = r.id
                   WHERE s.name = 'train/loss' ORDER BY s.last LIMIT 5" --project llm
    """
    check_one_format(as_json, as_csv)
    name = pick_project(root, project)
    from nuboard.catalog.sync import sync
    with catalog_of(root, name) as catalog:
        sync(catalog)
        columns, rows = run_statement(catalog, statement)
    if as_json:
        keys = unique_names(columns)
        click.echo(formats.as_json(dict(zip(keys, row)) for row in rows))
    elif as_csv:
        if columns:
            click.echo(formats.as_csv(columns, rows), nl=False)
    elif columns:
        cells = [[formats.text_cell(v) for v in row] for row in rows]
        if stdout_is_terminal():
            from rich.console import Console
            Console().print(formats.rich_table(columns, cells))
        else:
            click.echo(formats.plain_table(columns, cells))
