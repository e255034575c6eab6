"""Chart data: runs' scalars kept as pyarrow arrays, and the chart endpoint's payload.

The Charts page asks for one scalar of one run and rank at a time, over an x range. A
SeriesCache loads each run once (data.parquet when it is current, else the event logs) and
keeps its scalars as pyarrow arrays; `series_payload` cuts the range and downsamples it
(`downsampling`: min and max per x-bucket, at their own x positions).
"""
from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Union

import pyarrow as pa
import pyarrow.compute as pc

from nuboard.eventlog.parquet import current_parquet_meta, first_wall_time, read_table
from nuboard.eventlog.reader import RunReader, Scalar
from nuboard.files import layout

from .downsampling import (
    Axis,
    axis_from_arrays,
    reduce_axis,
    wrap_array,
)

DEFAULT_MAX_POINTS = 60_000_000
POINT_BYTES = 24                 # a point is a step, a wall time and a value: 8 bytes each
X_KINDS = ("step", "wall", "relative")
PathArg = Union[str, "os.PathLike[str]"]

# -- the cache ---------------------------------------------------------------------------------

class CachedSeries:
    """One scalar of one run and rank: steps (int64), walls and values (float64) pyarrow arrays.

    `first_wall` is the run's (this rank's) earliest wall time, the zero of relative time;
    `source` says where it was read from: "parquet" (data.parquet) or "logs".
    """

    def __init__(self, name: str, steps: pa.Array, walls: pa.Array, values: pa.Array,
                 first_wall: float | None, own_bytes: int, source: str = "logs"):
        self.name, self.source = name, source
        self.steps, self.walls, self.values = steps, walls, values
        self.first_wall = first_wall
        self.own_bytes = own_bytes
        self._axes: dict[str, Axis] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.values)

    @property
    def nbytes(self) -> int:
        """Memory this series holds of its own (slices of a shared table count nothing)."""
        return self.own_bytes + sum(a.nbytes for a in list(self._axes.values()))

    def axis(self, kind: str = "step") -> Axis:
        """The prepared Axis against 'step' or 'wall' ('relative' uses 'wall'); built once."""
        kind = "wall" if kind == "relative" else kind
        found = self._axes.get(kind)
        if found is not None:
            return found
        with self._lock:
            found = self._axes.get(kind)
            if found is None:
                if kind not in ("step", "wall"):
                    raise ValueError(f"x={kind!r} is not one of {', '.join(map(repr, X_KINDS))}.")
                x = self.steps if kind == "step" else self.walls
                found = self._axes[kind] = axis_from_arrays(x, self.values)
        return found

    def last(self) -> dict:
        """The last point logged: {"step", "value", "wall"}; value None when not finite."""
        if not len(self):
            return {"step": None, "value": None, "wall": None}
        value = self.values[-1].as_py()
        return {"step": self.steps[-1].as_py(),
                "value": value if value is not None and math.isfinite(value) else None,
                "wall": self.walls[-1].as_py()}


