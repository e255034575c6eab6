"""What a logged point may hold: the checks of values, steps and wall times, and their messages.

Each takes what the fast path of add_scalar or run.log could not take as it is, and returns
the float or int to log, or raises the one error that names the value and the rule.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError

MAX_STEP = (1 << 63) - 1     # steps are int64


def as_value(value: Any, name: str) -> float:
    """A logged value as a float: a real number, a numpy scalar, a one-element array or tensor."""
    if isinstance(value, (str, bytes, bytearray)) or value is None:
        raise InvalidTypeError(
            f"scalar {name!r:.80}: value {value!r:.80} is a {type(value).__name__}, "
            "not a real number." + (" Log text with run.log({name: text}) or run.add_text."
                                   if isinstance(value, str) else ""))
    try:
        return float(value)
    except OverflowError:
        raise InvalidArgumentError(
            f"scalar {name!r:.80}: value {show(value)} is out of the range of a float "
            "(about -1.8e308 to 1.8e308).") from None
    except Exception:
        pass
    item = getattr(value, "item", None)      # a one-element array or tensor
    try:
        if callable(item):
            return float(item())
    except Exception:
        pass
    raise InvalidTypeError(
        f"scalar {name!r:.80}: value {value!r:.80} of type {type(value).__name__} is not a "
        "real number (a tensor or array must hold exactly one element).")


def as_values(values: Mapping) -> list:
    """The values of a dict as floats, with add_scalar's checks and messages."""
    return [v if type(v) is float else as_value(v, name) for name, v in values.items()]


def as_step(step: Any, name: str) -> int:
    """A step as an int from 0 to 2**63-1 (a numpy int is one; a bool is not)."""
    if isinstance(step, bool) or not hasattr(step, "__index__"):
        raise InvalidTypeError(f"{name!r:.80}: step {step!r:.80} must be an int, "
                               f"not {type(step).__name__}.")
    step = step.__index__()
    if not 0 <= step <= MAX_STEP:
        raise step_error(step, name)
    return step


def step_error(step: int, name: str) -> InvalidArgumentError:
    """The error of a step outside the int64 range."""
    return InvalidArgumentError(f"{name!r:.80}: step {show(step)} must be between 0 and "
                                "2**63-1 (9223372036854775807), the range of an int64.")


def as_wall(wall: Any, name: str) -> float:
    """A wall_time as a finite float of seconds since the epoch."""
    rule = "must be seconds since the epoch, as a finite number"
    try:
        if isinstance(wall, (str, bytes, bytearray, bool)):
            raise TypeError
        wall = float(wall)
    except OverflowError:
        raise InvalidArgumentError(f"scalar {name!r:.80}: wall_time {show(wall)} {rule}.") from None
    except Exception:
        raise InvalidTypeError(f"scalar {name!r:.80}: wall_time {wall!r:.80} {rule}.") from None
    if not math.isfinite(wall):
        raise InvalidArgumentError(f"scalar {name!r:.80}: wall_time {wall!r} {rule}.")
    return wall


def show(value: Any) -> str:
    """A value for a message: its repr cut to 80 characters, or an int too long to print."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"{'-' if value < 0 else ''}(an int of about {int(value.bit_length() * 0.30103) + 1} digits)"
    return f"{value!r:.80}"
