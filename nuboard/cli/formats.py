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

from ..status import LOST_AFTER

# What `nuboard ls` shows, in order; a record (run_record) has these keys and a few more.
RUN_FIELDS = ("project", "id", "name", "status", "group", "tags", "start", "end",
              "duration_s", "host", "notes")
TABLE_HEADERS = ("STATUS", "NAME", "ID", "GROUP", "TAGS", "START", "DURATION", "HOST")
STATUS_STYLES = {"running": "green", "finished": "blue", "lost": "bold red", "crashed": "red",
                 "failed": "red", "killed": "yellow"}


def display_status(status: str, heartbeat_mtime: float | None, now: float) -> str:
    """The status to show: 'lost' for a running run whose heartbeat is over 120 s old."""
    if status == "running" and heartbeat_mtime is not None and now - heartbeat_mtime > LOST_AFTER:
        return "lost"
    return status


def parse_time(iso: str | None) -> dt.datetime | None:
    """An ISO 8601 time as run.json writes it ('2026-12-02T16:53:45.786Z') to an aware datetime."""
    if not iso:
        return None
    try:
        when = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def format_local_time(iso: str | None, tz: dt.tzinfo | None = None) -> str:
    """'2026-12-02 17:53' in local time (or in tz); '-' when there is no time."""
    when = parse_time(iso)
    if when is None:
        return "-"
    return when.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def format_duration(seconds: float | None) -> str:
    """'42s', '3m 05s', '1h 02m', '2d 03h'; '-' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def run_duration(row: Mapping[str, Any], status: str, now: float) -> float | None:
    """Seconds a run took; a running run so far, a lost one up to its last heartbeat."""
    if row.get("duration_s") is not None:
        return float(row["duration_s"])
    start = parse_time(row.get("created"))
    if start is None:
        return None
    if status == "running":
        return max(0.0, now - start.timestamp())
    if status == "lost" and row.get("heartbeat_mtime") is not None:
        return max(0.0, float(row["heartbeat_mtime"]) - start.timestamp())
    end = parse_time(row.get("ended"))
    return (end - start).total_seconds() if end is not None else None


def run_record(row: Mapping[str, Any], tags: Sequence[str], project: str, now: float) -> dict:
    """A catalog row of `runs` (with its tags) as the JSON object `nuboard ls --json` prints."""
    status = display_status(row["status"], row.get("heartbeat_mtime"), now)
    duration = run_duration(row, status, now)
    return {
        "project": project,
        "id": row["run_id"],
        "name": row["name"],
        "status": status,
        "group": row.get("group_name"),
        "tags": list(tags),
        "start": row.get("created") or None,
        "end": row.get("ended"),
        "duration_s": None if duration is None else round(duration, 3),
        "host": row.get("host"),
        "notes": row.get("notes"),
    }


def run_cells(record: Mapping[str, Any], tz: dt.tzinfo | None = None,
              with_project: bool = False) -> list[str]:
    """One run record as the cells of the table (TABLE_HEADERS, with PROJECT first if asked)."""
    cells = [record["status"], record["name"], record["id"], record["group"] or "-",
             ",".join(record["tags"]) or "-", format_local_time(record["start"], tz),
             format_duration(record["duration_s"]), record["host"] or "-"]
    return ([record["project"]] if with_project else []) + [_one_line(c) for c in cells]


def table_headers(with_project: bool = False) -> list[str]:
    return (["PROJECT"] if with_project else []) + list(TABLE_HEADERS)


def csv_cell(value: Any) -> str:
    """A value as one CSV cell: lists joined with ';', None empty, numbers as Python writes them."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    if isinstance(value, bytes):
        return value.hex()
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


def csv_text(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV with a header line (RFC 4180 quoting, '\\n' line ends)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
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


def json_text(records: Iterable[Mapping[str, Any]]) -> str:
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
