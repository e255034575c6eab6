"""What the sweep pages (Scatter, parallel coordinates) share on the Flask side: their one
error, the ?runs= argument, the fields a project offers, the runs of a query with chosen
fields, and the query's warnings. The numbers themselves come from sweep_data.py."""
from __future__ import annotations

import time

from flask import request

from nuboard.catalog.query import QuerySyntaxError
from nuboard.catalog.query_keys import query_warnings

from . import runs_table, sweep_data
from .context import catalogs
from .run_colours import project_colours


class SweepError(ValueError):
    """Input a sweep page cannot draw (the message names the value and the rule)."""


def run_ids_arg() -> list[str] | None:
    """`?runs=<id>,...` as a list (None when not given)."""
    raw = request.args.get("runs")
    if raw is None:
        return None
    return [r for r in (p.strip() for p in raw.split(",")) if r]


def field_choices(project: str) -> tuple[dict[str, list[str]], list[str]]:
    """The project's config keys and scalar names (the Runs table's column chooser's, computed
    again only when a sync changed the project), and the fields they make."""
    choices = catalogs().remember(project, "columns", runs_table.available_columns)
    return choices, sweep_data.field_choices(choices)


def check_run_count(run_ids: list[str] | None) -> None:
    """SweepError when ?runs= names more ids than a sweep page reads."""
    if run_ids is not None and len(run_ids) > sweep_data.LIMIT:
        raise SweepError(f"runs names {len(run_ids):,} run ids: at most "
                         f"{sweep_data.LIMIT:,}; use a query (?q=) for more")


def sweep_of(project: str, settings: dict, fields: list) -> dict:
    """The runs of the settings' query (or ids) with their values of these fields.

    Raises:
        SweepError: a query that does not parse.
    """
    try:
        return sweep_data.sweep(catalogs().get(project), fields=fields, query=settings["q"],
                                run_ids=settings["runs"], now=time.time(),
                                colours=project_colours(project))
    except QuerySyntaxError as exc:
        raise SweepError(str(exc)) from exc


def warnings_of(project: str, query: str) -> list[str]:
    """The query's warnings (an unknown key...); none for a query that does not parse, whose
    error the page shows instead."""
    try:
        return query_warnings(catalogs().get(project), query)
    except QuerySyntaxError:
        return []
