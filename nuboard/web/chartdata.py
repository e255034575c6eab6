"""Chart data: runs' scalars kept as pyarrow arrays, and the chart endpoint's payload.

The Charts page asks for one scalar of one run and rank at a time, over an x range. A
SeriesCache loads each run once (data.parquet when it is current, else the event logs) and
keeps its scalars as pyarrow arrays; `series_payload` cuts the range and downsamples it
(`downsampling`: min and max per x-bucket, at their own x positions).

Four x axes: the step, the wall time (epoch seconds), and two in seconds from the run's start
(a Timeline per run and rank): 'relative' (wall time since the first point) and 'process'
(time while the run ran: each session goes on where the previous one's last point was, so a
resumed run's pause is left out). On both, a fork counts from its own start, without the
copy of its parent's points that its first session holds (recording/fork.py).
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

from nuboard.eventlog.parquet import current_parquet_meta, read_table
from nuboard.eventlog.reader import RunReader, Scalar, log_meta
from nuboard.files import layout

from .chart_xscalar import paired_axis, x_scalar
from .downsampling import (
    Axis,
    axis_from_arrays,
    reduce_axis,
    wrap_array,
)

DEFAULT_MAX_POINTS = 60_000_000
POINT_BYTES = 24                 # a point is a step, a wall time and a value: 8 bytes each
X_KINDS = ("step", "wall", "relative", "process")
PathArg = Union[str, "os.PathLike[str]"]

# -- the cache ---------------------------------------------------------------------------------

Span = tuple[int, "float | None", "float | None", bool]     # session, first wall, last wall, copied


class Timeline:
    """Where one rank's sessions lie in time: the zero of the relative axes, and each session's
    shift on the process axis (its x there is wall time minus the shift).

    The sessions that hold a fork's copy of its parent's points (`copied`) count on neither;
    of the others, the first starts at `zero` (its earliest wall time), and each next one
    where the one before it ended: its first point's x is the previous session's last.
    """
    __slots__ = ("copied", "zero", "shifts")

    def __init__(self, spans: list[Span]):
        self.copied = frozenset(number for number, _, _, copied in spans if copied)
        own = [(n, a, b) for n, a, b, copied in sorted(spans)
               if not copied and a is not None and b is not None]
        self.zero: float | None = min((a for _, a, _ in own), default=None)
        self.shifts: dict[int, float] = {}
        end = None
        for number, first, last in own:
            shift = self.zero if end is None else first - end
            self.shifts[number] = shift
            end = max(last - shift, end if end is not None else -math.inf)

    def _key(self) -> tuple:
        return self.copied, self.zero, self.shifts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeline) and self._key() == other._key()

    __hash__ = None      # type: ignore[assignment]


NO_TIMELINE = Timeline([])


class CachedSeries:
    """One scalar of one run and rank: steps (int64), walls and values (float64) pyarrow arrays.

    `starts` says where each session's points begin ([(session, first index)], in order) and
    `timeline` where the sessions lie in time (both for the relative axes); `first_wall` is
    the zero of relative time; `source` says where it was read from: "parquet" (data.parquet)
    or "logs".
    """

    def __init__(self, name: str, steps: pa.Array, walls: pa.Array, values: pa.Array,
                 starts: list[tuple[int, int]], timeline: Timeline, own_bytes: int,
                 source: str = "logs"):
        self.name, self.source = name, source
        self.steps, self.walls, self.values = steps, walls, values
        self.starts, self.timeline = starts, timeline
        self.own_bytes = own_bytes
        self._axes: dict[str, tuple[Axis, float]] = {}
        self._paired: dict[str, tuple[CachedSeries, int, Axis]] = {}   # x scalar -> its axis
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.values)

    @property
    def first_wall(self) -> float | None:
        """The zero of relative time: the earliest wall time of the run's own sessions."""
        return self.timeline.zero

    @property
    def nbytes(self) -> int:
        """Memory this series holds of its own (slices of a shared table count nothing; an
        Axis that serves several x kinds counts once)."""
        axes = {id(a): a for a, _ in list(self._axes.values())}
        paired = sum(a.nbytes + len(a) * 16 for _, _, a in list(self._paired.values()))
        return self.own_bytes + sum(a.nbytes for a in axes.values()) + paired

    def paired(self, other: "CachedSeries") -> Axis:
        """The Axis of this scalar against another logged scalar, paired by step
        (chart_xscalar); kept while the other series and this one are the same."""
        with self._lock:
            found = self._paired.get(other.name)
            if found is not None and found[0] is other and found[1] == len(other):
                return found[2]
        axis = paired_axis(self.steps, self.values, other.steps, other.values)
        with self._lock:
            self._paired[other.name] = (other, len(other), axis)
        return axis

    def axis(self, kind: str = "step") -> Axis:
        """The prepared Axis for an x kind (X_KINDS); built once. On the relative axes its x
        is offset: see view."""
        return self.view(kind)[0]

    def view(self, kind: str = "step") -> tuple[Axis, float]:
        """(Axis, shift): the points against x kind `kind` are the Axis's x minus the shift
        (0 for 'step' and 'wall'). Built once; 'relative' and 'process' share the Axis
        of 'wall' while they can (one session of the run's own, no fork's copy)."""
        found = self._axes.get(kind)
        if found is not None:
            return found
        if kind not in X_KINDS:
            raise ValueError(f"x={kind!r} is not one of {', '.join(map(repr, X_KINDS))}.")
        with self._lock:
            found = self._axes.get(kind)
            if found is None:
                found = self._axes[kind] = self._build(kind)
        return found

    def rebind(self, timeline: Timeline) -> None:
        """Take the run's new Timeline (a live run began a session): the relative axes go."""
        with self._lock:
            if timeline != self.timeline:
                self.timeline = timeline
                for kind in ("relative", "process"):
                    self._axes.pop(kind, None)

    def _build(self, kind: str) -> tuple[Axis, float]:
        """The Axis and shift of one x kind (called with the lock held)."""
        if kind in ("step", "wall"):
            x = self.steps if kind == "step" else self.walls
            return axis_from_arrays(x, self.values), 0.0
        timeline = self.timeline
        zero = timeline.zero if timeline.zero is not None else 0.0
        own = [(s, start) for s, start in self.starts if s not in timeline.copied]
        own_from = own[0][1] if own else len(self)     # a fork's copy is its first session
        n = len(self) - own_from
        shifts = [timeline.shifts.get(s, zero) for s, _ in own]
        if kind == "process" and len(set(shifts)) > 1:
            import numpy as np

            counts = np.diff(np.asarray([start - own_from for _, start in own] + [n], np.int64))
            walls = self.walls.slice(own_from, n).to_numpy(zero_copy_only=False)
            x = pa.array(walls - np.repeat(np.asarray(shifts, np.float64), counts))
            axis = axis_from_arrays(x, self.values.slice(own_from, n))
            axis.nbytes += x.nbytes
            return axis, 0.0
        if "relative" not in self._axes:
            if own_from == 0:
                if "wall" not in self._axes:
                    self._axes["wall"] = self._build("wall")
                axis = self._axes["wall"][0]
            else:
                axis = axis_from_arrays(self.walls.slice(own_from, n),
                                        self.values.slice(own_from, n))
            self._axes["relative"] = (axis, zero)
        axis = self._axes["relative"][0]
        return (axis, zero) if kind == "relative" else (axis, shifts[0] if shifts else zero)

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
        self.timeline: Timeline = NO_TIMELINE
        self.reader: RunReader | None = None
        self.meta: bytes | None = None          # data.parquet's b"nuboard" metadata
        self.offsets: dict[str, list[int]] = {}
        self.starts: dict | None = None         # data.parquet's sessions' "starts"
        self.columns: tuple | None = None       # data.parquet's step, wall_time, value
        self.span: Span | None = None           # its one session, when it has no "sessions"
        self.base_bytes = 0
        self.avoid_parquet = False              # it failed to read: use the logs from now on

    @property
    def first_wall(self) -> float | None:
        return self.timeline.zero

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
                self.retime(Timeline(_spans(self.reader)))
            if not live:                       # it has stopped: settle, and let the reader go
                for name in self.names:
                    if name in self.stale or name not in self.series:
                        self.materialize(name)
                self.reader = None
                self.base_bytes = 0

    def retime(self, timeline: Timeline) -> None:
        """The run's sessions changed (a live run resumed): its series take the new Timeline."""
        if timeline != self.timeline:
            self.timeline = timeline
            for series in self.series.values():
                series.rebind(timeline)

    def reset(self) -> None:
        """Forget what was loaded (the lock stays)."""
        self.source, self.names, self.series, self.stale = None, [], {}, set()
        self.reader = self.meta = self.columns = self.starts = self.span = None
        self.timeline = NO_TIMELINE
        self.offsets, self.base_bytes = {}, 0

    def load(self, live: bool) -> None:
        meta = None if self.avoid_parquet else _parquet_meta(self.run_dir, self.rank)
        doc = json.loads(meta) if meta is not None else None
        sessions = doc.get("sessions") if doc is not None else None
        logs = layout.list_logs(self.run_dir, self.rank) if doc is not None else []
        if doc is not None and (sessions is not None or len(logs) == 1):
            # a file of before the sessions were kept in it is used for one session only
            self.source, self.meta = "parquet", meta
            self.offsets = doc.get("keys", {})
            self.names = list(self.offsets)
            if sessions is not None:
                try:
                    self.timeline = Timeline(_checked_spans(sessions.get("spans")))
                    self.starts = dict(sessions.get("starts"))
                except (AttributeError, TypeError, ValueError):
                    self.avoid_parquet = True              # of the wrong shape: the logs
                    self.reset()
                    self.load(live)
            return
        reader = RunReader(self.run_dir, self.rank)
        reader.refresh()
        self.source = "logs"
        self.timeline = Timeline(_spans(reader))
        found = reader.scalars_by_session()
        self.names = [n for n in reader.names() if n in found]
        for name, (scalar, starts) in found.items():
            self.series[name] = _series_from_scalar(name, scalar, starts, self.timeline)
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
        found = self.reader.scalars_by_session([name]).get(name) \
            if self.reader is not None else None
        if found is None:
            self.series.pop(name, None)
            return
        self.series[name] = _series_from_scalar(name, found[0], found[1], self.timeline)
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
            if self.starts is None:                # one session, of a file without them
                logs = layout.list_logs(self.run_dir, self.rank)
                if len(logs) != 1:                 # a session began since: the logs
                    raise _Changed()
                self.span = self.one_span(logs[0][1], logs[0][2])
                self.timeline = Timeline([self.span])
        start, n = self.offsets[name]
        steps, walls, values = (c.slice(start, n) for c in self.columns)
        if self.starts is None:
            starts = [(self.span[0], 0)] if n else []
        else:
            try:
                starts = _checked_starts(self.starts.get(name, []), n)
            except (TypeError, ValueError) as exc:
                raise _Changed() from exc
        return CachedSeries(name, steps, walls, values, starts, self.timeline, 0, "parquet")

    def one_span(self, number: int, path: Path) -> Span:
        """The one session of a data.parquet written before sessions were kept in it: its
        number, first and last wall times (each scalar's first and last point, as
        RunReader.sessions), and whether it is a fork's copied history (its log's META)."""
        walls = self.columns[1]
        firsts = [walls[start].as_py() for start, n in self.offsets.values() if n]
        lasts = [walls[start + n - 1].as_py() for start, n in self.offsets.values() if n]
        copied = (log_meta(path) or {}).get("forked_from") is not None
        return (number, min(firsts, default=None), max(lasts, default=None), copied)


