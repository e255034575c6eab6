"""What an importer reads from another tracker (SourceRun, Series, MediaPoint) and what an import
did (ImportResult).

Standard library only: `nuboard.importers` imports this module, and neither TensorBoard nor MLflow.
"""
from __future__ import annotations

import math
import os
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nuboard.errors import NuBoardError


class ImportSourceError(NuBoardError, ValueError):
    """The source of an import cannot be read: no event files, a URI MLflow cannot open."""


class UnreadableRunError(NuBoardError, ValueError):
    """One run of the source cannot be imported exactly; the import skips it and goes on."""


MAX_STEP = (1 << 63) - 1              # NuBoard's steps are int64
LATEST = 253402300800.0               # 10000-01-01: a run's start and end are dates up to 9999


@dataclass
class Series:
    """The points of one scalar as the source has them: its own name, steps, wall times, values.

    `sessions`: each point's session of the NuBoard run (see SourceRun.sessions), in order
    and never decreasing; empty when the run has one session.
    """
    name: str
    steps: array = field(default_factory=lambda: array("q"))
    walls: array = field(default_factory=lambda: array("d"))
    values: array = field(default_factory=lambda: array("d"))
    sessions: array = field(default_factory=lambda: array("i"))

    def add(self, step: int, wall: float, value: float) -> None:
        self.steps.append(step)
        self.walls.append(wall)
        self.values.append(value)


@dataclass
class MediaPoint:
    """One media entry as the source has it: its own name (a TensorBoard tag, an MLflow image key
    or artifact path), step, wall time, and the entry: a nuboard.media object (Image, Histogram,
    Text, Table), or a function making one when the run is written (a file read only then).
    `kind` is the entry's kind ("image", "histogram", "text", "table"), for the notes;
    `session` the session of the NuBoard run it is written in (see SourceRun.sessions)."""
    name: str
    step: int
    wall: float
    kind: str
    value: Any
    session: int = 0


@dataclass
class SourceRun:
    """One run of the source, read in full, as the writer turns it into a NuBoard run.

    status is a NuBoard status ('finished', 'failed', 'killed', 'crashed') or 'running' for a
    run the source says has not ended; `details` goes into run.json's `source` object beside
    tool, uri and key; `last_seen` is when a running run last logged (epoch seconds).

    sessions: the start time (epoch seconds) of each session the run is written in, when it
    has more than one: a source that restarted (TensorBoard's event files of a restarted job)
    is written as a resumed NuBoard run, session by session, so that the resume rule hides
    the points each restart replaced, as the source shows them. Empty: one session.

    parent: the source key of the run it is nested in (an MLflow child run's parentRunId);
    once that run is imported too, run.json's `parent` names its NuBoard run, with no step
    (a nested run, not a fork), so the catalog, `parent:` queries and the run page know it.
    """
    key: str
    name: str
    start: float
    end: float | None
    status: str = "finished"
    config: dict = field(default_factory=dict)
    tags: list = field(default_factory=list)
    group: str | None = None
    notes: str | None = None
    host: str | None = None
    series: list = field(default_factory=list)
    details: dict = field(default_factory=dict)
    artifact_dir: Path | None = None
    last_seen: float | None = None
    left_out: list = field(default_factory=list)        # one line per kind of thing not imported
    media: list = field(default_factory=list)           # MediaPoints, in the order logged
    summary: dict = field(default_factory=dict)         # the source's summary (W&B), run.json's
    sessions: list = field(default_factory=list)        # each session's start, when several
    parent: str | None = None        # the source key of its parent run (MLflow's nested runs)


@dataclass
class Candidate:
    """A run the source has, before it is read: its key, how to read it, and (for a source whose
    runs can still change) whether a copy imported earlier, by its recorded `source`, is stale."""
    key: str
    load: Callable[[], SourceRun]
    stale: Callable[[dict], bool] = lambda _source: False
    problem: str | None = None          # why it cannot be read, known before reading it
    kind: str = "run"                   # or "experiment": an MLflow experiment folder with a problem


