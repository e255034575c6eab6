"""Min/max downsampling per x-bucket, with pyarrow: the shape of a long series in few points.

A series over an x range is cut with a binary search; when more than 2 * buckets points fall
in it, each of `buckets` equal slices of the range keeps the point of its minimum and the point
of its maximum at their own x positions, so a spike or a dip of one step survives at any zoom.

Non-finite values (NaN, +-Inf) never take part in a minimum or a maximum. They come out as
None (JSON null, a gap in uPlot): every one of them when the points are sent as they are, and
one None at the bucket's first x for a bucket that holds no finite value at all.
"""
from __future__ import annotations

import bisect
import math
from array import array
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

LOOP_PER_BUCKET = 1024           # from this many points per bucket, reduce bucket by bucket


# -- preparing an x axis ---------------------------------------------------------------------

class Axis:
    """x ascending and finite (float64, or int64 steps), y float64 with null where not finite.

    `xs` is a memoryview of x, so that bisect finds a range at C speed; `nbytes` is the
    memory the Axis holds beyond its series (copies made to sort or mask).
    """
    __slots__ = ("x", "y", "xs", "nbytes")

    def __init__(self, x: pa.Array, y: pa.Array, nbytes: int = 0):
        self.x, self.y, self.nbytes = x, y, nbytes
        n = len(x)
        code = "q" if pa.types.is_integer(x.type) else "d"
        if n:
            raw = memoryview(x.buffers()[1])
            self.xs = raw[x.offset * 8:(x.offset + n) * 8].cast(code)   # C-speed bisect
        else:
            self.xs = memoryview(array(code))

    def __len__(self) -> int:
        return len(self.x)


def prepare_axis(x: Any, y: Any) -> Axis:
    """Make an Axis of any x and y: drop points whose x is not finite, sort by x stably, mask y."""
    return axis_from_arrays(_as_float64(x), _as_float64(y))


def axis_from_arrays(x: pa.Array, y: pa.Array) -> Axis:
    """An Axis from x (float64, or int64 without nulls) and y (float64)."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} != {len(y)}); give one y per x.")
    own = 0
    if len(x) and pa.types.is_floating(x.type) and \
            (x.null_count or not pc.all(pc.is_finite(x)).as_py()):
        keep = pc.fill_null(pc.is_finite(x), False)
        x, y = x.filter(keep), y.filter(keep)
        own += x.nbytes + y.nbytes
    if len(x) > 1 and pc.any(pc.less(x[1:], x[:-1])).as_py():
        order = pc.sort_indices(x)
        x, y = x.take(order), y.take(order)
        own += x.nbytes + y.nbytes
    if len(y) and (y.null_count or not pc.all(pc.is_finite(y)).as_py()):
        y = pc.if_else(pc.fill_null(pc.is_finite(y), False), y, pa.scalar(None, pa.float64()))
        own += y.nbytes
    return Axis(x, y, own)


def _as_float64(values: Any) -> pa.Array:
    """A float64 pyarrow array of values; array('d') and array('q') are wrapped without a copy."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, array):
        if values.typecode == "d":
            return wrap_array(values, pa.float64())
        if values.typecode == "q":
            return wrap_array(values, pa.int64()).cast(pa.float64())
        values = values.tolist()
    if not isinstance(values, pa.Array):
        values = pa.array(values, pa.float64(), from_pandas=True)
    if values.type != pa.float64():
        values = values.cast(pa.float64())
    return values


def wrap_array(values: array, type: pa.DataType) -> pa.Array:
    """A pyarrow view of an array.array's memory (no copy; the array must not be resized after)."""
    return pa.Array.from_buffers(type, len(values), [None, pa.py_buffer(values)])


# -- downsampling ------------------------------------------------------------------------------

class Reduced(NamedTuple):
    """What `reduce_axis` kept: x and y lists (y None where not finite), and the count in range."""
    x: list
    y: list
    in_range: int
    downsampled: bool


def downsample(x: Any, y: Any, *, lo: float | None = None, hi: float | None = None,
               buckets: int = 1000) -> tuple[list, list]:
    """Cut x, y to lo <= x <= hi and keep the min and max point of each of `buckets` x-buckets.

    Also keeps one point just outside each end of the range (so a zoomed line reaches the
    edge) and the range's first and last points; when at most 2 * buckets points are in the
    range they all come back unchanged. Returns at most 2 * buckets + 4 points, in x order.

    Args:
        x: step, wall time or relative time of each point (anything pyarrow reads as float64;
            points whose x is not finite are dropped; unsorted x is sorted stably).
        y: the values; NaN, +-Inf and None never count as a min or max and come out as None.
        lo, hi: the x range; None for no bound.
        buckets: how many equal x-buckets to split [lo, hi] into (at least 1).

    Returns:
        (xs, ys) as lists of floats; ys holds None for values that are not finite.
    """
    out = reduce_axis(prepare_axis(x, y), lo=lo, hi=hi, buckets=buckets)
    return out.x, out.y


