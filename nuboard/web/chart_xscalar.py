"""An x axis that is another logged scalar (tokens seen, epoch), as `x=scalar:NAME`.

A chart's scalar and the x scalar are paired by step: a point of the chart's scalar whose step
has no value of the x scalar is left out, and where the x scalar was logged twice at one step
its last value counts. The pairs are sorted by x (an x that is not finite is dropped), so the
axis is cut and downsampled as any other (downsampling.Axis).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .downsampling import Axis, prepare_axis

PREFIX = "scalar:"
MAX_NAME = 1000


def x_scalar(x: str) -> str | None:
    """The x scalar's name of an x kind `scalar:NAME`, or None for the other kinds."""
    return x[len(PREFIX):] if x.startswith(PREFIX) else None


def check_x_scalar(x: str) -> str | None:
    """The problem with an x kind `scalar:NAME` (an empty or too long name), or None."""
    name = x_scalar(x)
    if name is not None and not (0 < len(name) <= MAX_NAME):
        return f"x {x[:60]!r}: give the x scalar's name after 'scalar:' (1 to {MAX_NAME} characters)"
    return None


def paired_axis(y_steps: pa.Array, y_values: pa.Array, x_steps: pa.Array,
                x_values: pa.Array) -> Axis:
    """The Axis of y against x, the two paired by step (see the module's docstring)."""
    xs = x_steps.to_numpy(zero_copy_only=False)
    xv = x_values.to_numpy(zero_copy_only=False)
    ys = y_steps.to_numpy(zero_copy_only=False)
    yv = y_values.to_numpy(zero_copy_only=False)
    if not len(xs) or not len(ys):
        return prepare_axis(np.empty(0), np.empty(0))
    order = np.argsort(xs, kind="stable")
    sorted_steps = xs[order]
    # the last value logged at each step: the last of each run of equal steps, in log order
    last = np.r_[sorted_steps[1:] != sorted_steps[:-1], True]
    steps, values = sorted_steps[last], xv[order][last]
    at = np.minimum(np.searchsorted(steps, ys), len(steps) - 1)
    found = steps[at] == ys
    return prepare_axis(values[at][found], yv[found])
