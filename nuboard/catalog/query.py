"""The query language compiled: a query's text to a WHERE clause over `tables.runs`.

One grammar for the viewer's search box, saved views, `nuboard ls --query` and the Python API
(docs/query.md); `query_syntax` parses it, this module turns the tree into SQLAlchemy Core with
bound parameters only, and EXISTS subqueries against tags, config and scalars.
"""
from __future__ import annotations

import datetime as dt
import operator

from sqlalchemy import Boolean, and_, false, func, not_, or_, select, true, type_coerce
from sqlalchemy.sql import ColumnElement, literal_column

from nuboard.files.status import LOST_AFTER

from .query_numbers import compare_config_number, compare_float_column, compare_int_column
from .query_syntax import (
    CHAIN,
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_LEVELS,
    STATUSES,
    And,
    Compare,
    Date,
    Field,
    Node,
    Not,
    Or,
    QuerySyntaxError,
    Word,
    normalize,
    parse_query,
)
from .tables import config, projects, runs, scalars, tags

__all__ = ["compile_query", "parse_query", "normalize", "QuerySyntaxError", "Node", "And", "Or",
           "Not", "Word", "Field", "Date", "Compare", "MAX_LENGTH", "MAX_DEPTH", "MAX_LEVELS",
           "STATUSES"]

_COMPARE = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}
_UTC = dt.timezone.utc
INTEGER_SUMMARIES = ("count", "last_step")     # the scalars columns that hold integers


def compile_query(text: str, *, now: dt.datetime | None = None) -> ColumnElement[bool]:
    """A WHERE clause over `tables.runs` that selects the runs the query matches.

    Args:
        text: the query (docs/query.md).
        now: the time that relative dates and 'lost' are judged from (default: now, UTC;
            a naive datetime is taken as UTC).

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    node = normalize(parse_query(text))
    if now is None:
        now = dt.datetime.now(_UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=_UTC)
    return _compile(node, now.astimezone(_UTC))


def _compile(node: Node, now: dt.datetime) -> ColumnElement[bool]:
    """The clause of a normalized node (NOT only on leaves, no group inside one of its kind)."""
    if isinstance(node, (And, Or)):
        if not node.terms:
            return true() if isinstance(node, And) else false()
        return _join(and_ if isinstance(node, And) else or_, [_compile(t, now) for t in node.terms])
    if isinstance(node, Not):
        return not_(_compile(node.term, now))
    if isinstance(node, Word):
        pattern = "%" + _like_escape(node.text) + "%"
        return or_(runs.c.name.ilike(pattern, escape="\\"),
                   and_(runs.c.notes.isnot(None), runs.c.notes.ilike(pattern, escape="\\")))
    if isinstance(node, Field):
        return _compile_field(node, now)
    if isinstance(node, Date):
        return _compile_date(node, now)
    return _compile_compare(node)


def _join(join, parts: list) -> ColumnElement[bool]:
    """and_ or or_ of the parts, as a balanced tree of chains of at most CHAIN terms.

    SQLite parses a chain left-deep and refuses expressions over 1000 deep; SQLAlchemy
    flattens `a OR (b OR c)`, so a type_coerce keeps the two halves apart.
    """
    if len(parts) <= CHAIN:
        return join(*parts)
    half = len(parts) // 2
    return join(*(type_coerce(_join(join, side), Boolean).self_group()
                  for side in (parts[:half], parts[half:])))


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _glob(column, pattern: str) -> ColumnElement[bool]:
    """A case-insensitive match of the whole value against a glob (* and ?)."""
    like = _like_escape(pattern).replace("*", "%").replace("?", "_")
    return column.ilike(like, escape="\\")


def _compile_field(node: Field, now: dt.datetime) -> ColumnElement[bool]:
    if node.name == "tag":
        return select(tags.c.run).where(tags.c.run == runs.c.id, tags.c.tag == node.value) \
            .correlate(runs).exists()
    if node.name == "status":
        if node.value not in ("running", "lost"):
            return runs.c.status == node.value
        # lost: the beat is older than the 2-minute cutoff plus what the run's own interval
        # adds to it (runs.lost_after - 120 s; NULL adds nothing)
        two_minutes = literal_column(repr(float(LOST_AFTER)))
        beat = runs.c.heartbeat_mtime + (func.coalesce(runs.c.lost_after, two_minutes) - two_minutes)
        cutoff = now.timestamp() - LOST_AFTER
        if node.value == "lost":
            return and_(runs.c.status == "running", runs.c.heartbeat_mtime.isnot(None), beat < cutoff)
        return and_(runs.c.status == "running", or_(runs.c.heartbeat_mtime.is_(None), beat >= cutoff))
    if node.name == "project":
        return runs.c.project_id.in_(select(projects.c.id).where(_glob(projects.c.name,
                                                                         node.value)))
    column = {"name": runs.c.name, "id": runs.c.run_id, "group": runs.c.group_name,
              "host": runs.c.host, "parent": runs.c.parent_run_id}[node.name]
    if column.nullable:
        return and_(column.isnot(None), _glob(column, node.value))
    return _glob(column, node.value)


def _format_time(when: dt.datetime) -> str:
    """A UTC time as runs.created holds it: 2026-12-02T15:56:37.262Z."""
    return (f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:"
            f"{when.minute:02d}:{when.second:02d}.{when.microsecond // 1000:03d}Z")


def _compile_date(node: Date, now: dt.datetime) -> ColumnElement[bool]:
    column = runs.c[node.name]
    if node.age is not None:
        try:
            bound = _format_time(now - node.age)
        except OverflowError:
            bound = _format_time(dt.datetime.min)
        op = ">=" if node.op == "=" else node.op          # created:7d is within the last 7 days
        condition = _COMPARE[op](column, bound)
    else:
        start, end = _format_time(node.start), _format_time(node.end)
        condition = {"=": and_(column >= start, column < end), ">": column >= end,
                     ">=": column >= start, "<": column < start, "<=": column < end}[node.op]
    return and_(column.isnot(None), condition) if column.nullable else condition


def _compile_compare(node: Compare) -> ColumnElement[bool]:
    compare = _COMPARE[node.op]
    text = isinstance(node.value, str)
    parts = []
    if node.source in ("config", "either"):
        value = compare(config.c.value_text, node.value) if text else \
            compare_config_number(node.op, node.value)
        parts.append(select(config.c.run).where(
            config.c.run == runs.c.id, config.c.key == node.key, value).correlate(runs).exists())
    if node.source in ("scalar", "either") and not text:
        column = scalars.c[node.summary]
        exact = compare_int_column if node.summary in INTEGER_SUMMARIES else compare_float_column
        parts.append(select(scalars.c.run).where(
            scalars.c.run == runs.c.id, scalars.c.rank == 0, scalars.c.name == node.key,
            exact(column, node.op, node.value)).correlate(runs).exists())
    return parts[0] if len(parts) == 1 else or_(*parts)
