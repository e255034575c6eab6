"""Reading a run's scalars back from its event logs: sessions merged by the resume rule, live."""
from __future__ import annotations

import os
from array import array
from pathlib import Path
from typing import Iterable, NamedTuple

from nuboard.files import layout, runjson
from nuboard.files.names import RESERVED_DEFAULTS

from .logfile import LogReader, ReadStats


class Scalar(NamedTuple):
    """One scalar's points: steps (array of int64), wall times and values (arrays of float64).

    The arrays support the buffer protocol: numpy.frombuffer(s.values) costs no copy.
    """
    steps: array
    wall_times: array
    values: array

    def __len__(self) -> int:   # type: ignore[override]
        return len(self.values)


class _Part:
    """One session's points of one scalar. `lent`: scalars() handed these very arrays out, so
    the next extend copies them first and what the caller holds stays as it was."""
    __slots__ = ("steps", "walls", "values", "lent")

    def __init__(self, steps: array, walls: array, values: array):
        self.steps, self.walls, self.values = steps, walls, values
        self.lent = False

    def extend(self, steps: array, walls: array, values: array) -> None:
        if self.lent:
            self.steps, self.walls = array("q", self.steps), array("d", self.walls)
            self.values, self.lent = array("d", self.values), False
        self.steps.extend(steps)
        self.walls.extend(walls)
        self.values.extend(values)


_EMPTY = _Part(array("q"), array("d"), array("d"))


class RunReader:
    """Reads one rank of a run from its event logs, and keeps up as they grow.

    reader = RunReader(run.path); reader.refresh(); reader.scalars(["train/loss"])
    Call refresh() again later to read only what was appended since (live charts).
    """

    def __init__(self, path: "str | os.PathLike[str]", rank: int = 0,
                 sessions_below: int | None = None):
        self.path = Path(path)
        self.rank = rank
        self.sessions_below = sessions_below
        self._own: frozenset[str] | None = None    # the run's prefixes, from run.json
        self._readers: dict[int, LogReader] = {}
        self._parts: dict[int, dict[str, _Part]] = {}

    def refresh(self) -> bool:
        """Read what was appended to the logs since the last call; True when anything was."""
        grew = False
        for _, session, path in layout.list_logs(self.path, self.rank):
            if self.sessions_below is not None and session >= self.sessions_below:
                continue
            reader = self._readers.get(session)
            if reader is None:
                reader = self._readers[session] = LogReader(path)
                self._parts[session] = {}
            parts = self._parts[session]
            for chunk in reader.read_iter():
                grew = True
                part = parts.get(chunk.name)
                if part is None:
                    parts[chunk.name] = _Part(chunk.steps, chunk.walls, chunk.values)
                else:
                    part.extend(chunk.steps, chunk.walls, chunk.values)
        return grew

    @property
    def stats(self) -> ReadStats:
        """What the readers met, summed over the session files."""
        total = ReadStats()
        for reader in self._readers.values():
            s = reader.stats
            total.records += s.records
            total.corrupt_records += s.corrupt_records
            total.bad_records += s.bad_records
            total.torn_tail_bytes += s.torn_tail_bytes
            total.header_ok = total.header_ok and s.header_ok
            total.problems.extend(s.problems)
        return total

    def names(self) -> list[str]:
        """Every scalar name of this rank, in order of first appearance."""
        seen: dict[str, None] = {}
        for session in sorted(self._parts):
            for name in self._parts[session]:
                seen.setdefault(name, None)
        return list(seen)

    def sources(self) -> list[tuple[str, int]]:
        """The log files read and how many bytes of each were read."""
        return [(r.path.name, r.offset) for _, r in sorted(self._readers.items())]

    def last_steps(self) -> dict[str, int]:
        """Each scalar's last step, after merging sessions."""
        out = {}
        for name, s in self.scalars().items():
            if len(s.steps):
                out[name] = max(s.steps)
        return out

    def scalars(self, keys: Iterable[str] | None = None) -> dict[str, Scalar]:
        """The scalars, each merged over sessions by the resume rule.

        For each of the script's scalars, the first step a session logged hides that
        scalar's points of earlier sessions at that step or later. The run's own scalars
        (under its system and timing prefixes) hide nothing: every session's points are
        kept, in session order.

        A scalar that one session alone logged comes back as the reader's own arrays, not a
        copy (10 M points are 240 MB to copy): the reader copies them before it extends them,
        so they never change under the caller, who copies them before changing them.
        """
        wanted = self.names() if keys is None else list(keys)
        if self._own is None:
            self._own = own_prefixes(self.path)
        out = {}
        for name in wanted:
            own = name.split("/", 1)[0] in self._own
            found = [self._parts[session][name] for session in sorted(self._parts)
                     if len(self._parts[session].get(name, _EMPTY).values)]
            if len(found) == 1:
                found[0].lent = True
                out[name] = Scalar(found[0].steps, found[0].walls, found[0].values)
                continue
            merged: _Part | None = None
            for part in found:
                if merged is None:
                    merged = _Part(array("q", part.steps), array("d", part.walls),
                                   array("d", part.values))
                    continue
                if not own:
                    _hide_from(merged, part.steps[0])
                merged.steps.extend(part.steps)
                merged.walls.extend(part.walls)
                merged.values.extend(part.values)
            if merged is not None:
                out[name] = Scalar(merged.steps, merged.walls, merged.values)
        return out


def own_prefixes(run_dir: Path) -> frozenset[str]:
    """The run's system and timing prefixes from its run.json (the defaults when unreadable)."""
    try:
        found = frozenset(p for p in runjson.read_run(run_dir)["prefixes"].values()
                          if isinstance(p, str))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        found = frozenset()
    return found or frozenset(RESERVED_DEFAULTS)


def _hide_from(merged: _Part, first: int) -> None:
    """Drop the points at step `first` or later (a later session takes over from there)."""
    steps = merged.steps
    if not len(steps) or max(steps) < first:
        return
    keep = [i for i, s in enumerate(steps) if s < first]
    if len(keep) == len(steps):
        return
    if keep == list(range(len(keep))):
        del steps[len(keep):]
        del merged.walls[len(keep):]
        del merged.values[len(keep):]
        return
    merged.steps = array("q", (steps[i] for i in keep))
    merged.walls = array("d", (merged.walls[i] for i in keep))
    merged.values = array("d", (merged.values[i] for i in keep))
