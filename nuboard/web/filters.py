"""Jinja filters: times, durations, sizes and table cells as the pages show them (a cell:
number_text.cell_text, the one text of a value on every page)."""
from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Flask

from nuboard.artifacts.form import format_size
from nuboard.files.records import format_duration, format_local_time

from .number_text import cell_text


def filesize(size: Any) -> str:
    """A size as the command line writes it ('98.6 kB'); '' when unknown."""
    return "" if size is None else format_size(int(size))


def epoch(seconds: Any) -> str:
    if seconds is None:
        return ""
    return dt.datetime.fromtimestamp(float(seconds)).strftime("%Y-%m-%d %H:%M")


def column_title(column: str) -> str:
    """A Runs table column's header: 'lr' for config:lr, 'train/loss (min)' for min:train/loss."""
    kind, sep, key = column.partition(":")
    if not sep:
        return column
    return f"{key} ({kind})" if kind in ("min", "max") else key


def query_quote(value: str) -> str:
    """A value quoted for the query language: in double quotes, with \\ and \" escaped."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def age(iso: Any) -> str:
    """How long ago an ISO time was: '42s ago', '3m 05s ago', '2d 03h ago'; '' when unknown."""
    from nuboard.files.records import parse_time
    when = parse_time(iso) if isinstance(iso, str) else None
    if when is None:
        return ""
    seconds = (dt.datetime.now(dt.timezone.utc) - when).total_seconds()
    return f"{format_duration(max(0.0, seconds))} ago"


def install_filters(app: Flask) -> None:
    app.jinja_env.globals["column_title"] = column_title
    app.jinja_env.filters.update(localtime=format_local_time, duration=format_duration,
                                 cell=cell_text, filesize=filesize, epoch=epoch,
                                 query_quote=query_quote, age=age)
