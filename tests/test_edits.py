"""Edits of a run from outside its process: files first, conflicts refused, never lost at finish."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import nuboard as nb
from nuboard.files.edits import EditConflictError, edit_notes


def notes_on_disk(run) -> str | None:
    return json.loads((Path(run.path) / "run.json").read_text())["notes"]


def test_edit_applies_when_the_base_matches(root):
    """An edit from the notes as they were replaces them in run.json."""
    run = nb.init("p", notes="first", system_metrics=False)
    run.finish()
    edit_notes(run.path, "second", base="first")
    assert notes_on_disk(run) == "second"


def test_conflicting_edit_is_refused_and_changes_nothing(root):
    """An edit from stale notes is refused with a message naming the run; run.json is untouched."""
    run = nb.init("p", notes="mine", system_metrics=False)
    run.finish()
    before = (Path(run.path) / "run.json").read_bytes()
    with pytest.raises(EditConflictError, match=f"run '{run.id}'.*changed by someone else"):
        edit_notes(run.path, "theirs", base="old")
    assert (Path(run.path) / "run.json").read_bytes() == before
    with pytest.raises(ValueError, match="notes"):
        edit_notes(run.path, "x" * 1_000_001, base="mine")
    with pytest.raises(ValueError, match="not found"):
        edit_notes(Path(run.path).parent / "nope", "x", base=None)


def test_an_edit_during_the_run_survives_finish_and_resume(root):
    """Notes edited while the run trains are kept when it finishes and when it resumes."""
    run = nb.init("p", run_id="r", system_metrics=False)
    edit_notes(run.path, "looks good", base=None)
    run.finish()
    assert notes_on_disk(run) == "looks good"
    again = nb.init("p", run_id="r", resume="must", system_metrics=False)
    edit_notes(again.path, "still good", base="looks good")
    again.finish()
    assert notes_on_disk(again) == "still good"