class _Entry:
    """One run folder and rank in the cache: where its scalars come from, and those loaded."""

    def __init__(self, run_dir: Path, rank: int):
        self.run_dir, self.rank = run_dir, rank
        self.lock = threading.Lock()
        self.source: str | None = None          # "parquet" or "logs"
        self.names: list[str] = []
        self.series: dict[str, CachedSeries] = {}
        self.stale: set[str] = set()
        self.first_wall: float | None = None
        self.reader: RunReader | None = None
        self.meta: bytes | None = None          # data.parquet's b"nuboard" metadata
        self.offsets: dict[str, list[int]] = {}
        self.columns: tuple | None = None       # data.parquet's step, wall_time, value
        self.base_bytes = 0
        self.avoid_parquet = False              # it failed to read: use the logs from now on

    @property
    def nbytes(self) -> int:
        return self.base_bytes + sum(s.nbytes for s in list(self.series.values()))

    def update(self, live: bool) -> None:
        """Load on first use; for a live run (or one that was), read what the logs gained since."""
        if self.source == "parquet" and live and \
                _parquet_meta(self.run_dir, self.rank) != self.meta:
            self.reset()
        elif self.source == "logs" and live and self.reader is None:
            self.reset()
        if self.source is None:
            self.load(live)
            return
        if self.source == "logs" and self.reader is not None:
            if self.reader.refresh():
                self.names = self.reader.names()
                self.stale.update(self.series)
            if not live:                       # it has stopped: settle, and let the reader go
                for name in self.names:
                    if name in self.stale or name not in self.series:
                        self.materialize(name)
                self.reader = None
                self.base_bytes = 0

    def reset(self) -> None:
        """Forget what was loaded (the lock stays)."""
        self.source, self.names, self.series, self.stale = None, [], {}, set()
        self.first_wall = self.reader = self.meta = self.columns = None
        self.offsets, self.base_bytes = {}, 0

    def load(self, live: bool) -> None:
        meta = None if self.avoid_parquet else _parquet_meta(self.run_dir, self.rank)
        if meta is not None:
            doc = json.loads(meta)
            self.source, self.meta = "parquet", meta
            self.offsets = doc.get("keys", {})
            self.names = list(self.offsets)
            self.first_wall = _parquet_first_wall(self.run_dir)
            return
        reader = RunReader(self.run_dir, self.rank)
        reader.refresh()
        self.source = "logs"
        found = reader.scalars()
        self.names = [n for n in reader.names() if n in found]
        for name, scalar in found.items():
            self.series[name] = _series_from_scalar(name, scalar, None)
        lows = [pc.min(s.walls).as_py() for s in self.series.values() if len(s)]
        lows = [w for w in lows if w is not None and math.isfinite(w)]
        self.first_wall = min(lows) if lows else None
        for s in self.series.values():
            s.first_wall = self.first_wall
        if live:
            self.reader = reader
            self.base_bytes = sum(len(s) for s in self.series.values()) * POINT_BYTES

    def get(self, name: str) -> CachedSeries | None:
        if self.source == "parquet":
            found = self.series.get(name)
            if found is None and name in self.offsets:
                found = self.series[name] = self.slice_parquet(name)
            return found
        if self.reader is not None and (name in self.stale or name not in self.series):
            self.materialize(name)
        return self.series.get(name)

    def materialize(self, name: str) -> None:
        """Copy one scalar out of the live reader (the resume rule applied) as pyarrow arrays."""
        self.stale.discard(name)
        found = self.reader.scalars([name]).get(name) if self.reader is not None else None
        if found is None:
            self.series.pop(name, None)
            return
        series = _series_from_scalar(name, found, self.first_wall)
        if len(series):
            low = pc.min(series.walls).as_py()
            if low is not None and math.isfinite(low) and \
                    (self.first_wall is None or low < self.first_wall):
                self.first_wall = low            # only when a late scalar starts earlier
                series.first_wall = low
        self.series[name] = series
        self.base_bytes = sum(len(s) for s in self.series.values()) * POINT_BYTES

    def slice_parquet(self, name: str) -> CachedSeries:
        if self.columns is None:
            try:                        # a regular file only: a FIFO there never blocks
                table = read_table(self.run_dir, self.meta)
            except Exception as exc:
                raise _Changed() from exc
            self.columns = tuple(_contiguous(table.column(c))
                                 for c in ("step", "wall_time", "value"))
            self.base_bytes = sum(c.nbytes for c in self.columns)
            if self.first_wall is None and len(self.columns[1]):
                self.first_wall = pc.min(self.columns[1]).as_py()
        start, n = self.offsets[name]
        steps, walls, values = (c.slice(start, n) for c in self.columns)
        return CachedSeries(name, steps, walls, values, self.first_wall, 0, "parquet")


