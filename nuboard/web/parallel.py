"""The parallel-coordinates page: one vertical axis per chosen field (config keys, summary
metrics), one polyline per run, coloured by run colour or by a field through a two-colour ramp;
brushed ranges on the axes pick the runs inside; and its JSON twin.

The URL carries the view: `?q=` (or `?runs=<id>,...`), `axes=<field>,...` (fields of
web/sweep_data.py), `log=<field>,...` (a numeric axis drawn on a log scale when every value is
above zero), `colour=run|<field>` and `brush=<field>:<lo>:<hi>,...` (a numeric axis: values;
a categorical one: positions of its categories, 0 the first). A run is inside when its value on
every brushed axis lies in the range (a run without a value there is outside). Without axes:
up to 4 config keys whose values differ, then the first 2 scalars' last (the Runs table's
default columns). static/parallel.js draws the page's JSON on one canvas.
"""
from __future__ import annotations

import math
from urllib.parse import quote

from flask import Blueprint, render_template, request, url_for

from . import runs_table, sweep_data
from .context import catalogs, load_project, wants_json
from .sweep_page import SweepError, check_run_count, field_choices, run_ids_arg, sweep_of, warnings_of

parallel = Blueprint("parallel", __name__)
parallel.url_value_preprocessor(load_project)

MAX_AXES = 12
CHART_RUNS = 50                                  # the Charts link names at most this many runs
RAMP = ("#2c7bb6", "#d7191c")                    # low, high of a colour=<field> ramp
NO_VALUE = "#9ca3af"                             # a run without the colour field's value


def split_list(text: str) -> list[str]:
    """A comma-separated URL value as its non-empty parts, in order, each once."""
    return list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))


def default_axes(project: str, fields: list[str]) -> list[str]:
    """Up to 4 config keys of the Runs table's default columns (those whose values differ),
    then its first 2 scalars' last; the first fields offered when it has none."""
    columns = catalogs().remember(project, "default_columns", runs_table.default_columns)
    keys = [f"config.{c[7:]}" for c in columns if c.startswith("config:")][:4]
    names = [f"{c[7:]}.last" for c in columns if c.startswith("scalar:")][:2]
    return keys + names or fields[:4]


def parse_brush(text: str, axes: list[str]) -> dict[str, tuple[float, float]]:
    """`<field>:<lo>:<hi>,...` as {field: (lo, hi)}.

    Raises:
        SweepError: a part that is not field:lo:hi with numbers lo <= hi, or a field that
            is not one of the axes.
    """
    out = {}
    for part in split_list(text):
        field, lo, hi = part.rsplit(":", 2) if part.count(":") >= 2 else (part, "", "")
        try:
            low, high = float(lo), float(hi)
        except ValueError:
            raise SweepError(f"brush {part!r}: write <field>:<lo>:<hi> with two numbers, "
                                "e.g. config.lr:0.001:0.01") from None
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise SweepError(f"brush {part!r}: lo and hi must be finite numbers, lo <= hi")
        if field not in axes:
            raise SweepError(f"brush {part!r}: {field!r} is not one of the axes "
                                f"({', '.join(axes)})")
        out[field] = (low, high)
    return out


def axis_of(field: str, info: dict, values: list, log: bool) -> dict:
    """An axis: its kind ('numeric', 'log' or 'categorical') and range or categories. A log
    axis asked of a field with a value of zero or less (or a categorical one) stays as it is,
    with a note saying why."""
    if info["kind"] == "categorical":
        return {"field": field, "kind": "categorical", "categories": info["categories"],
                **({"note": "log asked of a categorical field: drawn by category"} if log else {})}
    present = [v for v in values if v is not None]
    rng = [min(present), max(present)] if present else None
    if log and present and min(present) <= 0:
        return {"field": field, "kind": "numeric", "range": rng,
                "note": "log asked, but a value is zero or less: drawn linear"}
    return {"field": field, "kind": "log" if log and present else "numeric", "range": rng}


def position(axis: dict, value) -> float | None:
    """A value in the axis's brush space: the number, or a category's position."""
    if value is None:
        return None
    if axis["kind"] == "categorical":
        return float(axis["categories"].index(value))
    return value


def ramp(fraction: float) -> str:
    """The colour at this fraction (0 to 1) of the way from RAMP's low to its high."""
    a, b = (tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in RAMP)
    return "#" + "".join(f"{round(x + (y - x) * fraction):02x}" for x, y in zip(a, b))


