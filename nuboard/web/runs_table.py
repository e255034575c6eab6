"""The Runs table as data: which runs match, in what order, one page of them, with columns.

Columns are named `name`, `status`, `start`, `duration`, `tags`, `group`, `host`, `id`,
`config:<key>` (a flattened config value) and `scalar:<name>`, `min:<name>`, `max:<name>`
(rank 0's last, smallest and largest value of a scalar). When none are chosen the table shows
results (default_columns). Each config:/scalar: column is written in one number format
(format_column). Sorting and paging run in SQLite, so a page of a 10,000-run project reads
10,000 index entries at most and 100 rows.
"""
from __future__ import annotations

import json
import math
from typing import Any

from nuboard.catalog import run_reads
from nuboard.files.names import RESERVED_DEFAULTS
from nuboard.files.records import run_record

from .run_colours import run_colour

BASE_COLUMNS = ("status", "name", "id", "start", "duration", "tags", "group", "host")
DEFAULT_CONFIG_KEYS = 6          # config columns shown when none are chosen
DEFAULT_SCALARS = 4              # scalar columns shown when none are chosen
SIGNIFICANT = 4                  # digits of a number cell
PER_PAGE = 100
MAX_PER_PAGE = 500
MAX_COLUMNS = 40
SUMMARIES = {"scalar": "last", "min": "min", "max": "max"}


class TableError(ValueError):
    """A column or sort key the table does not know (shown under the query box)."""


def check_columns(columns: list[str]) -> list[str]:
    """Columns as asked, checked: known base names, or config:, scalar:, min:, max: and a key."""
    out = []
    for col in columns[:MAX_COLUMNS]:
        col = col.strip()
        if not col or col in out:
            continue
        kind, sep, key = col.partition(":")
        if col in BASE_COLUMNS or (sep and (kind == "config" or kind in SUMMARIES) and key):
            out.append(col)
        else:
            raise TableError(f"unknown column {col!r}: use one of {', '.join(BASE_COLUMNS)}, "
                             "config:<key>, or scalar:<name> (min:<name>, max:<name>)")
    return out


def default_columns(catalog) -> list[str]:
    """The columns of a table nobody configured: status, name, the config keys whose values
    differ between the project's runs (up to 6, in key order), the last value of the scalars
    most runs logged (up to 4; timing/ and system/ ones only when too few others), start and
    duration."""
    keys = sorted(run_reads.differing_config_keys(catalog, DEFAULT_CONFIG_KEYS))
    names = run_reads.shared_scalar_names(catalog, DEFAULT_SCALARS, last=RESERVED_DEFAULTS)
    late = tuple(prefix + "/" for prefix in RESERVED_DEFAULTS)
    names.sort(key=lambda n: (n.startswith(late), n))
    return (["status", "name"] + [f"config:{k}" for k in keys] + [f"scalar:{n}" for n in names]
            + ["start", "duration"])


def table_page(catalog, *, query: str = "", sort: str = "start", desc: bool = True,
               page: int = 1, per_page: int = PER_PAGE, columns: list[str] | None = None,
               defaults: list[str] | None = None, now: float) -> dict:
    """One page of the project's runs: {'total', 'page', 'pages', 'runs': [record...]}.

    columns: the chosen columns; none chosen: `defaults`, else default_columns(catalog).
    Each record has 'values' (the config:/scalar: cells as numbers), 'cells' (the same as the
    page writes them, one format per column) and 'colour' (the run's, as on every page);
    'numeric' lists the columns whose cells are all numbers (right-aligned).

    Raises:
        QuerySyntaxError: the query does not parse.
        TableError: an unknown column or sort key.
    """
    chosen = bool(columns)
    columns = check_columns(list(columns or defaults or default_columns(catalog)))
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    try:
        found = run_reads.runs_page(catalog, query, now=now, sort=sort, desc=desc, page=page,
                                    per_page=per_page)
    except run_reads.SortKeyError as exc:
        raise TableError(str(exc)) from None
    ids = [r["id"] for r in found.rows]
    by_tags = run_reads.tags_by_run(catalog, ids)
    values = _column_values(catalog, ids, columns)
    records = []
    for row in found.rows:
        record = run_record(row, by_tags[row["id"]], catalog.project, now)
        record["values"] = values[row["id"]]
        record["world_size"] = row.get("world_size")
        record["parent"] = row.get("parent_run_id")
        record["colour"] = run_colour(row["run_id"])
        records.append(record)
    numeric = format_cells(records, [c for c in columns if ":" in c])
    return {"total": found.total, "page": found.page, "pages": found.pages, "per_page": per_page,
            "columns": columns, "chosen": chosen, "numeric": numeric, "sort": sort,
            "desc": desc, "runs": records}