def _spans(reader: RunReader) -> list[Span]:
    return [(s.number, s.first_wall, s.last_wall, s.copied) for s in reader.sessions()]


def _checked_spans(spans: object) -> list[Span]:
    """data.parquet's sessions' "spans", checked: [[int, float | None, float | None, bool]]."""
    out = []
    for number, first, last, copied in spans:               # type: ignore[union-attr]
        if type(number) is not int or type(copied) is not bool or \
                any(w is not None and type(w) is not float for w in (first, last)):
            raise ValueError(f"a session span {[number, first, last, copied]!r:.200}")
        out.append((number, first, last, copied))
    return out


def _checked_starts(starts: object, n: int) -> list[tuple[int, int]]:
    """One scalar's sessions' first indices from data.parquet, checked against its n points."""
    out = [(session, start) for session, start in starts]   # type: ignore[union-attr]
    at = -1
    for session, start in out:
        if type(session) is not int or type(start) is not int or not at < start < n:
            raise ValueError(f"session starts {starts!r:.200} for {n} points")
        at = start
    if n and (not out or out[0][1] != 0):
        raise ValueError(f"session starts {starts!r:.200} do not begin at 0")
    return out


def _contiguous(column: pa.ChunkedArray) -> pa.Array:
    """One array of a column (no copy when it is one chunk already)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


class _Changed(Exception):
    """data.parquet was replaced between the check and the read, or could not be read."""


def _series_from_scalar(name: str, scalar: Scalar, starts: list[tuple[int, int]],
                        timeline: Timeline) -> CachedSeries:
    steps = wrap_array(scalar.steps, pa.int64())
    walls = wrap_array(scalar.wall_times, pa.float64())
    values = wrap_array(scalar.values, pa.float64())
    return CachedSeries(name, steps, walls, values, starts, timeline, len(values) * POINT_BYTES)


def _parquet_meta(run_dir: Path, rank: int) -> bytes | None:
    """data.parquet's raw metadata when it is current for this rank (compact's rule)."""
    found = current_parquet_meta(run_dir, rank)
    return None if found is None else found[0]


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
            x: also prepare the axis for this x kind (X_KINDS; counted in the bound).
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
        x: 'step', 'wall' (epoch seconds), 'relative' (seconds since first_wall), 'process'
            (seconds while the run ran; see Timeline) or 'scalar:NAME' (another scalar's
            values, paired by step: chart_xscalar; None when the run has no such scalar);
            lo and hi are in the same unit.
        buckets: about the chart's width in pixels; at most 2 * buckets + 4 points are sent.
        live: the run may still be writing (see SeriesCache.get).

    Returns:
        {"x": [int | float] (ints for steps), "y": [float | None], "total", "in_range", "sent",
        "downsampled", "first_wall", "last": {"step", "value", "wall"}}; y is None where the
        value is NaN or +-Inf (and for a bucket with no finite value), which uPlot draws as a
        gap. "total" counts the points on this axis: on the relative axes, a fork's copy of its
        parent's points is left out.
    """
    x_name = x_scalar(x)
    if x_name is None and x not in X_KINDS:
        raise ValueError(f"x={x!r} is not one of {', '.join(map(repr, X_KINDS))} "
                         f"or scalar:NAME.")
    series = cache.get(run_dir, rank, name, live=live, x=None if x_name else x)
    if series is None:
        return None
    if x_name is not None:
        other = cache.get(run_dir, rank, x_name, live=live)
        if other is None:
            return None
        axis, shift = series.paired(other), 0.0
    else:
        axis, shift = series.view(x)
    out = reduce_axis(axis, lo=None if lo is None else lo + shift,
                      hi=None if hi is None else hi + shift, buckets=buckets)
    xs = [v - shift for v in out.x] if shift else out.x
    return {"x": xs, "y": out.y, "total": len(axis), "in_range": out.in_range,
            "sent": len(xs), "downsampled": out.downsampled, "first_wall": series.first_wall,
            "last": series.last()}