def colour_runs(runs: list[dict], axis: dict | None, field: str) -> dict:
    """Each run's colour by the field's value along RAMP (log10 on a log axis; a category by
    its position); NO_VALUE without one. Returns the legend: the field, its low and high."""
    positions = []
    for run in runs:
        p = position(axis, run["values"][field])
        if p is not None and axis["kind"] == "log":
            p = math.log10(p)
        positions.append(p)
    present = [p for p in positions if p is not None]
    lo, hi = (min(present), max(present)) if present else (0.0, 0.0)
    for run, p in zip(runs, positions):
        run["colour"] = NO_VALUE if p is None else ramp((p - lo) / (hi - lo) if hi > lo else 0.5)
    ends = ([axis["categories"][0], axis["categories"][-1]] if axis["kind"] == "categorical"
            and axis["categories"] else axis.get("range"))
    return {"by": field, "low": RAMP[0], "high": RAMP[1], "ends": ends, "none": NO_VALUE}


def parallel_data(project: str, settings: dict) -> dict:
    """What the page draws for these settings (axes filled in when none are given).

    Raises:
        SweepError: an unknown field, too many axes or run ids, a colour field that is not
            an axis nor a field, a bad brush, or a query that does not parse.
    """
    choices, fields = field_choices(project)
    check_run_count(settings["runs"])
    if not settings["axes"]:
        settings["axes"] = default_axes(project, fields)
    axes = settings["axes"]
    if len(axes) > MAX_AXES:
        raise SweepError(f"axes names {len(axes)} fields: at most {MAX_AXES}")
    colour = settings["colour"]
    wanted = axes + ([colour] if colour not in ("run", *axes) else [])
    try:
        checked = sweep_data.check_fields(wanted, choices)
    except sweep_data.FieldError as exc:
        raise SweepError(str(exc)) from exc
    brush = parse_brush(settings["brush"], axes)
    data = sweep_of(project, settings, checked)
    runs = data["runs"]
    drawn = {f: axis_of(f, data["fields"][f], [r["values"][f] for r in runs],
                        f in settings["log"]) for f in wanted}
    legend = colour_runs(runs, drawn[colour], colour) if colour != "run" else {"by": "run"}
    inside = []
    stem = url_for("run.details", project=project, run_id="_")[:-1]   # one url_for, not 2,000
    for run in runs:
        run["url"] = stem + quote(run["id"], safe="")
        run["values"] = {f: run["values"][f] for f in axes}
        if all(p is not None and lo <= p <= hi for p, (lo, hi) in
               ((position(drawn[f], run["values"][f]), rng) for f, rng in brush.items())):
            inside.append(run["id"])
    return {"total": data["total"], "shown": data["shown"], "capped": data["capped"],
            "axes": [drawn[f] for f in axes], "colour": legend,
            "brush": [{"field": f, "lo": lo, "hi": hi} for f, (lo, hi) in brush.items()],
            "runs": runs, "inside": inside}


def links(project: str, settings: dict, inside: list[str]) -> dict:
    """The Charts page of the runs inside (at most CHART_RUNS) and the Runs page of the query
    (whose selection static/parallel.js sets to the runs inside)."""
    charts = url_for("charts.page", project=project)
    return {"charts": charts + ("?runs=" + quote(",".join(inside[:CHART_RUNS]), safe=",")
                                if inside else ""),
            "charts_base": charts, "chart_runs": CHART_RUNS,
            "runs_table": url_for("runs.runs", project=project,
                                  **({"q": settings["q"]} if settings["q"] else {}))}


@parallel.get("/p/<project:project>/.parallel")
@parallel.get("/api/p/<project:project>/.parallel", endpoint="page_json")
def page(project: str):
    args = request.args
    settings = {"q": args.get("q", ""), "runs": run_ids_arg(),
                "axes": split_list(args.get("axes", "")), "log": split_list(args.get("log", "")),
                "colour": args.get("colour", "").strip() or "run",
                "brush": args.get("brush", "")}
    try:
        data, error = parallel_data(project, settings), None
    except SweepError as exc:
        data, error = None, str(exc)
    warnings = warnings_of(project, settings["q"])
    public = {"project": project, "query": settings["q"], "runs_given": settings["runs"],
              "axes_given": settings["axes"], "log": settings["log"],
              "colour_by": settings["colour"], "brush_given": settings["brush"]}
    fields = field_choices(project)[1]
    if wants_json():
        if error is not None:
            return {"error": error, **public, "status": 400}, 400
        return {**public, "warnings": warnings, "fields": fields, **data,
                "links": links(project, settings, data["inside"])}
    status = 400 if error is not None else 200
    return render_template("parallel.html", settings=public, data=data, error=error,
                           warnings=warnings, project=project, fields=fields,
                           links=links(project, settings, data["inside"]) if data else None), \
        status
