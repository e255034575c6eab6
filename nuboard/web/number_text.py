"""The one text of a number, wherever the viewer shows it: Runs table cells, a run's Results and
Config, artifact metadata (static/chart_numbers.js writes chart tooltips with the same rule).

A value reads the same on every page, whatever else is shown beside it:
  - an int: all its digits (9007199254740993 stays ...993); a bool: true or false;
  - NaN, inf, -inf; zero is 0;
  - a float from 1e-4 up to (not including) 1e6: plain decimals, five significant digits
    but the whole part never rounded, trailing zeros dropped (76193.4 -> 76193, 3.14159 ->
    3.1416, 123456.7 -> 123457, 0.001 -> 0.001);
  - any other float: four significant digits in exponent form, trailing zeros dropped, the
    exponent written as JavaScript writes it (3.125e-5, 1.2e+7).

Rounding is that of JavaScript's toFixed and toPrecision (the exact value of the double, a tie
away from zero), so the two languages agree digit for digit:
    plain:    String(Number(v.toFixed(Math.max(0, 4 - exponent))))
    exponent: Number(v.toPrecision(4)).toExponential()
where exponent is the power of ten of |v|'s leading digit.
"""
from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_UP, Context, Decimal

PLAIN_FROM, PLAIN_BELOW = 1e-4, 1e6       # the floats written without an exponent
PLAIN_DIGITS = 5                          # significant digits of a plain float
EXPONENT_DIGITS = 4                       # ... of one in exponent form
_FOUR = Context(prec=EXPONENT_DIGITS, rounding=ROUND_HALF_UP)


def number_text(value) -> str:
    """A number as every page writes it ('' for None, which callers show as they like);
    anything that is not a number, as str() writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    if PLAIN_FROM <= abs(value) < PLAIN_BELOW:
        return _plain(value)
    return _exponent(value)


def _plain(value: float) -> str:
    """76193.4 -> 76193, 0.00031234 -> 0.00031234: like JavaScript's toFixed, then Number."""
    exact = Decimal(value)
    decimals = max(0, PLAIN_DIGITS - 1 - exact.adjusted())
    text = format(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _exponent(value: float) -> str:
    """1.2e+7, 3.125e-5: Number(v.toPrecision(4)).toExponential() in JavaScript."""
    rounded = _FOUR.plus(Decimal(value))
    near = float(rounded)
    if math.isfinite(near):              # the shortest digits of that double, as JavaScript's
        rounded = Decimal(repr(near))
    sign, digits, power = rounded.normalize().as_tuple()
    head = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power += len(digits) - 1
    return f"{'-' if sign else ''}{head}e{'+' if power >= 0 else '-'}{abs(power)}"


def cell_text(value) -> str:
    """A config value, scalar summary or metadata value as a cell (the Runs table, a run's
    Results and Config, an artifact's metadata): a number, bool or None as number_text writes
    it, a list or dict as JSON, text as it is."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return number_text(value)
