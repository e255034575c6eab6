"""The Runs table as a user shapes it: column widths and the grouping key, as the URL and a
saved view carry them (the column order is the order of `cols`).

Widths travel as `widths=<column>:<px>,<column>:<px>` (a column name may hold ':', so the
number is what follows the last one) and are kept as {column: px}; the grouping key as
`group=<key>`: `group` (the run's group), `host` or `config:<key>`.
"""
from __future__ import annotations

from typing import Any

from nuboard.catalog.run_groups import GROUP_FIELDS, check_group_key
from nuboard.errors import NuBoardError

from .runs_table import TableError, check_columns

MIN_WIDTH, MAX_WIDTH = 30, 2000          # pixels a column may be given
MAX_WIDTHS = 100                         # widths a URL or a view may carry


class ShapeError(NuBoardError, ValueError):
    """A width or grouping key the table cannot take (the message names the value and rule)."""


def width_problem(column: Any, px: Any) -> str | None:
    """Why `px` is not a width of `column` (None when it is)."""
    if not isinstance(column, str) or not column or "," in column:
        return f"the column {column!r:.60} of a width is not a column name"
    try:
        check_columns([column])
    except TableError as exc:
        return f"a width names an {exc}"
    if isinstance(px, bool) or not isinstance(px, int) or not MIN_WIDTH <= px <= MAX_WIDTH:
        return (f"the width {px!r:.40} of column {column!r:.60} is not allowed: give whole "
                f"pixels from {MIN_WIDTH} to {MAX_WIDTH}")
    return None


def check_widths(widths: Any) -> dict[str, int]:
    """A {column: px} mapping checked (a saved view's or a form's).

    Raises:
        ShapeError: not a mapping, too many, or a width outside MIN_WIDTH..MAX_WIDTH.
    """
    if not isinstance(widths, dict):
        raise ShapeError(f"widths {widths!r:.60} are not a mapping of column to pixels")
    if len(widths) > MAX_WIDTHS:
        raise ShapeError(f"too many column widths ({len(widths)}, at most {MAX_WIDTHS})")
    for column, px in widths.items():
        problem = width_problem(column, px)
        if problem:
            raise ShapeError(problem)
    return dict(widths)


def parse_widths(text: str) -> dict[str, int]:
    """`name:240,config:opt:90` as {'name': 240, 'config:opt': 90}.

    Raises:
        ShapeError: an entry without ':<px>', or a width not a whole number in range.
    """
    widths: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        column, sep, px = entry.rpartition(":")
        if not sep or not column:
            raise ShapeError(f"the width {entry!r:.60} is not <column>:<pixels> "
                             "(e.g. name:240)")
        if not px.isascii() or not px.isdigit():
            raise ShapeError(f"the width {px!r:.40} of column {column!r:.60} is not a number: "
                             f"give whole pixels from {MIN_WIDTH} to {MAX_WIDTH}")
        widths[column] = int(px)
    return check_widths(widths)


def widths_text(widths: dict[str, int]) -> str:
    """{column: px} as the URL writes it (parse_widths reads it back)."""
    return ",".join(f"{column}:{px}" for column, px in widths.items())


def check_group(key: Any) -> str:
    """A grouping key checked: '' (none), a run field of GROUP_FIELDS or config:<key>; the
    Charts page's spelling config.<key> is taken as config:<key>, so a key copied from one
    page works on the other.

    Raises:
        ShapeError: any other key.
    """
    if not isinstance(key, str):
        raise ShapeError(f"the grouping key {key!r:.60} is not a text")
    key = key.strip()
    if key.startswith("config.") and len(key) > len("config."):
        key = "config:" + key[len("config."):]
    if key and not check_group_key(key):
        raise ShapeError(f"cannot group runs by {key!r:.60}: use "
                         f"{', '.join(GROUP_FIELDS)} or config:<key> (e.g. config:optimizer)")
    return key
