"""The Scatter page: one config value or summary metric against another, one point per run in
its colour, log axes, a least-squares trend line where both are numeric; and its JSON twin.

The URL carries the view: `?q=` (or `?runs=<id>,...`), `x` and `y` (fields of
web/sweep_data.py), `logx=1`, `logy=1`. Without x or y: the first config key whose values
differ between runs and the first scalar's last (the Runs table's default columns). The page
carries its points as JSON (a `type="application/json"` script element) and static/scatter.js
draws them with uPlot.
"""
from __future__ import annotations

import math
from urllib.parse import quote

from flask import Blueprint, render_template, request, url_for

from . import runs_table, sweep_data
from .context import catalogs, load_project, wants_json
from .sweep_page import SweepError, check_run_count, field_choices, run_ids_arg, sweep_of, warnings_of

scatter = Blueprint("scatter", __name__)
scatter.url_value_preprocessor(load_project)


def default_fields(project: str, choices: list[str]) -> tuple[str | None, str | None]:
    """x: the first config key of the Runs table's default columns; y: its first scalar's
    last (each falling back on the first field offered)."""
    columns = catalogs().remember(project, "default_columns", runs_table.default_columns)
    x = next((f"config.{c[7:]}" for c in columns if c.startswith("config:")), None)
    y = next((f"{c[7:]}.last" for c in columns if c.startswith("scalar:")), None)
    x = x or (choices[0] if choices else None)
    y = y or next((c for c in choices if c != x), x)
    return x, y


def scale(value, log: bool):
    """A numeric value on its axis: log10 on a log axis (None when not positive)."""
    if not log:
        return value
    return math.log10(value) if value > 0 else None


def trend(xs: list[float], ys: list[float]) -> dict | None:
    """Least squares y = slope * x + intercept over the drawn (axis-space) points; None when
    fewer than two distinct x."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return {"slope": slope, "intercept": my - slope * mx, "space": None}


def points(data: dict, x: str, y: str, logx: bool, logy: bool) -> dict:
    """The points drawn from sweep data: each run with both values (a categorical value as its
    category's index), those left out counted: 'missing' (no x or no y) and 'not_positive'
    (zero or less on a log axis); the trend line when both fields are numeric."""
    kinds = data["fields"]
    logs = {x: logx and kinds[x]["kind"] == "numeric", y: logy and kinds[y]["kind"] == "numeric"}
    index = {f: {c: i for i, c in enumerate(kinds[f].get("categories", []))} for f in (x, y)}
    drawn, missing, not_positive = [], 0, 0
    for run in data["runs"]:
        vx, vy = run["values"][x], run["values"][y]
        if vx is None or vy is None:
            missing += 1
            continue
        if (logs[x] and vx <= 0) or (logs[y] and vy <= 0):
            not_positive += 1
            continue
        drawn.append({"id": run["id"], "name": run["name"], "colour": run["colour"],
                      "status": run["status"],
                      "x": index[x][vx] if isinstance(vx, str) else vx,
                      "y": index[y][vy] if isinstance(vy, str) else vy})
    line = None
    if kinds[x]["kind"] == "numeric" and kinds[y]["kind"] == "numeric":
        line = trend([scale(p["x"], logs[x]) for p in drawn], [scale(p["y"], logs[y]) for p in drawn])
        if line is not None:
            line["space"] = {"x": "log10" if logs[x] else "linear",
                             "y": "log10" if logs[y] else "linear"}
    axes = {axis: {"field": f, "kind": kinds[f]["kind"], "log": logs[f],
                   **({"categories": kinds[f]["categories"]}
                      if kinds[f]["kind"] == "categorical" else {})}
            for axis, f in (("x", x), ("y", y))}
    return {"axes": axes, "points": drawn, "left_out": {"missing": missing,
                                                        "not_positive": not_positive},
            "trend": line}


def scatter_data(project: str, settings: dict) -> dict:
    """What the page draws for these settings (x and y filled in when missing).

    Raises:
        SweepError: an unknown field, too many run ids, or a query that does not parse.
    """
    choices, fields = field_choices(project)
    check_run_count(settings["runs"])
    if not settings["x"] or not settings["y"]:
        dx, dy = default_fields(project, fields)
        settings["x"] = settings["x"] or dx or ""
        settings["y"] = settings["y"] or dy or ""
    if not settings["x"] or not settings["y"]:         # no config value or scalar logged yet
        data = sweep_of(project, settings, [])
        drawn = {"axes": None, "points": [], "trend": None,
                 "left_out": {"missing": data["shown"], "not_positive": 0}}
    else:
        try:
            checked = sweep_data.check_fields(list(dict.fromkeys((settings["x"],
                                                                  settings["y"]))), choices)
        except sweep_data.FieldError as exc:
            raise SweepError(str(exc)) from exc
        data = sweep_of(project, settings, checked)
        drawn = points(data, settings["x"], settings["y"], settings["logx"], settings["logy"])
    stem = url_for("run.details", project=project, run_id="_")[:-1]   # one url_for, not 2,000
    for point in drawn["points"]:
        point["url"] = stem + quote(point["id"], safe="")
    return {"total": data["total"], "shown": data["shown"], "capped": data["capped"], **drawn}


@scatter.get("/p/<project:project>/.scatter")
@scatter.get("/api/p/<project:project>/.scatter", endpoint="page_json")
def page(project: str):
    args = request.args
    settings = {"q": args.get("q", ""), "runs": run_ids_arg(), "x": args.get("x", ""),
                "y": args.get("y", ""), "logx": args.get("logx") == "1",
                "logy": args.get("logy") == "1"}
    try:
        data, error = scatter_data(project, settings), None
    except SweepError as exc:
        data, error = None, str(exc)
    warnings = warnings_of(project, settings["q"])
    public = {"project": project, "query": settings["q"], "runs": settings["runs"],
              "x": settings["x"], "y": settings["y"], "logx": settings["logx"],
              "logy": settings["logy"]}
    if wants_json():
        if error is not None:
            return {"error": error, **public, "status": 400}, 400
        return {**public, "warnings": warnings, "fields": field_choices(project)[1], **data}
    status = 400 if error is not None else 200
    return render_template("scatter.html", settings=public, data=data, error=error,
                           warnings=warnings, project=project,
                           fields=field_choices(project)[1]), status
