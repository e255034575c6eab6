"""Edits of a run's record from outside the training process (the viewer, the CLI).

The file is changed first, then the catalog. An edit names what the editor started from
(`base`); when run.json holds something else by then, the edit is refused with
EditConflictError instead of overwriting the other change. A lock file beside run.json
(`.run.json.lock`, flock) orders the read-compare-write of editors and of the training
process's own rewrites (resume, finish); on a file system without locks the compare still
refuses an edit made from a stale base, but two writes at the same instant are not ordered.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from nuboard.errors import InvalidTypeError, NuBoardError, RunNotFoundError

from . import runjson
from .names import MAX_NOTES, check_label


class EditConflictError(NuBoardError):
    """The record changed since the editor read it; the edit was not applied."""


_NO_BASE = object()


def notes_fingerprint(notes: object) -> str:
    """What an editor may name as its base instead of the notes: 'sha256:<hex>' of them
    ('none' for no notes). A form carries it where the notes it shows are cut (over
    MAX_NOTES, written by another tool), so the base still names the whole notes."""
    if notes is None:
        return "none"
    if not isinstance(notes, str):       # a run.json written by hand: never a form's base
        return "not text"
    return "sha256:" + hashlib.sha256(notes.encode("utf-8", "surrogatepass")).hexdigest()


def edit_notes(run_dir: "str | os.PathLike[str]", notes: str, *, base: "str | None" = _NO_BASE,
               fingerprint: str | None = None) -> dict:
    """Replace a run's notes in run.json, if they are still what the editor started from;
    return the new document.

    Args:
        base: the notes the editor started from (None: there were none).
        fingerprint: or their notes_fingerprint(); give one of the two.

    Raises:
        InvalidNameError: notes that are not text or too long.
        InvalidTypeError: neither base nor fingerprint given, or both.
        RunNotFoundError: no run.json in run_dir.
        EditConflictError: run.json's notes are no longer the base (someone else edited them).
    """
    check_label(notes, "notes", MAX_NOTES)
    if (base is _NO_BASE) == (fingerprint is None):
        raise InvalidTypeError("edit_notes needs the notes the edit started from: give base= "
                               "or fingerprint=, not both.")
    folder = Path(run_dir)

    def replace_notes(doc: dict) -> None:
        current = doc.get("notes")
        if current != base if fingerprint is None else notes_fingerprint(current) != fingerprint:
            opened = "" if fingerprint is not None else f", opened as {_preview(base)}"
            raise EditConflictError(
                f"the notes of run {folder.name!r} were changed by someone else since they were "
                f"opened (now {_preview(current)}{opened}); reload them and edit again.")
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
