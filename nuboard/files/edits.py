"""Edits of a run's record from outside the training process (the viewer, the CLI).

The file is changed first, then the catalog. An edit names what the editor started from
(`base`); when run.json holds something else by then, the edit is refused with
EditConflictError instead of overwriting the other change. A lock file beside run.json
(`.run.json.lock`, flock) orders the read-compare-write of editors and of the training
process's own rewrites (resume, finish).
"""
from __future__ import annotations

import os
from pathlib import Path

from nuboard.errors import NuBoardError, RunNotFoundError

from . import runjson
from .names import MAX_NOTES, check_label


class EditConflictError(NuBoardError):
    """The record changed since the editor read it; the edit was not applied."""


def edit_notes(run_dir: "str | os.PathLike[str]", notes: str, *, base: str | None) -> dict:
    """Replace a run's notes in run.json, if they are still `base`; return the new document.

    Raises:
        InvalidNameError: notes that are not text or too long.
        RunNotFoundError: no run.json in run_dir.
        EditConflictError: run.json's notes are no longer `base` (someone else edited them).
    """
    check_label(notes, "notes", MAX_NOTES)
    folder = Path(run_dir)

    def replace_notes(doc: dict) -> None:
        current = doc.get("notes")
        if current != base:
            raise EditConflictError(
                f"the notes of run {folder.name!r} were changed by someone else since they were "
                f"opened (now {_preview(current)}, opened as {_preview(base)}); reload them and "
                "edit again.")
        doc["notes"] = notes

    try:
        doc = runjson.update_run(folder, replace_notes)
    except FileNotFoundError:
        path = folder / runjson.RUN_JSON
        raise RunNotFoundError(f"run {folder.name!r} not found: no {str(path)!r}.") from None
    return doc


def _preview(text: str | None) -> str:
    if text is None:
        return "empty"
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")
