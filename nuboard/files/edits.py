"""Edits of a run's record from outside the training process (the viewer, the CLI).

The file is changed first, then the catalog. An edit names what the editor started from
(`base`); when run.json holds something else by then, the edit is refused with
EditConflictError instead of overwriting the other change. A lock file beside run.json
(`.run.json.lock`, flock) orders the read-compare-write of editors and of the training
process's own rewrites (resume, finish).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from nuboard.errors import NuBoardError, RunNotFoundError

from . import layout
from .jsonfile import read_json, write_json_atomic
from .names import MAX_NOTES, check_label
from .sigterm import defer_sigterm

RUN_LOCK = ".run.json.lock"


class EditConflictError(NuBoardError):
    """The record changed since the editor read it; the edit was not applied."""


@contextlib.contextmanager
def run_json_lock(folder: "str | os.PathLike[str]"):
    """Hold the run's edit lock; without a writable folder, go on unlocked (nothing to race)."""
    try:
        fd = os.open(Path(folder) / RUN_LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        yield
        return
    with defer_sigterm:          # finishing on SIGTERM takes this lock: never while held
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def edit_notes(run_dir: "str | os.PathLike[str]", notes: str, *, base: str | None) -> dict:
    """Replace a run's notes in run.json, if they are still `base`; return the new document.

    Raises:
        InvalidNameError: notes that are not text or too long.
        RunNotFoundError: no run.json in run_dir.
        EditConflictError: run.json's notes are no longer `base` (someone else edited them).
    """
    check_label(notes, "notes", MAX_NOTES)
    folder = Path(run_dir)
    path = folder / layout.RUN_JSON
    with run_json_lock(folder):
        try:
            doc = read_json(path)
        except FileNotFoundError:
            raise RunNotFoundError(f"run {folder.name!r} not found: no {str(path)!r}.") from None
        current = doc.get("notes")
        if current != base:
            raise EditConflictError(
                f"the notes of run {folder.name!r} were changed by someone else since they were "
                f"opened (now {_preview(current)}, opened as {_preview(base)}); reload them and "
                "edit again.")
        doc["notes"] = notes
        write_json_atomic(path, doc)
    return doc


def _preview(text: str | None) -> str:
    if text is None:
        return "empty"
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")