def reduce_axis(axis: Axis, *, lo: float | None = None, hi: float | None = None,
                buckets: int = 1000) -> Reduced:
    """Downsample a prepared Axis as `downsample` does; also say how many points were in range."""
    if buckets < 1:
        raise ValueError(f"buckets={buckets!r} must be at least 1.")
    lo, hi = _bound(lo, "lo", -math.inf), _bound(hi, "hi", math.inf)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"lo={lo!r} is above hi={hi!r}; give lo <= hi.")
    n = len(axis)
    xs = axis.xs
    i0 = 0 if lo is None else bisect.bisect_left(xs, lo)
    j1 = n if hi is None else bisect.bisect_right(xs, hi)
    in_range = max(0, j1 - i0)
    a = i0 - 1 if i0 > 0 else i0                 # the point just before lo
    b = j1 + 1 if j1 < n else j1                 # the point just after hi
    if in_range <= 2 * buckets:
        if b <= a:
            return Reduced([], [], 0, False)
        return Reduced(_xs(axis.x.slice(a, b - a)), axis.y.slice(a, b - a).to_pylist(),
                       in_range, False)
    lo_e = xs[i0] if lo is None else lo
    hi_e = xs[j1 - 1] if hi is None else hi
    width = hi_e - lo_e
    if not (width > 0 and math.isfinite(width)):
        keep = _extremes_by_bucket(axis, [i0, j1])
    elif in_range >= LOOP_PER_BUCKET * buckets:
        edges = [i0]
        for k in range(1, buckets):
            edges.append(bisect.bisect_left(xs, lo_e + width * k / buckets, edges[-1], j1))
        edges.append(j1)
        keep = _extremes_by_bucket(axis, edges)
    else:
        keep = _extremes_vectorized(axis, i0, j1, lo_e, width, buckets)
    keep.update((a, i0, j1 - 1, b - 1))
    idx = pa.array(sorted(keep), pa.int64())
    return Reduced(_xs(axis.x.take(idx)), axis.y.take(idx).to_pylist(), in_range, True)


def _bound(value: float | None, what: str, open_end: float) -> float | None:
    """A range bound: None (also for an infinity on its own side) or a finite number."""
    if value is None or value == open_end:
        return None
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{what}={value!r} is not a finite number; give a number or None.")
    return value


def _xs(x: pa.Array) -> list:
    """x as a list of Python numbers: ints for steps (int64 in an Axis), which JSON writes
    shorter and faster than floats (a chart of 12 runs: 36 ms against 45 ms), else floats."""
    return x.to_pylist()


def _extremes_by_bucket(axis: Axis, edges: list[int]) -> set[int]:
    """The index of the first min and of the first max of each bucket [edges[k], edges[k+1]).

    One pyarrow call per bucket and per reduction: cheap when buckets hold many points.
    """
    keep: set[int] = set()
    y = axis.y
    for k in range(len(edges) - 1):
        s, e = edges[k], edges[k + 1]
        if e <= s:
            continue
        seg = y.slice(s, e - s)
        mm = pc.min_max(seg)
        low = mm["min"]
        if not low.is_valid:                      # nothing finite here: one gap at its start
            keep.add(s)
            continue
        keep.add(s + pc.index(seg, low).as_py())
        keep.add(s + pc.index(seg, mm["max"]).as_py())
    return keep


def _extremes_vectorized(axis: Axis, i0: int, j1: int, lo: float, width: float,
                         buckets: int) -> set[int]:
    """The same as _extremes_by_bucket with whole-array kernels: cheap when buckets hold few points.

    Bucket ids by arithmetic (x ascending, so each bucket is one contiguous slice), the min and
    max of each slice by numpy's reduceat (fmin/fmax pass over NaN, the Axis's nulls), then the
    first index of each slice that equals its min (its max); a slice with no finite value keeps
    its start.
    """
    import numpy as np

    m = j1 - i0
    x = axis.x.slice(i0, m).to_numpy(zero_copy_only=False)
    y = axis.y.slice(i0, m).to_numpy(zero_copy_only=False)      # nulls come out as NaN
    ids = ((x - lo) * (buckets / width)).astype(np.int32)
    np.minimum(ids, buckets - 1, out=ids)
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    counts = np.diff(np.append(starts, m))
    slice_of = np.repeat(np.arange(len(starts)), counts)
    keep: set[int] = set()
    with np.errstate(invalid="ignore"):
        lows = np.fmin.reduceat(y, starts)
        for extreme in (lows, np.fmax.reduceat(y, starts)):
            hits = np.flatnonzero(y == np.repeat(extreme, counts))     # NaN equals nothing
            _, first = np.unique(slice_of[hits], return_index=True)
            keep.update((i0 + hits[first]).tolist())
    keep.update((i0 + starts[np.isnan(lows)]).tolist())
    return keep
