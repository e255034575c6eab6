"""The Charts page (one chart per scalar, grouped, the system section apart) and its data.

The data endpoint returns, for one scalar and several runs, each run's points downsampled on
the server (min and max per x-bucket), for the x range asked (zoom asks again, finer); with
?group=KEY (repeated: several keys), one line per group of runs instead (web/chart_groups.py).
"""
from __future__ import annotations

import math
import time

from flask import Blueprint, abort, render_template, request

from nuboard.catalog import run_reads
from nuboard.catalog.run_doc import read_run_doc
from nuboard.files import layout
from nuboard.files.records import display_status

from .chart_groups import GroupKeyError, check_group_keys, combined_group, group_keys, group_lines, group_of
from .chart_prefetch import run_in_background
from .chart_xscalar import check_x_scalar, x_scalar
from .chartdata import series_payload
from .context import catalogs, load_project, prefetch, root_dir, series_cache, wants_json
from .media_section import media_context
from .run_colours import project_colours
from .views import find_view

charts = Blueprint("charts", __name__)
charts.url_value_preprocessor(load_project)
MAX_RUNS = 50
X_AXES = ("step", "wall", "relative", "process")   # chartdata.X_KINDS
DEFAULT_BUCKETS = 1000
MAX_BUCKETS = 4000


def chosen_runs(project: str) -> list[str]:
    """Run ids from ?runs=a,b or repeated ?run=a&run=b (a saved view's when given)."""
    ids = [r for part in request.args.getlist("runs") for r in part.split(",") if r]
    ids += [r for r in request.args.getlist("run") if r]
    if not ids and request.args.get("view"):
        view = find_view(root_dir(), project, request.args["view"])
        if view is None:
            abort(404, description=f"No saved view {request.args['view']!r}.")
        ids = list(view.get("runs") or [])
    seen: dict[str, None] = {}
    for r in ids:
        seen.setdefault(r, None)
    if len(seen) > MAX_RUNS:
        abort(400, description=f"{len(seen)} runs asked for; a chart shows at most {MAX_RUNS}.")
    return list(seen)


def run_rows(project: str, ids: list[str]) -> dict[str, dict]:
    """The catalog rows of these runs, each with the status the Runs table shows (a running
    run whose heartbeat stopped is 'lost': records.display_status)."""
    catalog = catalogs().get(project)
    now = time.time()
    found = run_reads.runs_by_id(catalog, ids, ("id", "run_id", "name", "status", "group_name",
                                                "heartbeat_mtime", "lost_after"))
    for row in found.values():
        row["status"] = display_status(row["status"], row["heartbeat_mtime"], now, row["lost_after"])
    return found


def _newest_runs(project: str, count: int = 10) -> list[str]:
    """The newest runs of the project, charted when none were chosen."""
    catalog = catalogs().get(project)
    return run_reads.newest_run_ids(catalog, count)


def _scalar_names(project: str, row_ids: list[int]) -> tuple[list[str], list[int]]:
    """The runs' scalar names in the order first logged, and their ranks."""
    catalog = catalogs().get(project)
    return run_reads.scalar_names_and_ranks(catalog, row_ids)


def group_names(names: list[str], system_prefix: str = "system", timing_prefix: str = "timing"
                ) -> list[tuple[str, list[str]]]:
    """Charts grouped by the first name segment, in the order the names come (first logged);
    the timing section, then the system section, last."""
    groups: dict[str, list[str]] = {}
    for name in names:
        head = name.split("/", 1)[0] if "/" in name else ""
        groups.setdefault(head, []).append(name)
    last = [g for g in (timing_prefix, system_prefix) if g in groups]
    order = [g for g in groups if g not in last] + list(dict.fromkeys(last))
    return [(g, groups[g]) for g in order]


def system_prefix(project: str, ids: list[str]) -> str:
    """The system prefix the runs recorded in run.json (the most common; 'system' if none)."""
    return own_prefixes(project, ids)["system"]