@dataclass
class ImportResult:
    """What `nuboard.importers.tensorboard` or `.mlflow` did.

    written: the NuBoard run ids written by this import, in the source's order (empty on a
        dry run); `replaced` are those among them that replaced a stale copy.
    skipped: the run ids of source runs imported before and left as they are.
    pending: the source keys (TensorBoard folders, MLflow run ids) written, or on a dry run
        those an import would write.
    points: the scalar points written.
    media: the media entries written (images, histograms, texts, tables).
    artifacts: the artifact versions added ('llm/mlflow-default:v3').
    notes: one line for each kind of thing left out (points with a negative step, a tag that
        breaks NuBoard's rule, an artifact folder that is not local).
    unreadable: {"kind": "run" or "experiment", "key", "reason"} of each source run (or MLflow
        experiment folder) that could not be read and was skipped; the rest were imported.
    """
    tool: str
    uri: str
    project: str
    dry_run: bool = False
    written: list = field(default_factory=list)
    replaced: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    points: int = 0
    media: int = 0
    artifacts: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    unreadable: list = field(default_factory=list)

    def skip(self, key: str, reason: str, kind: str = "run") -> None:
        """Record a source run (or experiment) that cannot be read, with the reason."""
        self.unreadable.append({"kind": kind, "key": printable(key), "reason": printable(reason)})

    @property
    def label(self) -> str:
        return {"tensorboard": "TensorBoard", "mlflow": "MLflow", "wandb": "W&B"}.get(self.tool, self.tool)

    def summary(self) -> str:
        """The one line the command prints."""
        before = f"{len(self.skipped)} already imported"
        if self.unreadable:
            n = len(self.unreadable)
            before += f"; {n:,} could not be read and {'was' if n == 1 else 'were'} skipped"
        where = f"from {self.label} {self.uri} into {self.project}"
        extra = f", {len(self.artifacts)} artifact version{'s' * (len(self.artifacts) != 1)}" \
            if self.artifacts else ""
        if self.dry_run:
            return f"Would import {_runs(len(self.pending))} {where}; {before}."
        if not self.written and not self.artifacts:
            if not self.skipped and not self.unreadable:
                return f"Nothing to import: {self.label} {self.uri} has no runs."
            if not self.skipped:
                return f"Nothing imported {where}; {before}."
            n = len(self.skipped)
            return f"Nothing to import {where}: its {_runs(n)} {'is' if n == 1 else 'are'} already imported."
        updated = f" ({len(self.replaced)} updated)" if self.replaced else ""
        points = f"{self.points:,} point{'s' * (self.points != 1)}"
        if self.media:
            points += f", {self.media:,} media entr{'ies' if self.media != 1 else 'y'}"
        return f"Imported {_runs(len(self.written))}{updated} ({points}{extra}) {where}; {before}."

    def as_dict(self) -> dict:
        return {"tool": self.tool, "uri": self.uri, "project": self.project, "dry_run": self.dry_run,
                "written": list(self.written), "replaced": list(self.replaced),
                "skipped": list(self.skipped), "pending": list(self.pending), "points": self.points,
                "media": self.media,
                "artifacts": list(self.artifacts), "notes": list(self.notes),
                "unreadable": list(self.unreadable)}


def _runs(n: int) -> str:
    return f"{n:,} run{'s' * (n != 1)}"


def iso(seconds: float) -> str:
    """Epoch seconds as run.json writes times: '2026-01-02T03:04:05.678Z' (UTC, milliseconds)."""
    millis = int(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"


def printable(text: str) -> str:
    """Text from the file system as it can be printed and stored: a byte that is not UTF-8
    (a lone surrogate from os.listdir) written as a backslash escape ('run\\xff')."""
    if not _has_surrogate(text):
        return text
    try:
        raw = os.fsencode(text)             # the bytes the file system has
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def describe(exc: BaseException) -> str:
    """An error met while reading a run, as the reason a skip line gives (one line, capped)."""
    text = " ".join(str(exc).split())
    if not isinstance(exc, NuBoardError):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def check_run(run: SourceRun) -> None:
    """Raise UnreadableRunError when the run cannot be written exactly as the source has it.

    Its start and end must be dates from 1970 to 9999; every point's step from 0 to 2**63-1;
    every name, tag, note and config text valid UTF-8. (A wall time that is not finite is
    refused by add_scalar as the run is written, with its own message.)
    """
    for what, seconds in (("start", run.start), ("end", run.end)):
        if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds)
                                        and 0 <= seconds < LATEST):
            raise UnreadableRunError(f"its {what} time {seconds!r} (seconds since 1970) is not a "
                                     "date from 1970 to 9999")
    for series in run.series:
        if series.steps and not 0 <= min(series.steps) <= max(series.steps) <= MAX_STEP:
            raise UnreadableRunError(f"scalar {printable(series.name)!r} has a step out of 0..2**63-1")
    for point in run.media:
        if not 0 <= point.step <= MAX_STEP:
            raise UnreadableRunError(f"{point.kind} {printable(point.name)!r} has a step out of 0..2**63-1")
    texts = [("name", run.name), ("notes", run.notes), ("group", run.group), ("host", run.host)]
    texts += [("tag", tag) for tag in run.tags] + [("scalar", s.name) for s in run.series]
    texts += [(point.kind, point.name) for point in run.media]
    for what, text in texts:
        if isinstance(text, str) and _has_surrogate(text):
            raise UnreadableRunError(f"its {what} {printable(text)!r} is not valid UTF-8")
    for what, doc in (("config", run.config), ("source details", run.details)):
        bad = _bad_text(doc)
        if bad is not None:
            raise UnreadableRunError(f"its {what} holds {printable(bad)!r}, which is not valid UTF-8")


def _bad_text(value, depth: int = 0) -> str | None:
    """The first string (key or value) in nested dicts and lists that is not UTF-8, else None."""
    if isinstance(value, str):
        return value if _has_surrogate(value) else None
    if depth > 100:
        return None
    items = value.items() if isinstance(value, dict) else \
        ((None, v) for v in value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = (_bad_text(key, depth + 1) if isinstance(key, str) else None) or _bad_text(item, depth + 1)
        if found is not None:
            return found
    return None