def format_cells(records: list[dict], columns: list[str]) -> list[str]:
    """Write each record's 'cells' from its 'values', one number format per column; return the
    columns whose filled cells are all numbers."""
    numeric = []
    for record in records:
        record["cells"] = {}
        record.setdefault("values", {})
    for col in columns:
        column = [r["values"].get(col) for r in records]
        texts = format_column(column)
        for record, text in zip(records, texts):
            record["cells"][col] = text
        filled = [v for v in column if v is not None]
        if filled and all(_is_number(v) for v in filled):
            numeric.append(col)
    return numeric


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_column(values: list[Any]) -> list[str]:
    """The cells of one column as text, every number in the same style.

    Integers (and whole floats under a million) stay whole numbers. Other columns get one
    count of decimals, the one that gives the column's middle value four significant digits,
    so the decimal points line up; when a value is below 0.001 or at or above a million, or
    would then keep fewer than two digits or show more than seven, every number of the column
    is in exponent form instead (3.125e-4, 1.200e-5). Trailing zeros that every cell of the
    column has are dropped (0.001, 0.003 rather than 0.001000, 0.003000). Missing cells are
    empty; text, booleans and lists are written as they are.
    """
    numbers = [v for v in values if _is_number(v) and math.isfinite(v)]
    if all(isinstance(v, int) or (v.is_integer() and abs(v) < 1e6) for v in numbers):
        style = _whole
    else:
        exponents = sorted(math.floor(math.log10(abs(v))) for v in numbers if v != 0) or [0]
        top, low, middle = exponents[-1], exponents[0], exponents[len(exponents) // 2]
        decimals = max(0, SIGNIFICANT - 1 - middle)
        if low < -3 or top >= 6 or low + decimals < 1 or top + decimals >= 7:
            style = _exponent
        else:
            def style(v: float) -> str:
                return f"{v:.{decimals}f}"
    texts = [style(v) if _is_number(v) and math.isfinite(v) else _text(v) for v in values]
    return _drop_common_zeros(texts, [_is_number(v) and math.isfinite(v) for v in values])


def _whole(value: float) -> str:
    return str(int(value))


def _exponent(value: float) -> str:
    """3.125e-4: four significant digits and a plain exponent; zero is 0."""
    if value == 0:
        return "0"
    mantissa, _, power = f"{value:.{SIGNIFICANT - 1}e}".partition("e")
    return f"{mantissa}e{int(power)}"


def _drop_common_zeros(texts: list[str], numbers: list[bool]) -> list[str]:
    """Drop the trailing zeros of the decimals that every number of the column ends with."""
    parts = [t.partition("e") if n and "." in t else None for t, n in zip(texts, numbers)]
    decimals = [p[0].partition(".")[2] for p in parts if p is not None]
    if not decimals:
        return texts
    keep = max(len(d.rstrip("0")) for d in decimals)
    out = []
    for text, part in zip(texts, parts):
        if part is None:
            out.append(text)
            continue
        whole, _, frac = part[0].partition(".")
        head = f"{whole}.{frac[:keep]}" if keep else whole
        out.append(head + (part[1] + part[2]))
    return out


def _text(value: Any) -> str:
    """A cell that is not a finite number: empty when missing, true/false, JSON for lists."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _column_values(catalog, ids: list[int], columns: list[str]) -> dict[int, dict[str, Any]]:
    """The config: and scalar:/min:/max: cells of these runs, by row id then column name."""
    values: dict[int, dict[str, Any]] = {i: {} for i in ids}
    if not ids:
        return values
    keys = [c.split(":", 1)[1] for c in columns if c.startswith("config:")]
    for run, cells in run_reads.config_cells(catalog, ids, keys).items():
        for key, c in cells.items():
            values[run]["config:" + key] = config_value(c["type"], c["value_num"],
                                                        c["value_text"])
    wanted = [c.partition(":") for c in columns]
    names = sorted({key for kind, _, key in wanted if kind in SUMMARIES})
    kinds = {kind for kind, _, _ in wanted if kind in SUMMARIES}
    for run, found in run_reads.scalar_summaries(catalog, ids, names).items():
        for name, summary in found.items():
            for kind in kinds:
                values[run][f"{kind}:{name}"] = summary[SUMMARIES[kind]]
    return values


def config_value(kind: str, num: float | None, text: str | None) -> Any:
    """A config cell as its value: ints as ints, bools as bools, JSON texts parsed."""
    if kind == "int" and num is not None:
        return int(num)
    if kind == "bool" and num is not None:
        return bool(num)
    if kind == "float":
        return num if num is not None else text
    if kind == "str":
        return text
    if kind == "null":
        return None
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return text


def available_columns(catalog) -> dict[str, list[str]]:
    """Config keys and rank-0 scalar names present in the project, for the column chooser."""
    return run_reads.column_choices(catalog)


def running_count(catalog) -> int:
    """How many of the project's runs the catalog holds as running."""
    return run_reads.running_count(catalog)
