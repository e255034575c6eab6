"""Grouping on the Charts page: the keys runs can be grouped by (one, or several: the groups of
their combined values), each run's group, and one line per group for the chart data endpoint:
the mean and the median of its runs, their min and max, sample standard deviation and count,
so the page draws the centre (mean or median) and the band (min-max, standard deviation or
standard error) a user picks without asking again.

No Flask here: charts.py reads the catalog and the series and passes plain dicts in.
A group line is computed from the series the endpoint would send for each run (already
downsampled): they are put on one x grid shared by every group of the chart (each distinct x
when there are at most `buckets` of them and no series holds more points, else `buckets` equal
bins over the x range, each at its middle), each run contributes the mean of its points in a
bin, and the group's figures are taken over the runs with a value there (the median exactly,
from the runs' values; the standard deviation with n - 1, None for one run).
"""
from __future__ import annotations

import itertools
import json
import math
import re
import statistics

import pyarrow as pa
import pyarrow.compute as pc

from nuboard.catalog.sync import config_value

from .number_text import cell_text
from .run_colours import group_colours

NONE_LABEL = "(none)"
MAX_GROUP_KEYS = 50
MAX_GROUP_BY = 3             # keys a chart may be grouped by at once
JOIN = " · "                 # between the values of several keys in a group's label
GROUP = "group"
CONFIG = "config."
_DOTTED = re.compile(r"[^.]+(\.[^.]+)*")


class GroupKeyError(ValueError):
    """A ?group= key that is neither 'group' nor 'config.<key>' (the message names it)."""


def check_group_key(key: str) -> str:
    """The key as given ('' for none); GroupKeyError unless 'group' or 'config.<dotted key>'.
    The Runs table's spelling config:<key> is taken as config.<key>, so a key copied from one
    page works on the other."""
    if key in ("", GROUP):
        return key
    if key.startswith("config:"):
        key = CONFIG + key[len("config:"):]
    if key.startswith(CONFIG) and len(key) <= 1000 and _DOTTED.fullmatch(key[len(CONFIG):]):
        return key
    raise GroupKeyError(f"group {key!r} is not a key runs can be grouped by: "
                        "use 'group' or 'config.<key>', such as config.optimizer.lr.")


def check_group_keys(keys: list[str]) -> list[str]:
    """?group= given once or more (group by several keys): each checked, empties and repeats
    dropped; GroupKeyError for more than MAX_GROUP_BY."""
    out: list[str] = []
    for key in keys:
        key = check_group_key(key)
        if key and key not in out:
            out.append(key)
    if len(out) > MAX_GROUP_BY:
        raise GroupKeyError(f"{len(out)} group keys: group by at most {MAX_GROUP_BY} at once.")
    return out


def combined_group(parts: list[tuple]) -> tuple:
    """One group from the (value, label) of each key: the values as a list (one key: the value
    itself) and the labels joined; '(none)' only when the run has none of the keys."""
    if len(parts) == 1:
        return parts[0]
    if all(value is None and label == NONE_LABEL for value, label in parts):
        return None, NONE_LABEL
    return [value for value, _ in parts], JOIN.join(label for _, label in parts)


def group_keys(groups: list[str | None], configs: list[dict[str, dict]]) -> list[list[str]]:
    """The choices of ?group= for these runs, [value, label] each: ['group', 'group'] when a run
    has a group, then the config keys whose values differ between the runs, then the others
    (each in the order first met), at most MAX_GROUP_KEYS in all.

    groups: each run's group (None or '' when none); configs: each run's config cells by key
    ({'type', 'value_num', 'value_text'}, as run_reads.config_rows gives them).
    """
    out = [[GROUP, GROUP]] if any(groups) else []
    keys: dict[str, None] = {}
    for cells in configs:
        keys.update(dict.fromkeys(cells))
    differ, same = [], []
    for key in keys:
        values = {_cell_label(cells.get(key)) for cells in configs}
        (differ if len(values) > 1 else same).append(key)
    out += [[CONFIG + key, key] for key in differ + same]
    return out[:MAX_GROUP_KEYS]


def _cell_label(cell: dict | None) -> str | None:
    """A config cell as the text a group is labelled with (None when the run has no such key)."""
    if cell is None:
        return None
    if cell["value_text"] is None and cell["value_num"] is None:
        return cell["type"]
    return cell_text(config_value(cell["type"], cell["value_num"], cell["value_text"]))


def group_of(key: str, group_name: str | None, cells: dict[str, dict]) -> tuple:
    """A run's group under this key: (value, label); (None, '(none)') for a run without it.

    group_name: the run's group; cells: its config cells of this key (config_cells' shape).
    The value is the config value itself (a number, bool, str or null); the label its text.
    """
    if key == GROUP:
        return (group_name, group_name) if group_name else (None, NONE_LABEL)
    cell = cells.get(key[len(CONFIG):])
    if cell is None:
        return None, NONE_LABEL
    label = _cell_label(cell)
    if cell["type"] == "str":
        return cell["value_text"], label
    try:
        value = json.loads(cell["value_text"])
    except (TypeError, ValueError):
        return label, label
    if isinstance(value, float) and not math.isfinite(value):
        return label, label
    return value, label


def _group_order(group: dict) -> tuple:
    """Numbers (and bools) by value first, then the rest by label, '(none)' last; groups of
    several keys by each key's value in turn."""
    value = group["value"]
    if group["label"] == NONE_LABEL and value is None:
        return (2, 0.0, "")
    if isinstance(value, list):
        return (1, 0.0, "", tuple(_value_order(v) for v in value))
    return _value_order(value) + (group["label"],)


