"""What an importer reads from another tracker (SourceRun, Series) and what an import did (ImportResult).

Standard library only: `nuboard.importers` imports this module, and neither TensorBoard nor MLflow.
"""
from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nuboard.errors import NuBoardError


class ImportSourceError(NuBoardError, ValueError):
    """The source of an import cannot be read: no event files, a URI MLflow cannot open."""


@dataclass
class Series:
    """The points of one scalar as the source has them: its own name, steps, wall times, values."""
    name: str
    steps: array = field(default_factory=lambda: array("q"))
    walls: array = field(default_factory=lambda: array("d"))
    values: array = field(default_factory=lambda: array("d"))

    def add(self, step: int, wall: float, value: float) -> None:
        self.steps.append(step)
        self.walls.append(wall)
        self.values.append(value)


@dataclass
class SourceRun:
    """One run of the source, read in full, as the writer turns it into a NuBoard run.

    status is a NuBoard status ('finished', 'failed', 'killed', 'crashed') or 'running' for a
    run the source says has not ended; `details` goes into run.json's `source` object beside
    tool, uri and key; `last_seen` is when a running run last logged (epoch seconds).
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


@dataclass
class Candidate:
    """A run the source has, before it is read: its key, how to read it, and (for a source whose
    runs can still change) whether a copy imported earlier, by its recorded `source`, is stale."""
    key: str
    load: Callable[[], SourceRun]
    stale: Callable[[dict], bool] = lambda _source: False


@dataclass
class ImportResult:
    """What `nuboard.importers.tensorboard` or `.mlflow` did.

    written: the NuBoard run ids written by this import, in the source's order (empty on a
        dry run); `replaced` are those among them that replaced a stale copy.
    skipped: the run ids of source runs imported before and left as they are.
    pending: the source keys (TensorBoard folders, MLflow run ids) written, or on a dry run
        those an import would write.
    points: the scalar points written.
    artifacts: the artifact versions added ('llm/mlflow-default:v3').
    notes: one line for each kind of thing left out (points with a negative step, a tag that
        breaks NuBoard's rule, an artifact folder that is not local).
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
    artifacts: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def label(self) -> str:
        return {"tensorboard": "TensorBoard", "mlflow": "MLflow"}.get(self.tool, self.tool)

    def summary(self) -> str:
        """The one line the command prints."""
        before = f"{len(self.skipped)} already imported"
        where = f"from {self.label} {self.uri} into {self.project}"
        extra = f", {len(self.artifacts)} artifact version{'s' * (len(self.artifacts) != 1)}" \
            if self.artifacts else ""
        if self.dry_run:
            return f"Would import {_runs(len(self.pending))} {where}; {before}."
        if not self.written and not self.artifacts:
            if not self.skipped:
                return f"Nothing to import: {self.label} {self.uri} has no runs."
            n = len(self.skipped)
            return f"Nothing to import {where}: its {_runs(n)} {'is' if n == 1 else 'are'} already imported."
        updated = f" ({len(self.replaced)} updated)" if self.replaced else ""
        return (f"Imported {_runs(len(self.written))}{updated} ({self.points:,} points{extra}) "
                f"{where}; {before}.")

    def as_dict(self) -> dict:
        return {"tool": self.tool, "uri": self.uri, "project": self.project, "dry_run": self.dry_run,
                "written": list(self.written), "replaced": list(self.replaced),
                "skipped": list(self.skipped), "pending": list(self.pending), "points": self.points,
                "artifacts": list(self.artifacts), "notes": list(self.notes)}


def _runs(n: int) -> str:
    return f"{n:,} run{'s' * (n != 1)}"


def iso(seconds: float) -> str:
    """Epoch seconds as run.json writes times: '2026-01-02T03:04:05.678Z' (UTC, milliseconds)."""
    millis = int(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"
