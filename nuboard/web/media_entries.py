"""The media entries the viewer's panels draw: each run's entries by key, read from its logs
once and kept while the logs are unchanged, and which entry of each run a step shows.

Reading is eventlog/media_read.rank_media's (the logs' records only, never a media file); this
module adds a cache keyed by the logs' sizes and mtimes, so a slider that moves over a panel of
12 runs costs a stat per log, and the step rule: at step S, each run shows its entries at the
last step it logged at or before S, else (every step of the run is after S) its first step.
"""
from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from nuboard.eventlog.media_read import MediaEntry, rank_media
from nuboard.files import layout

CACHED_RUNS = 512           # (run folder, rank) pairs kept
READ_WAIT = 10.0            # seconds a request waits for a read under way before looking again


def logs_stamp(folder: Path, rank: int) -> tuple:
    """What changes when a rank's logs change: each log's name, size and mtime."""
    stamp = []
    for _, session, path in layout.list_logs(folder, rank):
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamp.append((session, st.st_size, st.st_mtime_ns))
    return tuple(stamp)


class MediaCache:
    """Each (run folder, rank)'s media entries grouped by key (in step order), read again only
    when its logs changed (logs_stamp); the least recently used are dropped past `size`.
    A read already under way (warm() on the page's request, or another request) is waited
    for, not done twice."""

    def __init__(self, size: int = CACHED_RUNS):
        self._size = size
        self._lock = threading.Lock()
        # (folder, rank) -> (logs' stamp, entries by key, what derived() made of them)
        self._items: OrderedDict[tuple[str, int], tuple[tuple, dict[str, list[MediaEntry]], dict]] = OrderedDict()
        self._reading: dict[tuple[str, int], threading.Event] = {}

    def by_key(self, folder: Path, rank: int = 0) -> dict[str, list[MediaEntry]]:
        """{key: [entries, step order]} of the run's rank (empty for a run without media)."""
        where = (str(folder), rank)
        stamp = logs_stamp(folder, rank)
        while True:
            with self._lock:
                hit = self._items.get(where)
                if hit is not None and hit[0] == stamp:
                    self._items.move_to_end(where)
                    return hit[1]
                pending = self._reading.get(where)
                if pending is None:
                    pending = self._reading[where] = threading.Event()
                    break
            pending.wait(READ_WAIT)          # then look again: it is most likely there now
        try:
            grouped: dict[str, list[MediaEntry]] = {}
            if stamp:
                for entry in rank_media(folder, rank):
                    grouped.setdefault(entry.key, []).append(entry)
            with self._lock:
                self._items[where] = (stamp, grouped, {})
                self._items.move_to_end(where)
                while len(self._items) > self._size:
                    self._items.popitem(last=False)
            return grouped
        finally:
            with self._lock:
                self._reading.pop(where, None)
            pending.set()

    def derived(self, folder: Path, rank: int, name: Hashable,
                make: Callable[[dict[str, list[MediaEntry]]], Any]) -> Any:
        """make(by_key(folder, rank)), kept under `name` with those entries until the logs
        change: what is computed from every entry of a key (a histogram's distribution)."""
        grouped = self.by_key(folder, rank)
        with self._lock:
            item = self._items.get((str(folder), rank))
            memo = item[2] if item is not None and item[1] is grouped else None
            if memo is not None and name in memo:
                return memo[name]
        value = make(grouped)
        if memo is not None:
            with self._lock:
                memo[name] = value
        return value

    def warm(self, folders: Sequence[Path], rank: int = 0) -> None:
        """Read these runs' entries on a thread, while the browser loads the page whose panels
        will ask for them (their requests then wait for this read, or find it done)."""
        def read_all() -> None:
            for folder in folders:
                try:
                    self.by_key(folder, rank)
                except Exception:          # the panel's own request reads it again, and says why
                    pass
        threading.Thread(target=read_all, daemon=True, name="nuboard-media-warm").start()


def union_steps(step_lists: Sequence[Sequence[int]]) -> list[int]:
    """Every step any run logged the key at, sorted: the positions of a panel's slider."""
    return sorted({s for steps in step_lists for s in steps})


def nearest_step(steps: Sequence[int], at: int) -> int | None:
    """The step a run shows at slider step `at`: its last step at or before `at`, else its
    first (all after `at`); None for a run that never logged the key. steps: sorted."""
    if not steps:
        return None
    i = bisect.bisect_right(steps, at)
    return steps[i - 1] if i else steps[0]


def entries_at(entries: Sequence[MediaEntry], step: int) -> list[MediaEntry]:
    """The entries logged at exactly `step` (several when the key was logged more than once
    there), in the order logged; entries in step order."""
    steps = [e.step for e in entries]
    return list(entries[bisect.bisect_left(steps, step):bisect.bisect_right(steps, step)])


def slider_step(steps: Sequence[int], index: int | None, step: int | None) -> int | None:
    """The step a panel shows: `step` when given, else the `index`-th of the union (clamped),
    else the last; None when no run logged the key."""
    if step is not None:
        return step
    if not steps:
        return None
    if index is None:
        return steps[-1]
    return steps[min(max(index, 0), len(steps) - 1)]
