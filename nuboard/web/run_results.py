"""The run page's Results: each scalar's last, min and max, with the steps where they were
reached, read from the catalog's summaries and, when the run is small enough, its data."""
from __future__ import annotations

import math
from pathlib import Path

from nuboard.eventlog.reader import Scalar
from nuboard.eventlog.source import rank_scalars
from nuboard.files import layout

from .number_text import number_text

POINT_BUDGET = 1_000_000       # points read from the run's data to find the steps of min and max
BYTE_BUDGET = 32 * 1024 * 1024  # ... or log bytes, when the catalog does not hold the run yet
ROW_LIMIT = 1000               # scalars shown; the rest are counted


def _finite(value) -> float | None:
    return value if isinstance(value, float) and not math.isnan(value) else None


def _step_of(points: Scalar, value: float | None) -> int | None:
    """The first step where the scalar took `value` (None when it never did)."""
    if value is None:
        return None
    try:
        return int(points.steps[points.values.index(value)])     # array.index: C speed
    except ValueError:
        return None


def _from_points(name: str, points: Scalar, known: dict | None) -> dict:
    """One row from the scalar's points; the catalog's min and max, when it counted the same
    points, spare a pass in Python."""
    current = known is not None and known.get("count") == len(points.values)
    lo = _finite(known.get("min")) if current else None
    hi = _finite(known.get("max")) if current else None
    lo_step, hi_step = _step_of(points, lo), _step_of(points, hi)
    if lo_step is None or hi_step is None:          # not synced yet, or points added since
        good = [v for v in points.values if not math.isnan(v)]
        lo, hi = (min(good), max(good)) if good else (None, None)
        lo_step, hi_step = _step_of(points, lo), _step_of(points, hi)
    last = points.values[-1]
    return {"name": name, "last": last if math.isfinite(last) else None,
            "last_text": None if math.isfinite(last) else number_text(last),
            "last_step": int(points.steps[-1]),
            "min": lo, "min_step": lo_step, "max": hi, "max_step": hi_step,
            "count": len(points.values)}


def _from_catalog(row: dict) -> dict:
    return {"name": row["name"], "last": row["last"], "last_text": None,
            "last_step": row["last_step"],
            "min": row["min"], "min_step": None, "max": row["max"], "max_step": None,
            "count": row["count"]}


def _cheap(folder: Path, catalog_rows: list[dict]) -> bool:
    """Whether reading the run's rank-0 data stays within the budget."""
    if catalog_rows:
        return sum(r["count"] or 0 for r in catalog_rows) <= POINT_BUDGET
    size = 0
    for _, _, path in layout.list_logs(folder, rank=0):
        try:
            size += path.stat().st_size
        except OSError:
            pass
    return size <= BYTE_BUDGET


def _ordered(rows: list[dict], prefixes: dict) -> list[dict]:
    """The user's prefixes first, then the timing prefix, then the system prefix; the prefixes
    and the names within each in the order they were first logged (the order rows come in)."""
    timing = prefixes.get("timing") if isinstance(prefixes.get("timing"), str) else "timing"
    system = prefixes.get("system") if isinstance(prefixes.get("system"), str) else "system"
    last = {timing: 1, system: 2}
    heads = [row["name"].split("/", 1)[0] for row in rows]
    first = {h: i for i, h in reversed(list(enumerate(heads)))}
    order = sorted(range(len(rows)), key=lambda i: (last.get(heads[i], 0), first[heads[i]], i))
    return [rows[i] for i in order]


def scalar_results(folder: Path, catalog_rows: list[dict], prefixes: dict) -> dict:
    """{'rows': [{'name', 'last', 'last_text', 'last_step', 'min', 'min_step', 'max',
    'max_step', 'count'}], 'more': scalars left out, 'steps': whether min and max steps were
    looked up}. A last value that is NaN or infinite is None, and 'last_text' says which
    ('NaN', 'inf', '-inf', as number_text writes them; the JSON twin cannot hold them).

    The steps of min and max come from the run's data when it holds at most POINT_BUDGET
    points (as the catalog counts them); past that, the catalog's summaries alone.
    """
    known = {r["name"]: r for r in catalog_rows}
    rows: list[dict] = []
    steps = _cheap(folder, catalog_rows)
    if steps:
        try:
            data = rank_scalars(folder, 0)
        except (OSError, ValueError):
            data, steps = {}, False
        rows = [_from_points(name, points, known.get(name))
                for name, points in data.items() if len(points.values)]
    if not rows:
        rows = [_from_catalog(r) for r in catalog_rows if r["count"]]
    rows = _ordered(rows, prefixes if isinstance(prefixes, dict) else {})
    return {"rows": rows[:ROW_LIMIT], "more": max(0, len(rows) - ROW_LIMIT), "steps": steps}
