"""Pure formatters for the command line: a run row to a record, cells, text, CSV and JSON.

Nothing here touches the disk, the catalog or the terminal, so each function tests alone.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
from typing import Any, Iterable, Mapping, Sequence

from nuboard.files.csv_cells import escape_formula
from nuboard.files.records import (  # noqa: F401  (display_status, run_record: used as formats.*)
    display_status,
    format_duration,
    format_local_time,
    parse_time,
    run_duration,
    run_record,
)

# What `nuboard ls` shows, in order; a record (run_record) has these keys and a few more.
RUN_FIELDS = ("project", "id", "name", "status", "group", "tags", "start", "end",
              "duration_s", "host", "notes", "cut")
TAGS_WIDTH = 60            # characters of tags a table cell shows before '+N more'

TABLE_HEADERS = ("STATUS", "NAME", "ID", "GROUP", "TAGS", "START", "DURATION", "HOST")
STATUS_STYLES = {"running": "green", "finished": "blue", "lost": "bold red", "crashed": "red",
                 "failed": "red", "killed": "yellow"}


def run_cells(record: Mapping[str, Any], tz: dt.tzinfo | None = None,
              with_project: bool = False) -> list[str]:
    """One run record as the cells of the table (TABLE_HEADERS, with PROJECT first if asked)."""
    cells = [record["status"], record["name"], record["id"], record["group"] or "-",
             tags_cell(record["tags"]), format_local_time(record["start"], tz),
             format_duration(record["duration_s"]), record["host"] or "-"]
    return ([record["project"]] if with_project else []) + [_one_line(c) for c in cells]


def tags_cell(tags: Sequence[str], width: int = TAGS_WIDTH) -> str:
    """Tags joined with ',' as far as `width` characters allow, then '+N more' ('-' for none)."""
    shown, used = [], 0
    for tag in tags:
        if shown and used + len(tag) + 1 > width:
            break
        shown.append(tag)
        used += len(tag) + 1
    more = len(tags) - len(shown)
    return (",".join(shown) or "-") + (f" +{more:,} more" if more else "")


def cut_lines(command: str, records: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line for each run whose run.json held more than the API writes, so that it is
    indexed and shown cut:

        nuboard ls: run 'llm/20261207T0330-8c1d2e3f' is shown cut to the API's limits: tags: the
        first 1,000 of 1,000,000 (one line)
    """
    return [f"nuboard {command}: run '{r['project']}/{r['id']}' is shown cut to the API's "
            f"limits: {r['cut']}" for r in records if r.get("cut")]


def table_headers(with_project: bool = False) -> list[str]:
    return (["PROJECT"] if with_project else []) + list(TABLE_HEADERS)


def csv_cell(value: Any) -> str:
    """A value as one CSV cell: lists joined with ';', None empty, numbers as Python writes them;
    a text a spreadsheet would run as a formula ('=...', '+...', '-...', '@...') with a leading
    "'" (files/csv_cells.py), a number never."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return escape_formula(";".join(str(v) for v in value))
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str):
        return escape_formula(value)
    return str(value)


def text_cell(value: Any) -> str:
    """A value as one cell of a text table: on one line, None as 'NULL'."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    if isinstance(value, float):
        return repr(value)
    return _one_line(str(value))


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def plain_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Aligned columns, two spaces apart, no colour: what `ls` prints into a pipe."""
    rows = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers)] + rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines)


def as_csv(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV with a header line (RFC 4180 quoting, '\\n' line ends); cells as csv_cell writes them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([escape_formula(str(h)) for h in headers])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return out.getvalue()


def json_value(value: Any) -> Any:
    """A value JSON can hold: bytes as hex, NaN and the infinities as strings."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def as_json(records: Iterable[Mapping[str, Any]]) -> str:
    """A JSON list of objects, indented, UTF-8 kept as it is."""
    return json.dumps([{k: json_value(v) for k, v in r.items()} for r in records],
                      indent=2, ensure_ascii=False)


def rich_table(headers: Sequence[str], rows: Iterable[Sequence[str]],
               status_column: int | None = None):
    """The same table as a rich Table for a terminal (the status cell coloured)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, header_style="bold", pad_edge=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        cells = [Text(c) for c in row]
        if status_column is not None:
            cells[status_column].stylize(STATUS_STYLES.get(row[status_column], ""))
        table.add_row(*cells)
    return table


def skip_lines(command: str, runs_dir: Any, report: Any) -> list[str]:
    """One line for each run folder and artifact version a sync report skipped:

        nuboard ls: skipped run folder '<path>': <why>
        nuboard ls: skipped artifacts/corpus/v2: its manifest is damaged

    The report names a run by its folder name (or a path); a name that is not UTF-8 (a lone
    surrogate from the file system) is written with backslash escapes, so printing never fails.
    """
    import os
    skipped = [(f"run folder {os.path.join(os.fspath(runs_dir), os.fspath(where))!r}", why)
               for where, why in report.skipped]
    skipped += [(str(where), why) for where, why in report.skipped_versions]
    return [" ".join(f"nuboard {command}: skipped {what}: {why}".encode("utf-8", "backslashreplace")
                     .decode("utf-8").split()) for what, why in skipped]
