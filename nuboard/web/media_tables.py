"""A logged table (nb.Table) as the media panel shows it: one page of rows, sorted by a column,
each cell as text or, for an image cell, the URL of its thumbnail.

No Flask here: the table comes as media_read.load_value gives it ({"columns", "kinds", "rows"},
image cells as absolute paths), and `image_url` turns such a path into a URL (None for a path
outside the run's media folder, shown as text).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .number_text import cell_text

PAGE_ROWS = 20
CELL_CHARS = 2000           # a text cell's characters shown (the rest: "…")


def sort_key(value: Any) -> tuple:
    """A cell's place in an ascending sort of any column, mixed ones too: numbers (NaN after
    them), then text, then anything else as text; empty cells last in either direction is the
    caller's (sorted_rows)."""
    if isinstance(value, bool):
        return (0, float(value), "")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return (1, 0.0, "")
        return (0, value, "")
    if isinstance(value, str):
        return (2, 0.0, value)
    return (3, 0.0, repr(value))


def sorted_rows(rows: Sequence[Sequence[Any]], column: int | None, desc: bool) -> list[Sequence[Any]]:
    """The rows sorted by one column (stable; empty cells always last), or as logged when
    column is None."""
    if column is None:
        return list(rows)
    filled = [r for r in rows if r[column] is not None]
    empty = [r for r in rows if r[column] is None]
    filled.sort(key=lambda r: sort_key(r[column]), reverse=desc)
    return filled + empty


def cell_view(value: Any, kind: str, image_url: Callable[[str], str | None]) -> dict:
    """One cell as the template writes it: {"image": url} for an image, else {"text": ...}
    (cut to CELL_CHARS, with "cut": True) and "number": True for a number (right-aligned)."""
    if value is None:
        return {"text": ""}
    if isinstance(value, str) and kind in ("image", "mixed"):
        url = image_url(value)
        if url is not None:
            return {"image": url}
    if isinstance(value, str):
        cut = len(value) > CELL_CHARS
        return {"text": value[:CELL_CHARS] + ("…" if cut else ""), "cut": cut}
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {"text": cell_text(value), "number": number}


def table_page(table: dict, *, sort: int | None, desc: bool, page: int,
               image_url: Callable[[str], str | None], rows_per_page: int = PAGE_ROWS) -> dict:
    """One page of the table: {"columns": [{"name", "kind", "index"}], "rows": [[cell_view]],
    "page" (from 0, clamped), "pages", "total", "sort", "desc", "first" (the first row's
    number from 1)}."""
    columns, kinds, rows = table["columns"], table["kinds"], table["rows"]
    if sort is not None and not 0 <= sort < len(columns):
        sort = None
    total = len(rows)
    pages = max(1, math.ceil(total / rows_per_page))
    page = min(max(page, 0), pages - 1)
    ordered = sorted_rows(rows, sort, desc)
    shown = ordered[page * rows_per_page:(page + 1) * rows_per_page]
    return {"columns": [{"name": name, "kind": kind, "index": i}
                        for i, (name, kind) in enumerate(zip(columns, kinds))],
            "rows": [[cell_view(v, k, image_url) for v, k in zip(row, kinds)] for row in shown],
            "page": page, "pages": pages, "total": total, "sort": sort, "desc": desc,
            "first": page * rows_per_page + 1}
