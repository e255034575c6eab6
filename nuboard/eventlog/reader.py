"""Reading a run's scalars back from its event logs: sessions merged by the resume rule, live."""
from __future__ import annotations

import bisect
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
        """Each scalar's and media key's last step, after merging sessions."""
        out = {}
        for name, s in self.scalars().items():
            if len(s.steps):
                out[name] = max(s.steps)
        for _, doc in self.media():
            out[doc["key"]] = max(out.get(doc["key"], -1), doc["step"])
        return out

    def media(self, keys: Iterable[str] | None = None) -> list[tuple[int, dict]]:
        """The media records, (session, record) each, merged over sessions by the resume rule
        (per key, the first step a session logged hides earlier sessions' entries at that step
        or later), ordered by key, then step, then as logged."""
        wanted = None if keys is None else set(keys)
        by_key: dict[str, list[tuple[int, dict]]] = {}
        for session in sorted(self._readers):
            firsts: dict[str, int] = {}
            for doc in self._readers[session].media:
                key = doc["key"]
                if wanted is not None and key not in wanted:
                    continue
                if key not in firsts:
                    firsts[key] = doc["step"]
                    earlier = by_key.get(key)
                    if earlier:
                        by_key[key] = [e for e in earlier if e[1]["step"] < doc["step"]]
                by_key.setdefault(key, []).append((session, doc))
        out: list[tuple[int, dict]] = []
        for key in sorted(by_key):
            out.extend(sorted(by_key[key], key=lambda e: e[1]["step"]))
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
        return {name: s for name, (s, _) in self.scalars_by_session(keys).items()}

    def scalars_by_session(self, keys: Iterable[str] | None = None
                           ) -> dict[str, tuple[Scalar, list[tuple[int, int]]]]:
        """As scalars(), each with where its sessions' points begin: [(session, first index)],
        in session order, one pair per session that kept points (the merged arrays hold each
        session's points together, in session order)."""
        wanted = self.names() if keys is None else list(keys)
        if self._own is None:
            self._own = own_prefixes(self.path)
        out = {}
        for name in wanted:
            own = name.split("/", 1)[0] in self._own
            found = [(session, self._parts[session][name]) for session in sorted(self._parts)
                     if len(self._parts[session].get(name, _EMPTY).values)]
            if len(found) == 1:
                session, part = found[0]
                part.lent = True
                out[name] = (Scalar(part.steps, part.walls, part.values), [(session, 0)])
                continue
            merged: _Part | None = None
            counts: list[list[int]] = []             # [session, points kept], in order
            for session, part in found:
                if merged is None:
                    merged = _Part(array("q", part.steps), array("d", part.walls),
                                   array("d", part.values))
                else:
                    if not own:
                        kept = _hide_from(merged, part.steps[0])
                        if kept is not None:
                            _recount(counts, kept)
                    merged.steps.extend(part.steps)
                    merged.walls.extend(part.walls)
                    merged.values.extend(part.values)
                counts.append([session, len(part.values)])
            if merged is not None:
                starts, at = [], 0
                for session, n in counts:
                    if n:
                        starts.append((session, at))
                    at += n
                out[name] = (Scalar(merged.steps, merged.walls, merged.values), starts)
        return out

    def sessions(self) -> list["Session"]:
        """The sessions read, in order: each one's META record and the wall times of its
        first and last points (the least first and the greatest last over its scalars, in
        the order logged; None when it logged none)."""
        out = []
        for session in sorted(self._parts):
            parts = [p for p in self._parts[session].values() if len(p.walls)]
            first = min(p.walls[0] for p in parts) if parts else None
            last = max(p.walls[-1] for p in parts) if parts else None
            out.append(Session(session, self._readers[session].meta, first, last))
        return out


class Session(NamedTuple):
    """One session of a rank: its number, its log's META record (None when unread), and the
    wall times of its first and last points."""
    number: int
    meta: dict | None
    first_wall: float | None
    last_wall: float | None

    @property
    def copied(self) -> bool:
        """Whether it holds a fork's copy of its parent's points (recording/fork.py)."""
        return isinstance(self.meta, dict) and self.meta.get("forked_from") is not None


def log_meta(path: "str | os.PathLike[str]") -> dict | None:
    """The META record of one event log, reading no further than its first points."""
    reader = LogReader(path)
    chunks = reader.read_iter()
    try:
        next(chunks, None)
    finally:
        chunks.close()
    return reader.meta


def own_prefixes(run_dir: Path) -> frozenset[str]:
    """The run's system and timing prefixes from its run.json (the defaults when unreadable)."""
    try:
        found = frozenset(p for p in runjson.read_run(run_dir)["prefixes"].values()
                          if isinstance(p, str))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        found = frozenset()
    return found or frozenset(RESERVED_DEFAULTS)


def _hide_from(merged: _Part, first: int) -> "int | list[int] | None":
    """Drop the points at step `first` or later (a later session takes over from there).

    Returns what was kept: None (all of it), a count (the first points), or their indices.
    """
    steps = merged.steps
    if not len(steps) or max(steps) < first:
        return None
    keep = [i for i, s in enumerate(steps) if s < first]
    if len(keep) == len(steps):
        return None
    if keep == list(range(len(keep))):
        del steps[len(keep):]
        del merged.walls[len(keep):]
        del merged.values[len(keep):]
        return len(keep)
    merged.steps = array("q", (steps[i] for i in keep))
    merged.walls = array("d", (merged.walls[i] for i in keep))
    merged.values = array("d", (merged.values[i] for i in keep))
    return keep


def _recount(counts: list[list[int]], kept: "int | list[int]") -> None:
    """Each session's count of points after _hide_from kept `kept` of the merged ones."""
    at = 0
    for entry in counts:
        start, end = at, at + entry[1]
        if isinstance(kept, int):
            entry[1] = max(0, min(end, kept) - start)
        else:
            entry[1] = bisect.bisect_left(kept, end) - bisect.bisect_left(kept, start)
        at = end