def own_prefixes(project: str, ids: list[str]) -> dict[str, str]:
    """{'system': ..., 'timing': ...}: the prefixes the runs recorded in run.json, each the most
    common one (the default, the kind's own name, when none is recorded)."""
    counts: dict[str, dict[str, int]] = {"system": {}, "timing": {}}
    for run_id in ids:
        try:
            prefixes = read_run_doc(layout.run_dir(root_dir(), project, run_id))["prefixes"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for kind, seen in counts.items():
            prefix = prefixes.get(kind) if isinstance(prefixes, dict) else None
            if isinstance(prefix, str):
                seen[prefix] = seen.get(prefix, 0) + 1
    return {kind: max(seen, key=lambda p: (seen[p], p == kind)) if seen else kind
            for kind, seen in counts.items()}


def _label(row: dict) -> str:
    return f"{row['name']} ({row['run_id'][-8:]})"


def _group_keys() -> list[str]:
    """?group= (repeated to group by several keys): 'group' or 'config.<key>' each; 400 naming
    any other key, or more than chart_groups.MAX_GROUP_BY."""
    try:
        return check_group_keys(request.args.getlist("group"))
    except GroupKeyError as exc:
        abort(400, description=str(exc))


def chart_context(project: str, ids: list[str]) -> dict:
    """What templates/_chart_grid.html needs to chart these runs (static/charts.js draws them):
    the Charts page's and the run page's Charts tab's. Also 'found', the catalog rows."""
    rows = run_rows(project, ids)
    missing = [r for r in ids if r not in rows]
    found = [rows[r] for r in ids if r in rows]
    names, ranks = _scalar_names(project, [r["id"] for r in found])
    prefixes = own_prefixes(project, [r["run_id"] for r in found])
    system = prefixes["system"]
    x = x_axis_arg()
    configs = run_reads.config_rows(catalogs().get(project), [r["id"] for r in found])
    colours = project_colours(project)
    grouped = _group_keys()
    return {"project": project, "found": found,
            "runs": [{"id": r["run_id"], "name": r["name"], "label": _label(r), "status": r["status"],
                      "colour": colours.run(r["run_id"])} for r in found],
            "missing": missing, "groups": group_names(names, system, prefixes["timing"]),
            "system": system, "ranks": ranks or [0], "group": (grouped + [""])[0],
            "group_then": (grouped + ["", ""])[1],
            "group_keys": group_keys([r["group_name"] for r in found],
                                     [configs[r["id"]] for r in found]),
            "rank": request.args.get("rank", "0"), "x": x, "newest": False,
            "x_scalars": [n for n in names if not n.startswith(f"{system}/")],
            "live": any(r["status"] == "running" for r in found)}


@charts.get("/p/<project:project>/.charts")
@charts.get("/api/p/<project:project>/.charts", endpoint="page_json")
def page(project: str):
    ids = chosen_runs(project)
    newest = not ids
    if newest:
        ids = _newest_runs(project)
    context = chart_context(project, ids)
    context["newest"] = newest
    found, rank = context.pop("found"), context["rank"]
    context.update(media_context(project, context["runs"], int(rank) if rank.isdigit() else 0))
    if wants_json():
        return {**context, "groups": [{"group": g, "names": n} for g, n in context["groups"]]}
    if (rank == "all" or rank.isdigit()) and not any(r["status"] == "running" for r in found):
        first = [n for _, group in context["groups"] for n in group][:PREFETCH_CHARTS]
        prefetch_charts(project, found, context["x"], rank, first)
    return render_template("charts.html", **context)


PREFETCH_CHARTS = 3


def prefetch_charts(project: str, found: list[dict], x: str, rank: str, names: list[str]) -> None:
    """Compute the first charts' series on a thread while the browser loads the page's scripts,
    as their first data requests will ask (all runs, no zoom, DEFAULT_BUCKETS): the request
    then takes the result (chart_prefetch). A browser with other settings asks for other
    keys, and those requests do their own work, as without a prefetch."""
    ids = [r["run_id"] for r in found]
    rows = {r["run_id"]: r for r in found}
    cache, root, colours = series_cache(), root_dir(), project_colours(project)
    run_in_background(prefetch(), [
        ((project, name, tuple(ids), x, rank, DEFAULT_BUCKETS),
         lambda name=name: chart_series(cache, root, project, rows, ids, name, x=x, rank_arg=rank,
                                        lo=None, hi=None, buckets=DEFAULT_BUCKETS,
                                        colours=colours))
        for name in names])


def x_axis_arg() -> str:
    """?x: one of X_AXES or scalar:NAME (another logged scalar, chart_xscalar); 400 if not."""
    x = request.args.get("x", "step")
    if x not in X_AXES and x_scalar(x) is None:
        abort(400, description=f"x {x[:60]!r} is not an axis: use one of {', '.join(X_AXES)} "
                               "or scalar:NAME (a logged scalar, such as scalar:tokens).")
    problem = check_x_scalar(x)
    if problem:
        abort(400, description=problem + ".")
    return x


MAX_NAMES = 10


def chart_names() -> list[str]:
    """?name, once per scalar the chart draws (1 to MAX_NAMES, each distinct); 400 if not."""
    names = list(dict.fromkeys(request.args.getlist("name")))
    if not names or any(not n or len(n) > 1000 for n in names):
        abort(400, description="name: give the scalar's name, such as train/loss.")
    if len(names) > MAX_NAMES:
        abort(400, description=f"name is given {len(names)} times: a chart draws at most "
                               f"{MAX_NAMES} scalars.")
    return names


def number_arg(name: str) -> float | None:
    text = request.args.get(name)
    if text in (None, ""):
        return None
    try:
        value = float(text)
    except ValueError:
        abort(400, description=f"{name}={text!r} is not a number.")
    if not math.isfinite(value):
        abort(400, description=f"{name}={text!r} is not a finite number.")
    return value


def chart_series(cache, root, project: str, rows: dict, ids: list[str], name: str, *, x: str,
                 rank_arg: str, lo: float | None, hi: float | None, buckets: int,
                 colours) -> list[dict]:
    """The data endpoint's 'series' for one scalar of these runs (rows: run_rows's), each
    run's points downsampled; no Flask in here, so the page's prefetch thread runs it too."""
    out = []
    for run_id, row, folder, rank, live in run_ranks(root, project, rows, ids, rank_arg):
        payload = series_payload(cache, folder, rank, name, x=x, lo=lo, hi=hi,
                                 buckets=buckets, live=live)
        if payload is None or not payload.get("total"):
            continue
        label = _label(row) + (f" r{rank}" if rank_arg == "all" else "")
        out.append({"run": run_id, "run_name": row["name"], "rank": rank, "label": label,
                    "colour": colours.rank(run_id, rank), "live": live, **payload})
    return out


def run_ranks(root, project: str, rows: dict, ids: list[str], rank_arg: str):
    """(run id, its row, its folder, rank, live) for each run of ids that rows holds, in that
    order, and each rank asked: rank_arg a number, or 'all' (every rank that logged, else 0)."""
    for run_id in ids:
        row = rows.get(run_id)
        if row is None:
            continue
        folder = layout.run_dir(root, project, run_id)
        ranks = (layout.list_ranks(folder) or [0]) if rank_arg == "all" else [int(rank_arg)]
        for rank in ranks:
            yield run_id, row, folder, rank, row["status"] == "running"


@charts.get("/api/p/<project:project>/.chart")
def data(project: str):
    """One scalar (or several: ?name given up to MAX_NAMES times) of several runs: {'name',
    'names', 'x', 'range', 'series': [{run, rank, label, colour, scalar, x, y, ...}]}; with
    ?group=KEY, 'series' is empty and 'groups' holds one line per group and scalar. ?x is a
    kind of X_AXES or scalar:NAME, another logged scalar paired by step (chart_xscalar).
    'range' is the [lo, hi] the data was cut for, in the axis's own units (steps, epoch
    seconds, or seconds on the relative axes; either may be null), or null for the whole run.
    Bad input answers 4xx and a catalog that cannot be read 503, each as {'error': message}
    (app.py's handlers: the path is under /api/)."""
    names = chart_names()
    ids = chosen_runs(project)
    x = x_axis_arg()
    rank_arg = request.args.get("rank", "0")
    lo, hi = number_arg("lo"), number_arg("hi")
    if lo is not None and hi is not None and lo > hi:
        abort(400, description=f"lo={lo!r} is above hi={hi!r}: give lo <= hi.")
    try:
        buckets = int(request.args.get("buckets", str(DEFAULT_BUCKETS)))
    except ValueError:
        abort(400, description="buckets must be a whole number.")
    buckets = max(10, min(buckets, MAX_BUCKETS))
    group = _group_keys()
    if rank_arg != "all" and not rank_arg.isdigit():
        abort(400, description=f"rank {rank_arg!r}: give a number or 'all'.")
    rows = run_rows(project, ids)
    per_name = [_one_scalar(project, rows, ids, name, x=x, rank_arg=rank_arg, lo=lo, hi=hi,
                            buckets=buckets) for name in names]
    body = {"name": names[0], "names": names, "x": x, "rank": rank_arg, "lo": lo, "hi": hi,
            "range": None if lo is None and hi is None else [lo, hi],
            "series": _named(per_name, names),
            "live": any(rows[r]["status"] == "running" for r in ids if r in rows),
            "status": {r: rows[r]["status"] for r in ids if r in rows}}
    if group:
        runs_groups = _groups_of(project, group, list(rows.values()))
        body.update(series=[], grouped_by=group, groups=_named(
            [group_lines(out, runs_groups, buckets) for out in per_name], names))
    return body


def _one_scalar(project: str, rows: dict, ids: list[str], name: str, *, x: str, rank_arg: str,
                lo: float | None, hi: float | None, buckets: int) -> list[dict]:
    """chart_series for one scalar, taken from the page's prefetch when it computed it."""
    key = (project, name, tuple(ids), x, rank_arg, buckets)
    out = prefetch().take(key) if lo is None and hi is None else None
    if out is None:
        out = chart_series(series_cache(), root_dir(), project, rows, ids, name, x=x,
                           rank_arg=rank_arg, lo=lo, hi=hi, buckets=buckets,
                           colours=project_colours(project))
    return out


def _named(lines: list[list[dict]], names: list[str]) -> list[dict]:
    """The lines of each scalar, in one list, each with its 'scalar'; with several scalars
    on the chart, each label ends with its scalar's name."""
    out = []
    for name, group in zip(names, lines):
        for line in group:
            line["scalar"] = name
            if len(names) > 1:
                line["label"] = f"{line['label']} · {name}"
            out.append(line)
    return out


def _groups_of(project: str, keys: list[str], rows: list[dict]) -> dict[str, tuple]:
    """Each run's (value, label) under the group keys (chart_groups.group_of, combined_group)."""
    cells: dict[int, dict] = {}
    config = [key.split(".", 1)[1] for key in keys if key != "group"]
    if config:
        cells = run_reads.config_cells(catalogs().get(project), [r["id"] for r in rows], config)
    return {r["run_id"]: combined_group([group_of(key, r["group_name"], cells.get(r["id"], {}))
                                         for key in keys]) for r in rows}