def _value_order(value) -> tuple:
    if isinstance(value, (int, float)):          # bools too, as 0 and 1
        return (0, float(value), "")
    return (1, 0.0, "" if value is None else str(value))


def group_lines(series: list[dict], groups: dict[str, tuple], buckets: int) -> list[dict]:
    """One line per group from the runs' series ({'run', 'x', 'y'}, as the endpoint sends them):
    [{'value', 'label', 'colour', 'runs', 'count', 'x', 'mean', 'median', 'min', 'max', 'std',
    'n'}], in order; at each x, n is how many of the group's runs have a value there.

    groups: each run's (value, label) (group_of); runs missing from it fall in '(none)'.
    'colour' is the group's: group_colours over every group of `groups` in this order, so
    groups differ and a group has one colour on every chart, whichever scalars it lacks;
    'runs' are the group's runs that have this scalar, 'count' how many; the figures are None
    at an x where none of them has a finite value (std also where only one has).
    """
    found: dict[str, dict] = {}
    for s in series:
        value, label = groups.get(s["run"], (None, NONE_LABEL))
        group = found.setdefault(label, {"value": value, "label": label, "runs": []})
        if s["run"] not in group["runs"]:
            group["runs"].append(s["run"])
    ordered = sorted(found.values(), key=_group_order)
    index = {g["label"]: i for i, g in enumerate(ordered)}
    lines = _aggregate(series, [index[groups.get(s["run"], (None, NONE_LABEL))[1]]
                                for s in series], buckets)
    every = {label: {"value": value, "label": label} for value, label in groups.values()}
    every.update({g["label"]: g for g in ordered})
    labels = [g["label"] for g in sorted(every.values(), key=_group_order)]
    colour = dict(zip(labels, group_colours(labels)))
    return [_line(group, colour[group["label"]], lines.get(i, _EMPTY_LINE))
            for i, group in enumerate(ordered)]


FIGURES = ("mean", "median", "min", "max", "std", "n")
_EMPTY_LINE: dict = {"x": [], **{name: [] for name in FIGURES}}


def _aggregate(series: list[dict], group_of_series: list[int], buckets: int) -> dict:
    """{group index: {"x", "mean", "median", "min", "max", "std", "n"}}: each series' mean per
    bin of the shared grid, then those figures per bin over the group's series (pyarrow's hash
    aggregation; the median from each bin's list of values)."""
    kept = [(s, g) for s, g in zip(series, group_of_series) if s["x"]]
    if not kept:
        return {}
    series, group_of_series = [s for s, _ in kept], [g for _, g in kept]
    xs = [pa.array(s["x"], pa.float64()) for s in series]
    sizes = [len(x) for x in xs]
    x = pa.concat_arrays(xs)
    table = pa.table({
        "g": _repeat(group_of_series, sizes), "member": _repeat(range(len(sizes)), sizes),
        "key": x, "y": pa.concat_arrays([pa.array(s["y"], pa.float64()) for s in series])})
    at = None
    if max(sizes) > buckets or len(pc.unique(x)) > buckets:      # equal bins over the range
        bounds = pc.min_max(x)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        width = (hi - lo) / buckets
        key = pc.min_element_wise(pc.cast(pc.floor(pc.divide(pc.subtract(x, lo), width)),
                                          pa.int64()), buckets - 1)
        table = table.set_column(2, "key", key)

        def at(k: int) -> float:
            return lo + (k + 0.5) * width
    per_run = table.group_by(["g", "member", "key"]).aggregate([("y", "mean")])
    per_bin = (per_run.group_by(["g", "key"])
               .aggregate([("y_mean", "mean"), ("y_mean", "min"), ("y_mean", "max"),
                           ("y_mean", "stddev", pc.VarianceOptions(ddof=1)), ("y_mean", "count"),
                           ("y_mean", "list")])
               .sort_by([("g", "ascending"), ("key", "ascending")]))
    cols = {name: per_bin.column(name).to_pylist()
            for name in ("g", "key", "y_mean_mean", "y_mean_min", "y_mean_max", "y_mean_stddev",
                         "y_mean_count", "y_mean_list")}
    out: dict[int, dict] = {}
    for i, g in enumerate(cols["g"]):
        line = out.setdefault(g, {"x": [], **{name: [] for name in FIGURES}})
        k = cols["key"][i]
        values = [v for v in cols["y_mean_list"][i] if v is not None and v == v]
        line["x"].append(float(k) if at is None else at(k))
        line["mean"].append(cols["y_mean_mean"][i])
        line["median"].append(statistics.median(values) if values else None)
        line["min"].append(cols["y_mean_min"][i])
        line["max"].append(cols["y_mean_max"][i])
        line["std"].append(cols["y_mean_stddev"][i])
        line["n"].append(cols["y_mean_count"][i])
    return out


def _repeat(values, sizes: list[int]) -> pa.Array:
    """Each value repeated its size's times, as one int32 array."""
    ends = pa.array(list(itertools.accumulate(sizes)), pa.int32())
    return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(ends, pa.array(values, pa.int32())))


def _line(group: dict, colour: str, line: dict) -> dict:
    return {"value": group["value"], "label": group["label"], "colour": colour,
            "runs": group["runs"], "count": len(group["runs"]), **line}
