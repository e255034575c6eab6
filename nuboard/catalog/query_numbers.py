"""A catalog column compared with a query's number, exactly, and alike on SQLite and PostgreSQL.

A query's integer stays a Python int and a number with '.' or an exponent is a double. The
backends do not compare mixed types alike: PostgreSQL turns a bigint into a double beside a
double (so 2**53 + 1 equals 2**53 there), SQLite compares them exactly. So no comparison sent
to either mixes the two: an int against a double column is turned, here, into a comparison with
its nearest double; a double against an integer column into one with an integer; an integer
past 64 bits into what it means for every row (all or none).
"""
from __future__ import annotations

import math
import operator

from sqlalchemy import and_, case, cast, false, func, not_, or_
from sqlalchemy.sql import ColumnElement

from .tables import Wide, config

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
COMPARE = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge}


def compare_int_column(column, op: str, value: int | float) -> ColumnElement[bool]:
    """column (64-bit integers) op value, exactly."""
    if isinstance(value, float):
        if math.isnan(value):
            return false()
        if math.isinf(value):
            return _all_or_none(column, op, above=value > 0)
        if not value.is_integer():
            if op == "=":
                return false()
            # c < 2.5 is c <= 2, c > 2.5 is c >= 3: the same rows, with an integer
            op, value = ("<=", math.floor(value)) if op in ("<", "<=") else (">=", math.ceil(value))
        value = int(value)
    if value > INT64_MAX:
        return _all_or_none(column, op, above=True)
    if value < INT64_MIN:
        return _all_or_none(column, op, above=False)
    return COMPARE[op](column, value)


def compare_float_column(column, op: str, value: int | float) -> ColumnElement[bool]:
    """column (doubles) op value, exactly: an int is compared through its nearest double."""
    if isinstance(value, float):
        return false() if math.isnan(value) else COMPARE[op](column, value)
    try:
        near = float(value)
    except OverflowError:                     # past every double: beyond every finite one
        near = math.inf if value > 0 else -math.inf
    if near == value:                         # Python compares int and float exactly
        return COMPARE[op](column, near)
    # no double lies between value and near, and none equals value
    if op == "=":
        return false()
    if op in ("<", "<="):
        return column < near if near > value else column <= near
    return column > near if near < value else column >= near


def compare_config_number(op: str, value: int | float) -> ColumnElement[bool]:
    """A config row's value op a number: an int config value within 64 bits exactly (from its
    text), a float or bool (and an int past 64 bits) through its double."""
    num, text = config.c.value_num, config.c.value_text
    # within 64 bits: its double is inside (-2**63, 2**63), or is one of them and its digits
    # (as many as INT64_MAX's, or INT64_MIN's) are not past that end
    exact = and_(config.c.type == "int", or_(
        and_(num > -2.0 ** 63, num < 2.0 ** 63),
        and_(num == 2.0 ** 63, func.length(text) == len(str(INT64_MAX)), text <= str(INT64_MAX)),
        and_(num == -2.0 ** 63, func.length(text) == len(str(INT64_MIN)), text <= str(INT64_MIN))))
    as_int = case((exact, cast(config.c.value_text, Wide)))
    as_float = case((not_(exact), config.c.value_num))
    return or_(compare_int_column(as_int, op, value), compare_float_column(as_float, op, value))


def _all_or_none(column, op: str, *, above: bool) -> ColumnElement[bool]:
    """column op a value above (or below) every value the column can hold."""
    holds = op in ("<", "<=") if above else op in (">", ">=")
    return column.isnot(None) if holds else false()