def _contiguous(column: pa.ChunkedArray) -> pa.Array:
    """One array of a column (no copy when it is one chunk already)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


class _Changed(Exception):
    """data.parquet was replaced between the check and the read, or could not be read."""


def _series_from_scalar(name: str, scalar: Scalar, first_wall: float | None) -> CachedSeries:
    steps = wrap_array(scalar.steps, pa.int64())
    walls = wrap_array(scalar.wall_times, pa.float64())
    values = wrap_array(scalar.values, pa.float64())
    return CachedSeries(name, steps, walls, values, first_wall, len(values) * POINT_BYTES)


def _parquet_meta(run_dir: Path, rank: int) -> bytes | None:
    """data.parquet's raw metadata when it is current for this rank (compact's rule)."""
    found = current_parquet_meta(run_dir, rank)
    return None if found is None else found[0]


def _parquet_first_wall(run_dir: Path) -> float | None:
    """The least wall time in data.parquet, from its column statistics (no data read)."""
    return first_wall_time(run_dir)


class SeriesCache:
    """Runs' scalars as pyarrow arrays, keyed by (run folder, rank), least recently used out first.

    Thread-safe. A run is read once (data.parquet when current, else its event logs) and each
    scalar is turned into arrays when first asked for. With live=True, `get` reads what the
    logs gained since (cheap when nothing grew). Memory is bounded by `max_points` points of
    24 bytes (the run in use is kept even when it alone is larger), and the count of runs and
    ranks held by `max_runs`.
    """

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS, max_runs: int = 4096):
        self.max_points, self.max_runs = max_points, max_runs
        self._lock = threading.Lock()
        self._entries: "OrderedDict[tuple[str, int], _Entry]" = OrderedDict()
        self._bytes: dict[tuple[str, int], int] = {}

    def _entry(self, run_dir: PathArg, rank: int) -> tuple[tuple[str, int], _Entry]:
        key = (os.path.abspath(os.fspath(run_dir)), int(rank))
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(Path(key[0]), key[1])
                self._bytes[key] = 0
            self._entries.move_to_end(key)
        return key, entry

    def _account(self, key: tuple[str, int], entry: _Entry) -> None:
        with self._lock:
            if self._entries.get(key) is entry:
                self._bytes[key] = entry.nbytes
            limit = self.max_points * POINT_BYTES
            total = sum(self._bytes.values())
            while len(self._entries) > 1 and (total > limit or
                                              len(self._entries) > self.max_runs):
                old = next(iter(self._entries))
                if old == key:
                    self._entries.move_to_end(key)
                    old = next(iter(self._entries))
                self._entries.pop(old)
                total -= self._bytes.pop(old)

    def get(self, run_dir: PathArg, rank: int, name: str, *, live: bool = False,
            x: str | None = None) -> CachedSeries | None:
        """One scalar of a run and rank, or None when it has no such scalar.

        Args:
            live: the run may still be writing: read what its logs gained since last time.
            x: also prepare the axis for 'step', 'wall' or 'relative' (counted in the bound).
        """
        key, entry = self._entry(run_dir, rank)
        with entry.lock:
            entry.update(live)
            try:
                found = entry.get(name)
            except _Changed:                      # data.parquet changed or failed: the logs
                entry.reset()
                entry.avoid_parquet = True
                entry.update(live)
                found = entry.get(name)
        if found is not None and x is not None:
            found.axis(x)
        self._account(key, entry)
        return found

    def names(self, run_dir: PathArg, rank: int = 0, *, live: bool = False) -> list[str]:
        """The scalar names of a run and rank, in the order they were first logged."""
        key, entry = self._entry(run_dir, rank)
        with entry.lock:
            entry.update(live)
            found = list(entry.names)
        self._account(key, entry)
        return found

    def first_wall(self, run_dir: PathArg, rank: int = 0, *, live: bool = False) -> float | None:
        """The run's (rank's) earliest wall time: the zero of relative time."""
        key, entry = self._entry(run_dir, rank)
        with entry.lock:
            entry.update(live)
            found = entry.first_wall
        self._account(key, entry)
        return found

    def discard(self, run_dir: PathArg, rank: int | None = None) -> None:
        """Forget a run (all its ranks when rank is None), such as after it was deleted."""
        path = os.path.abspath(os.fspath(run_dir))
        with self._lock:
            for key in [k for k in self._entries if k[0] == path and rank in (None, k[1])]:
                self._entries.pop(key)
                self._bytes.pop(key)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
            self._bytes.clear()

    @property
    def points(self) -> int:
        """The memory held, in points of 24 bytes."""
        with self._lock:
            return sum(self._bytes.values()) // POINT_BYTES

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, item: tuple) -> bool:
        run_dir, rank = item
        with self._lock:
            return (os.path.abspath(os.fspath(run_dir)), int(rank)) in self._entries


def list_ranks(run_dir: PathArg) -> list[int]:
    """The ranks that have event logs in a run folder, ascending."""
    return layout.list_ranks(Path(run_dir))


def series_payload(cache: SeriesCache, run_dir: PathArg, rank: int, name: str, *,
                   x: str = "step", lo: float | None = None, hi: float | None = None,
                   buckets: int = 1000, live: bool = False) -> dict | None:
    """The JSON body of the chart data endpoint for one scalar; None when there is no such scalar.

    Args:
        x: 'step', 'wall' (epoch seconds) or 'relative' (seconds since first_wall); lo and hi
            are in the same unit.
        buckets: about the chart's width in pixels; at most 2 * buckets + 4 points are sent.
        live: the run may still be writing (see SeriesCache.get).

    Returns:
        {"x": [int | float] (ints for steps), "y": [float | None], "total", "in_range", "sent", "downsampled",
        "first_wall", "last": {"step", "value", "wall"}}; y is None where the value is NaN or
        +-Inf (and for a bucket with no finite value), which uPlot draws as a gap.
    """
    if x not in X_KINDS:
        raise ValueError(f"x={x!r} is not one of {', '.join(map(repr, X_KINDS))}.")
    series = cache.get(run_dir, rank, name, live=live, x=x)
    if series is None:
        return None
    shift = series.first_wall if x == "relative" and series.first_wall is not None else 0.0
    out = reduce_axis(series.axis(x), lo=None if lo is None else lo + shift,
                      hi=None if hi is None else hi + shift, buckets=buckets)
    xs = [v - shift for v in out.x] if shift else out.x
    return {"x": xs, "y": out.y, "total": len(series), "in_range": out.in_range,
            "sent": len(xs), "downsampled": out.downsampled, "first_wall": series.first_wall,
            "last": series.last()}
