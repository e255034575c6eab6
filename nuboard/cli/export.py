"""`nuboard export`: a project's runs or history as a Parquet or CSV file."""
from __future__ import annotations

import click


@click.command()
def export() -> None:
    """Write runs or history to a .parquet or .csv file.

    \b
    Example:
      nuboard export llm --history -o history.parquet
    """
