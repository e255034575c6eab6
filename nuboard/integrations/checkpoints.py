"""Checkpoints as versions of a `model` artifact, for NuBoardLogger and NuBoardCallback
(`log_model=`, as W&B's WandbLogger and its Trainer integration take it):

- False: no checkpoint is recorded.
- True: once the fit has ended well, the best checkpoint (and the last, when it is another
  file) become versions that reference the files where they lie: the run is over, so they
  no longer change (docs/artifacts.md: a running run's files cannot be referenced).
- "all": every checkpoint, as it is saved, becomes a version holding a copy of it (the run is
  still running, so a copy: the next save may overwrite the file).

Each version's metadata says the step, the score and what was monitored, and which file it
was; a file already recorded (its path and modification time) is not recorded again.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Any

from nuboard.errors import InvalidArgumentError, NuBoardError
from nuboard.recording.run import Run

MODEL = "model"
CHOICES = (False, True, "all")


def checked_log_model(value: Any) -> bool | str:
    """log_model as given, when it is False, True or 'all'; InvalidArgumentError otherwise."""
    if not any(value is choice or (isinstance(value, str) and value == choice)
               for choice in CHOICES):
        raise InvalidArgumentError(f"log_model={value!r:.60}: give False, True (the best and the "
                                   "last checkpoint when the fit ends) or 'all' (every "
                                   "checkpoint as it is saved), as WandbLogger takes it")
    return value


class CheckpointLog:
    """The checkpoints a run has recorded, and how to record more."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}          # real path -> mtime_ns recorded

    def _new(self, path: "str | os.PathLike[str]") -> str | None:
        real = os.path.realpath(path)
        try:
            stamp = os.stat(real).st_mtime_ns
        except OSError:
            return None                          # gone (rotated away) before it was recorded
        if self._seen.get(real) == stamp:
            return None
        self._seen[real] = stamp
        return real

    def copy(self, run: Run, path: "str | os.PathLike[str]", metadata: dict) -> None:
        """Record a checkpoint of a running run: a version holding a copy of it."""
        real = self._new(path)
        if real is not None:
            with _warned(real):
                run.add_artifact(MODEL, real, type="model", metadata=_meta(real, metadata),
                                 description=f"checkpoint {Path(real).name}")

    def reference(self, run: Run, path: "str | os.PathLike[str]", metadata: dict) -> None:
        """Record a checkpoint of a run that has ended: a version referencing the file."""
        real = self._new(path)
        if real is None:
            return
        from nuboard.artifacts.api import add_artifact
        from nuboard.recording.run_links import run_root
        with _warned(real):
            add_artifact(run.project, MODEL, real, type="model", reference=True,
                         metadata=_meta(real, metadata), dir=run_root(run),
                         producer={"project": run.project, "run_id": run.id},
                         description=f"checkpoint {Path(real).name}")


@contextlib.contextmanager
def _warned(real: str):
    """A checkpoint that cannot be recorded (a full disk, a file rotated away mid-copy) is one
    RuntimeWarning naming it; training goes on."""
    try:
        yield
    except (NuBoardError, OSError, ValueError) as exc:
        warnings.warn(f"checkpoint {real!r} was not recorded as a model version: {exc}",
                      RuntimeWarning, stacklevel=4)


def _meta(real: str, metadata: dict) -> dict:
    """The version's metadata: what the caller knows (step, score, monitor...) and the file."""
    return {**{k: v for k, v in metadata.items() if v is not None}, "file": Path(real).name}


def number(value: Any) -> float | None:
    """A score as a float (a tensor's item), or None."""
    if value is None:
        return None
    try:
        return float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError):
        return None
