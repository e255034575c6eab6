"""nb.Histogram: the distribution of many values at one step, kept as counts and bin edges.

The counts are computed when the object is made, on the training thread, so that nothing of the
caller's values is kept (a tensor may change after logging) and the event-log record is small:

    Histogram(grads)                    # 64 equal bins from the finite values' min to max
    Histogram(grads, bins=[-1, 0, 1])   # these edges
    Histogram(counts=[3, 5], edges=[0.0, 0.5, 1.0])   # counted already (an imported histogram)

Values may be a list or tuple of numbers, a numpy array or a torch tensor (any shape, flattened;
any device). They are counted in float64 with numpy, exactly as `numpy.histogram` counts: bins
are [edges[i], edges[i+1]), the last one closed. NaN and ±inf are left out and counted in
`dropped`; so are finite values outside explicit edges. When every counted value is the same
number v, there is one bin, [v - 0.5, v + 0.5] (narrowed to v's neighbouring floats where ±0.5
does not change v). With no value to count, counts and edges are empty.

A histogram lives in the event log itself (`in_log`): record() gives its body and
`Histogram.from_record` rebuilds one from it, checked.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Media
from nuboard.media.values import is_ndarray, is_tensor, tensor_array

MAX_BINS = 512              # bins=N with values
MAX_COUNTS_BINS = 4096      # counts= and edges= (an imported TensorBoard histogram has ~1,550)
WHO = "nb.Histogram"
_EXACT_INT = 2 ** 53        # an integral float below this prints as an int in the record


class Histogram(Media):
    """Counts of values in bins. Args: values (list/tuple of numbers, numpy array, torch
    tensor), bins (an int 1..512: equal bins over the values' range, or a sequence of 2..513
    strictly increasing finite edges); or instead counts= and edges= (len(edges) ==
    len(counts) + 1, at most 4,096 bins). Raises InvalidTypeError / InvalidArgumentError."""
    kind = "histogram"
    in_log = True

    def __init__(self, values: Any = None, bins: Any = 64, *, counts: Any = None, edges: Any = None):
        given = counts is not None or edges is not None
        if values is not None and given:
            raise InvalidArgumentError(f"{WHO}: give values, or counts= and edges=, not both")
        if values is None and not given:
            raise InvalidArgumentError(f"{WHO}: give values (a list, numpy array or torch tensor), "
                                       "or counts= and edges=")
        if values is None:
            self._from_counts(counts, edges)
        else:
            self._from_values(values, bins)

    # -- the two ways in ---------------------------------------------------------------------

    def _from_values(self, values: Any, bins: Any) -> None:
        explicit = _check_bins(bins)            # None, or the edges as floats
        array = _values_array(values)           # float64, 1-D (numpy imported by now)
        import numpy as np
        with np.errstate(invalid="ignore"):
            ends = (float(array.min()), float(array.max())) if array.size else (math.nan, math.nan)
        # NaN and ±inf show in the min or max: where both are finite, so is every value
        kept = array if all(map(math.isfinite, ends)) else array[np.isfinite(array)]
        if explicit is not None:
            inside = (kept >= explicit[0]) & (kept <= explicit[-1])
            if not inside.all():
                kept = kept[inside]
        if kept.size == 0:
            counts, edges, low, high, total = [], explicit or [], None, None, None
            if explicit is not None:
                counts = [0] * (len(explicit) - 1)
        else:
            low, high = ends if kept is array else (float(kept.min()), float(kept.max()))
            with np.errstate(over="ignore"):
                total = _finite_or_none(float(kept.sum()))
            if explicit is not None:
                counts, edges = _count_in(np, kept, np.asarray(explicit, dtype=np.float64)), explicit
            else:
                counts, edges = _count_equal_bins(np, kept, bins, low, high)
        self._set(counts, edges, dropped=int(array.size - kept.size), low=low, high=high, total=total)

    def _from_counts(self, counts: Any, edges: Any) -> None:
        if counts is None or edges is None:
            raise InvalidArgumentError(f"{WHO}: counts= and edges= go together: give both "
                                       "(len(edges) == len(counts) + 1)")
        counts = _number_list(counts, "counts")
        edges = _number_list(edges, "edges")
        _check_counts(counts, "counts", WHO)
        if not counts:
            raise InvalidArgumentError(f"{WHO}: counts is empty: give at least one bin")
        if len(counts) > MAX_COUNTS_BINS:
            raise InvalidArgumentError(f"{WHO}: {len(counts):,} counts: give at most "
                                       f"{MAX_COUNTS_BINS:,} bins")
        if len(edges) != len(counts) + 1:
            raise InvalidArgumentError(f"{WHO}: {len(counts)} counts need {len(counts) + 1} edges, "
                                       f"not {len(edges)} (len(edges) == len(counts) + 1)")
        _check_edges(edges, "edges", WHO)
        self._set(counts, edges, dropped=0, low=None, high=None, total=None)

    def _set(self, counts, edges, *, dropped, low, high, total) -> None:
        self._counts = tuple(_compact(c) for c in counts)
        self._edges = tuple(float(e) for e in edges)
        self._count = _compact(sum(self._counts))
        self._dropped = dropped
        self._min, self._max, self._sum = low, high, total

    # -- what it holds -----------------------------------------------------------------------

    @property
    def counts(self) -> tuple:
        """The count in each bin (ints, or floats where a count given was not whole)."""
        return self._counts

    @property
    def edges(self) -> tuple[float, ...]:
        """The bin edges, one more than the counts (both empty when nothing was counted)."""
        return self._edges

    def record(self) -> dict[str, Any]:
        """{"counts", "edges", "min", "max", "sum", "count", "dropped"}: min, max and sum of the
        values counted (None when unknown: made from counts, nothing counted, or a sum past the
        largest float); count == sum(counts); dropped, the values left out."""
        return {"counts": list(self._counts), "edges": [_compact(e) for e in self._edges],
                "min": _compact_or_none(self._min), "max": _compact_or_none(self._max),
                "sum": _compact_or_none(self._sum), "count": self._count, "dropped": self._dropped}

    @classmethod
    def from_record(cls, doc: Any) -> Histogram:
        """The histogram a record() body describes, checked: InvalidTypeError or
        InvalidArgumentError naming the field and the rule where it is not one."""
        who = "Histogram.from_record"
        if not isinstance(doc, Mapping):
            raise InvalidTypeError(f"{who}: a record of type {type(doc).__name__}: give a dict")
        missing = [k for k in ("counts", "edges", "min", "max", "sum", "count", "dropped") if k not in doc]
        if missing:
            raise InvalidArgumentError(f"{who}: the record has no {', '.join(map(repr, missing))}")
        counts, edges = doc["counts"], doc["edges"]
        for name, seq in (("counts", counts), ("edges", edges)):
            if not isinstance(seq, list):
                raise InvalidTypeError(f"{who}: {name} is a {type(seq).__name__}: give a list")
            _check_reals(seq, name, who)
        _check_counts(counts, "counts", who)
        if len(counts) > MAX_COUNTS_BINS:
            raise InvalidArgumentError(f"{who}: {len(counts):,} counts: at most {MAX_COUNTS_BINS:,} bins")
        if counts or edges:
            if len(edges) != len(counts) + 1:
                raise InvalidArgumentError(f"{who}: {len(counts)} counts need {len(counts) + 1} edges, "
                                           f"not {len(edges)}")
            _check_edges(edges, "edges", who)
        dropped = doc["dropped"]
        if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
            raise InvalidArgumentError(f"{who}: dropped is {dropped!r}: give an int >= 0")
        count = doc["count"]
        total = sum(counts)
        if (isinstance(count, bool) or not isinstance(count, (int, float))
                or not math.isclose(count, total, rel_tol=1e-9, abs_tol=0.0)):
            raise InvalidArgumentError(f"{who}: count is {count!r}, but the counts sum to {total!r}")
        stats = {}
        for name in ("min", "max", "sum"):
            value = doc[name]
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise InvalidArgumentError(f"{who}: {name} is {value!r}: give a finite number or None")
            stats[name] = None if value is None else float(value)
        low, high = stats["min"], stats["max"]
        if low is not None and high is not None and edges and not edges[0] <= low <= high <= edges[-1]:
            raise InvalidArgumentError(f"{who}: min {low!r} and max {high!r} do not lie within the edges "
                                       f"[{edges[0]!r}, {edges[-1]!r}] in that order")
        histogram = cls.__new__(cls)
        histogram._set(counts, edges, dropped=dropped, low=low, high=high, total=stats["sum"])
        return histogram

    def __repr__(self) -> str:
        return f"Histogram({len(self._counts)} bins, count={self._count}, dropped={self._dropped})"


# -- values to a float64 array ---------------------------------------------------------------

def _values_array(values: Any):
    """values as a 1-D float64 numpy array (a view where it can be: nothing is kept)."""
    if isinstance(values, (list, tuple, range)):
        array = _list_array(list(values) if isinstance(values, range) else values)
    elif is_tensor(values):
        array = tensor_array(values, WHO)
    elif is_ndarray(values):
        array = values
    else:
        raise InvalidTypeError(f"{WHO}: values of type {type(values).__name__}: give a list or tuple "
                               "of numbers, a numpy array or a torch tensor")
    if array.dtype.kind not in "biuf":
        raise InvalidTypeError(f"{WHO}: an array of dtype {array.dtype}: give real numbers "
                               "(floats, ints or bools)")
    import numpy as np
    return np.asarray(array, dtype=np.float64).reshape(-1)      # a subclass (np.matrix) as a plain array


def _list_array(values: list | tuple):
    """A flat list or tuple of real numbers as a float64 array (the array module refuses
    strings, which numpy would parse)."""
    from array import array
    try:
        packed = array("d", values)
    except (TypeError, OverflowError):
        for i, value in enumerate(values):
            if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
                raise InvalidTypeError(f"{WHO}: values[{i}] is a {type(value).__name__} ({_short(value)}): "
                                       "give a flat list or tuple of numbers") from None
            try:
                float(value)
            except OverflowError:
                raise InvalidArgumentError(f"{WHO}: values[{i}] is an int of {len(str(abs(value)))} digits, "
                                           "beyond the float range: give numbers a float64 can hold") from None
        raise InvalidTypeError(f"{WHO}: values cannot be read as numbers: give a flat list or tuple "
                               "of numbers") from None
    import numpy as np
    return np.frombuffer(packed, dtype=np.float64) if len(packed) else np.zeros(0)


# -- counting -----------------------------------------------------------------------------

def _count_equal_bins(np, kept, bins: int, low: float, high: float):
    """(counts, edges) of `bins` equal bins from kept's min to max, as numpy.histogram gives
    them; one bin around the value when all are equal. Where float64 cannot split the range
    that way (a range of a few ulps, or one near the largest float, where numpy's edges
    overflow), the edges are split from the range's halves, kept within it, and the ones that
    repeat merged: fewer bins."""
    if low == high:
        return [kept.size], _one_bin(low)
    with np.errstate(over="ignore", invalid="ignore"):
        if not math.isinf(high - low):
            try:
                counts, edges = np.histogram(kept, bins=bins, range=(low, high))
            except ValueError:          # numpy's edges repeat or overflow
                pass
            else:
                if np.isfinite(edges).all() and (edges[1:] > edges[:-1]).all():
                    return counts.tolist(), edges.tolist()
        edges = np.linspace(low / 2, high / 2, bins + 1) * 2
    edges[0], edges[-1] = low, high
    edges = np.unique(np.clip(edges, low, high))
    return _count_in(np, kept, edges), edges.tolist()


def _count_in(np, kept, edges) -> list[int]:
    """Counts of kept (all within edges[0]..edges[-1]) in the bins edges makes: [e_i, e_i+1),
    the last bin closed."""
    nbins = len(edges) - 1
    index = np.searchsorted(edges, kept, side="right") - 1
    np.minimum(index, nbins - 1, out=index)          # a value equal to the last edge
    return np.bincount(index, minlength=nbins).tolist()


def _one_bin(value: float) -> list[float]:
    """[v - 0.5, v + 0.5], or v's neighbouring floats where ±0.5 does not move v."""
    low, high = value - 0.5, value + 0.5
    if low == value:
        low = math.nextafter(value, -math.inf)
    if high == value:
        high = math.nextafter(value, math.inf)
    if math.isinf(low):
        low = value
    if math.isinf(high):
        high = value
    return [low, high]


