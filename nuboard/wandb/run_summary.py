"""run.summary: one value per key that the run page's Summary card shows, W&B's way: the last
value logged of each key, unless the script assigns one (summary["best"] = 0.93), or
define_metric(summary="min,max") asks for aggregates ({"min": ..., "max": ...}).

It is written to run.json's `summary` on each assignment and at finish (not on every log: a
log stays a buffer append)."""
from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping
from typing import Any

AGGREGATES = ("min", "max", "mean", "first", "last", "best", "none", "copy")


def plain(value: Any) -> Any:
    """A value as run.json holds it (numpy scalars as numbers, NaN as 'nan'), as a config."""
    if type(value) is float and math.isfinite(value) or type(value) in (int, bool):
        return value                        # the common case, without to_config's JSON check
    from nuboard.recording.run_config import to_config
    return to_config({"v": value})["v"]


class Summary(Mapping):
    """Dict-like: summary[key], summary.key, summary[key] = v, update, get, keys, items."""

    def __init__(self, data: dict, save: "Callable[[dict], None] | None") -> None:
        object.__setattr__(self, "_data", dict(data))
        object.__setattr__(self, "_save", save)
        object.__setattr__(self, "_stats", {})      # key -> [count, total, first, min, max]

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(f"run.summary has no key {key!r}") from None

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __setattr__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        del self._data[key]
        self.save()

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def as_dict(self) -> dict:
        return dict(self._data)

    def __repr__(self) -> str:
        return f"run.summary({self._data!r:.200})"

    def update(self, d: "dict | None" = None, **kwargs: Any) -> None:
        """Set keys (they stay until the key is logged again), and write run.json."""
        new = {**(d or {}), **kwargs}
        for key, value in new.items():
            if not isinstance(key, str):
                raise TypeError(f"run.summary keys are str, not {type(key).__name__} ({key!r:.60})")
            self._data[key] = plain(value)
        self.save()

    def save(self) -> None:
        if self._save is not None:
            self._save(dict(self._data))

    def observe(self, key: str, value: Any, modes: "tuple[str, ...] | None", goal: str | None) -> None:
        """A logged value of a scalar or text: the last value, or the aggregates `modes`
        (define_metric's summary) of every value of this run so far."""
        value = plain(value)
        if not modes or "copy" in modes:
            self._data[key] = value
            return
        if "none" in modes:
            self._data.pop(key, None)
            return
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number):
            return
        stats = self._stats.get(key)
        if stats is None:
            stats = self._stats[key] = [0, 0.0, number, number, number]
        stats[0] += 1
        stats[1] += number
        stats[3], stats[4] = min(stats[3], number), max(stats[4], number)
        out = {}
        for mode in modes:
            if mode == "min":
                out["min"] = stats[3]
            elif mode == "max":
                out["max"] = stats[4]
            elif mode == "mean":
                out["mean"] = stats[1] / stats[0]
            elif mode == "first":
                out["first"] = stats[2]
            elif mode == "last":
                out["last"] = number
            elif mode == "best":
                out["best"] = stats[4] if goal == "maximize" else stats[3]
        self._data[key] = out


def matches(pattern: str, key: str) -> bool:
    """define_metric's name: a key, or a glob ('val/*')."""
    return key == pattern or (any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(key, pattern))
