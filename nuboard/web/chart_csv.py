"""Every point of a chart's range as a CSV file: the Charts page's "CSV (every point)".

The chart data endpoint (charts.data) sends each run's points downsampled to about the chart's
width; this one answers the same query (name, once per scalar; runs, x, rank, lo, hi) with
every point in the range, none left out, one row a point in long form: run_id, run_name,
rank, scalar, the x axis's column (step, wall_time, relative_seconds, process_seconds, or the
x scalar's name for x=scalar:NAME) and value. The points are the chart's own (the Axis of
chartdata.SeriesCache's series for the chart's x, cut to lo <= x <= hi as series_payload cuts
it); a value that is not finite (NaN, +-Inf) is an empty cell, as the chart draws a gap.
Numbers are written as Python's repr, which reads back to the same float.

The file is streamed, a block of rows at a time, and refused (413) when the range holds more
than MAX_POINTS points. A grouped chart (?group=) draws lines computed from its runs, not
points: it is refused with a 400 saying so. Text cells go through csv_cells.escape_formula, so
that a run named "=cmd()" is text in a spreadsheet.
"""
from __future__ import annotations

import bisect
import csv
import io
import re
from urllib.parse import quote

from flask import Blueprint, Response, abort, request

from nuboard.files.csv_cells import escape_formula

from .chart_xscalar import x_scalar
from .charts import chart_names, chosen_runs, number_arg, run_ranks, run_rows, x_axis_arg
from .context import load_project, root_dir, series_cache
from .security import DOWNLOAD_CSP

chart_csv = Blueprint("chart_csv", __name__)
chart_csv.url_value_preprocessor(load_project)

MAX_POINTS = 10_000_000
"""The most points one CSV holds (some 600 MB of text, written at about a million rows a
second); a range with more is refused."""
ROWS_PER_BLOCK = 65_536
X_COLUMNS = {"step": "step", "wall": "wall_time", "relative": "relative_seconds",
             "process": "process_seconds"}


class _Part:
    """One run, rank and scalar's points in the range: an Axis slice [start, stop) and its
    shift (the relative axes' zero), with the row's leading text cells ready."""
    __slots__ = ("axis", "start", "stop", "shift", "prefix")

    def __init__(self, axis, start: int, stop: int, shift: float, prefix: str):
        self.axis, self.start, self.stop, self.shift, self.prefix = axis, start, stop, shift, prefix


@chart_csv.get("/p/<project:project>/.chart.csv")
@chart_csv.get("/api/p/<project:project>/.chart.csv", endpoint="csv_api")
def csv_file(project: str) -> Response:
    """The CSV of every point of the chart's query; 400 for bad input (as charts.data says it,
    and for ?group=), 413 past MAX_POINTS. Under /api/ an error is JSON, else the error page."""
    names = chart_names()
    ids = chosen_runs(project)
    if not ids:
        abort(400, description="runs: give the runs, such as runs=<id>,<id> (the chart's own).")
    x = x_axis_arg()
    rank_arg = request.args.get("rank", "0")
    if rank_arg != "all" and not rank_arg.isdigit():
        abort(400, description=f"rank {rank_arg!r}: give a number or 'all'.")
    lo, hi = number_arg("lo"), number_arg("hi")
    if lo is not None and hi is not None and lo > hi:
        abort(400, description=f"lo={lo!r} is above hi={hi!r}: give lo <= hi.")
    groups = [g for g in request.args.getlist("group") if g]
    if groups:
        abort(400, description=f"group={groups[0]!r}: a grouped chart's lines are computed from "
                               "its runs, not logged; leave group out for every point of its runs.")
    parts = _parts(project, ids, names, x, rank_arg, lo, hi)
    total = sum(p.stop - p.start for p in parts)
    if total > MAX_POINTS:
        abort(413, description=f"The range holds {total:,} points, over the limit of "
                               f"{MAX_POINTS:,} a CSV holds: zoom in (lo, hi) or choose fewer runs.")
    head = _row(["run_id", "run_name", "rank", "scalar", x_scalar(x) or X_COLUMNS[x], "value"])
    response = Response(_rows(head, parts), mimetype="text/csv")
    filename = _filename(names[0] + (f"_and_{len(names) - 1}_more" if len(names) > 1 else ""))
    response.headers["Content-Disposition"] = (
        f"attachment; filename=\"{filename}\"; filename*=UTF-8''{quote(filename, safe='')}")
    response.headers["Content-Security-Policy"] = DOWNLOAD_CSP
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Points"] = str(total)
    return response


def _parts(project: str, ids: list[str], names: list[str], x: str, rank_arg: str,
           lo: float | None, hi: float | None) -> list[_Part]:
    """Each run, rank and scalar's points in [lo, hi] on axis x, in the order of ids, then
    ranks, then names (a run, rank or scalar that is not there has none)."""
    rows = run_rows(project, ids)
    cache, root = series_cache(), root_dir()
    out = []
    for run_id, row, folder, rank, live in run_ranks(root, project, rows, ids, rank_arg):
        for name in names:
            # read as chartdata.series_payload reads for the chart (a live run's new points
            # too), on the same axis and shift
            found = _axis(cache, folder, rank, name, x, live)
            if found is None:
                continue
            axis, shift = found
            start = 0 if lo is None else bisect.bisect_left(axis.xs, lo + shift)
            stop = len(axis) if hi is None else bisect.bisect_right(axis.xs, hi + shift)
            if stop > start:
                prefix = _row([run_id, row["name"], str(rank), name])[:-2] + ","
                out.append(_Part(axis, start, stop, shift, prefix))
    return out


def _axis(cache, folder, rank: int, name: str, x: str, live: bool):
    """(Axis, shift) of one run and rank's scalar on axis x, as chartdata.series_payload
    takes it for the chart (a live run's new points read too; on x=scalar:NAME the pairs by
    step, chart_xscalar); None when the run has no such scalar (or no such x scalar)."""
    x_name = x_scalar(x)
    series = cache.get(folder, rank, name, live=live, x=None if x_name else x)
    if series is None:
        return None
    if x_name is None:
        return series.view(x)
    other = cache.get(folder, rank, x_name, live=live)
    return None if other is None else (series.paired(other), 0.0)


def _rows(head: str, parts: list[_Part]):
    """The CSV text, a block of ROWS_PER_BLOCK rows at a time (no Flask in here: it runs
    after the view has returned)."""
    yield head
    for part in parts:
        for at in range(part.start, part.stop, ROWS_PER_BLOCK):
            n = min(ROWS_PER_BLOCK, part.stop - at)
            xs = part.axis.x.slice(at, n).to_pylist()
            ys = part.axis.y.slice(at, n).to_pylist()
            if part.shift:
                xs = [v - part.shift for v in xs]
            prefix = part.prefix
            yield "".join([f"{prefix}{xv!r},{'' if yv is None else repr(yv)}\r\n"
                           for xv, yv in zip(xs, ys)])


def _row(cells: list[str]) -> str:
    """One CSV row of text cells (quoted where needed, formulas made text), with CRLF."""
    out = io.StringIO()
    csv.writer(out).writerow([escape_formula(c) for c in cells])
    return out.getvalue()


def _filename(name: str) -> str:
    """A file name made from the scalar's name: train/loss -> train_loss.csv (letters, digits,
    '.', '-' and '_' only; at most 100 of them; 'chart.csv' when none is left)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:100]
    return f"{stem or 'chart'}.csv"