# -- checks -------------------------------------------------------------------------------

def _check_bins(bins: Any) -> list[float] | None:
    """None for an int 1..512 (equal bins); the edges as floats for a sequence."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if not 1 <= bins <= MAX_BINS:
            raise InvalidArgumentError(f"{WHO}: bins={bins!r}: give an int from 1 to {MAX_BINS}")
        return None
    module = type(bins).__module__ or ""
    if not (isinstance(bins, (list, tuple)) or module.startswith(("numpy", "torch"))):
        raise InvalidTypeError(f"{WHO}: bins of type {type(bins).__name__} ({_short(bins)}): give an int "
                               f"from 1 to {MAX_BINS} or a sequence of increasing bin edges")
    edges = _number_list(bins, "bins")
    if len(edges) < 2:
        raise InvalidArgumentError(f"{WHO}: bins has {len(edges)} edge(s): give at least 2 (one bin)")
    if len(edges) > MAX_BINS + 1:
        raise InvalidArgumentError(f"{WHO}: bins has {len(edges):,} edges: give at most {MAX_BINS + 1} "
                                   f"({MAX_BINS} bins)")
    _check_edges(edges, "bins", WHO)
    return [float(e) for e in edges]


def _number_list(seq: Any, name: str) -> list:
    """A list, tuple, numpy array or torch tensor of real numbers as a list of Python numbers."""
    module = type(seq).__module__ or ""
    if module.startswith("torch") and is_tensor(seq):
        seq = tensor_array(seq, WHO)
        module = "numpy"
    if module.startswith("numpy") and is_ndarray(seq):
        if seq.ndim != 1 or seq.dtype.kind not in "biuf":
            raise InvalidTypeError(f"{WHO}: {name} is an array of shape {tuple(seq.shape)} and dtype "
                                   f"{seq.dtype}: give a 1-D sequence of numbers")
        return seq.tolist()
    if not isinstance(seq, (list, tuple)):
        raise InvalidTypeError(f"{WHO}: {name} of type {type(seq).__name__}: give a list or tuple "
                               "of numbers, a numpy array or a torch tensor")
    items = list(seq)
    _check_reals(items, name, WHO)
    return [v if isinstance(v, (int, float)) else float(v) for v in items]


def _check_reals(items: list, name: str, who: str) -> None:
    for i, value in enumerate(items):
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
            raise InvalidTypeError(f"{who}: {name}[{i}] is a {type(value).__name__} ({_short(value)}): "
                                   "give numbers")


def _check_counts(counts: list, name: str, who: str) -> None:
    for i, value in enumerate(counts):
        if not (isinstance(value, int) or math.isfinite(value)) or value < 0:
            raise InvalidArgumentError(f"{who}: {name}[{i}] is {_short(value)}: counts must be finite and >= 0")


def _check_edges(edges: list, name: str, who: str) -> None:
    for i, value in enumerate(edges):
        if not math.isfinite(_float_or_inf(value)):
            raise InvalidArgumentError(f"{who}: {name}[{i}] is {_short(value)}: edges must be finite numbers")
        if i and not value > edges[i - 1]:
            raise InvalidArgumentError(f"{who}: {name}[{i}] = {value!r} is not greater than "
                                       f"{name}[{i - 1}] = {edges[i - 1]!r}: edges must increase strictly")


# -- small formatters ---------------------------------------------------------------------

def _float_or_inf(value: int | float) -> float:
    """value as a float; an int beyond the float range as inf (it is no usable edge)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _compact(value: int | float) -> int | float:
    """An int for a whole float (so the record says 3, not 3.0); other numbers as they are."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INT:
        return int(value)
    return value


def _compact_or_none(value: float | None) -> int | float | None:
    return None if value is None else _compact(value)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
