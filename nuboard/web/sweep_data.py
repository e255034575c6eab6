"""Runs of a sweep as data for the Scatter and parallel-coordinates views: each run's id, name,
colour, status and the values of chosen fields.

A field is `config.<key>` (a flattened config key, as the Runs table names its columns) or
`<scalar>.last`, `.min` or `.max` (rank 0's summary). A field is numeric when every value the
runs hold is a number (int or float config values, summaries); otherwise categorical, each value
as text (a bool as 'true'/'false', a number as written) and its categories in sorted order.
Runs are a query's (`?q=`, as the Runs table takes it) or those named by id (`?runs=`), at most
LIMIT, the newest.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from nuboard.catalog import sweep_reads
from nuboard.files.records import display_status

LIMIT = 5000
SUMMARIES = ("last", "min", "max")


class FieldError(ValueError):
    """A field the sweep views cannot show (the message names the value and the rule)."""


class Field(NamedTuple):
    """A parsed field: kind 'config' (name = key) or a summary 'last'/'min'/'max' (name =
    scalar)."""
    text: str
    kind: str
    name: str


def parse_field(text: str) -> Field:
    """`config.<key>` or `<scalar>.last|min|max` as a Field.

    Raises:
        FieldError: anything else.
    """
    if text.startswith("config.") and len(text) > len("config."):
        return Field(text, "config", text[len("config."):])
    name, dot, kind = text.rpartition(".")
    if dot and name and kind in SUMMARIES:
        return Field(text, kind, name)
    raise FieldError(f"unknown field {text!r}: use config.<key> or <scalar>.last, "
                     "<scalar>.min or <scalar>.max")


def field_choices(choices: dict[str, list[str]]) -> list[str]:
    """Every field the catalog offers (column_choices: config keys and scalar names), config
    keys first, then each scalar's last, min and max."""
    return ([f"config.{k}" for k in choices["config"]]
            + [f"{n}.{kind}" for n in choices["scalar"] for kind in SUMMARIES])


def check_fields(fields: list[str], choices: dict[str, list[str]]) -> list[Field]:
    """The fields parsed, each one the project has (a config key or scalar some run logged).

    Raises:
        FieldError: a field that does not parse, or one no run of the project holds.
    """
    out = []
    for text in fields:
        field = parse_field(text)
        known = choices["config"] if field.kind == "config" else choices["scalar"]
        if field.name not in known:
            what = "config key" if field.kind == "config" else "scalar"
            raise FieldError(f"unknown field {text!r}: no run of this project has the {what} "
                             f"{field.name!r}; choose one of the fields listed")
        out.append(field)
    return out


def cell_value(field: Field, row: dict):
    """The run's value of a field: a float, a str (categorical), or None (missing, null, NaN)."""
    if field.kind != "config":
        value = row["scalars"].get(field.name, {}).get(field.kind)
        return value if value is not None and math.isfinite(value) else None
    cell = row["config"].get(field.name)
    if cell is None or cell["type"] == "null":
        return None
    if cell["type"] in ("int", "float"):
        num = cell["value_num"]
        return num if num is not None and math.isfinite(num) else None
    return cell["value_text"]


def describe(values: list) -> dict:
    """A field's kind over the runs' values: {'kind': 'numeric'} when every present value is a
    number, else {'kind': 'categorical', 'categories': sorted texts}."""
    present = [v for v in values if v is not None]
    if all(isinstance(v, float) for v in present):
        return {"kind": "numeric"}
    return {"kind": "categorical",
            "categories": sorted({v if isinstance(v, str) else number_text(v) for v in present})}


def number_text(value: float) -> str:
    """A number as a category's text: whole numbers without '.0' (as run.json wrote them)."""
    return str(int(value)) if value.is_integer() else repr(value)


def sweep(catalog, *, fields: list[Field], query: str = "", run_ids: list[str] | None = None,
          now: float, colours, limit: int = LIMIT) -> dict:
    """The runs and their values of these fields.

    Returns:
        {'total', 'shown', 'capped', 'fields': {text: {'kind', 'categories'?}},
         'runs': [{'id', 'name', 'colour', 'status', 'values': {text: value}}]}, runs newest
        first; a categorical field's values are texts.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    keys = sorted({f.name for f in fields if f.kind == "config"})
    names = sorted({f.name for f in fields if f.kind != "config"})
    total, rows = sweep_reads.sweep_rows(catalog, query=query, run_ids=run_ids, now=now,
                                         config_keys=keys, scalar_names=names, limit=limit)
    columns = {f.text: [cell_value(f, row) for row in rows] for f in fields}
    kinds = {text: describe(values) for text, values in columns.items()}
    for text, info in kinds.items():
        if info["kind"] == "categorical":
            columns[text] = [v if v is None or isinstance(v, str) else number_text(v)
                             for v in columns[text]]
    out = []
    for i, row in enumerate(rows):
        out.append({"id": row["run_id"], "name": row["name"], "colour": colours.run(row["run_id"]),
                    "status": display_status(row["status"], row["heartbeat_mtime"], now,
                                             row["lost_after"]),
                    "values": {text: columns[text][i] for text in columns}})
    return {"total": total, "shown": len(out), "capped": total > len(out), "fields": kinds,
            "runs": out}
