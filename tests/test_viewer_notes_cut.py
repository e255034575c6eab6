"""Notes over 1,000,000 characters, shown cut, can be replaced (issue 30, item 7).

run.json is a file any tool can write; notes longer than the API's limit are shown cut to it.
The notes form used to carry the cut text as its base, so every save was refused with 409
("changed by someone else") and reloading could not help. The form now names the notes it
was opened with by a fingerprint of the whole notes; a real conflict is still refused.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from helpers import QUIET
from helpers_http import Viewer

import nuboard as nb
from nuboard.files.names import MAX_NOTES

LONG = "lorem ipsum " * (MAX_NOTES // 12 + 20_000)     # about 1.24 M characters


def write_notes(run_path: Path, notes: str) -> None:
    """Set the notes in run.json as another tool would (the API refuses notes this long)."""
    doc = json.loads((run_path / "run.json").read_text())
    doc["notes"] = notes
    (run_path / "run.json").write_text(json.dumps(doc))


def notes_on_disk(run_path: Path) -> str | None:
    return json.loads((run_path / "run.json").read_text())["notes"]


def form_fields(page: str) -> dict:
    """The notes form's hidden fields, as a browser would send them back."""
    form = page[page.index('<div id="notes">'):]
    form = form[:form.index("</form>")]
    return {html.unescape(name): html.unescape(value) for name, value in
            re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)}


def test_cut_notes_can_be_replaced_and_a_real_conflict_is_still_refused(root):
    with nb.init("llm", run_name="long-notes", **QUIET) as run:
        pass
    path = Path(run.path)
    write_notes(path, LONG)
    url = f"/p/llm/.run/{run.id}"
    with Viewer(root) as v:
        page = v.get(url).text
        assert "notes: the first 1,000,000 of" in page              # shown cut, and said so
        saved = v.post(url + "/notes", {**form_fields(page), "notes": "short now"})
        assert saved.status == 200, saved.text[:300]
        assert "Saved." in saved.text
        assert notes_on_disk(path) == "short now"

        write_notes(path, LONG)                                      # cut again
        stale = form_fields(v.get(url).text)
        write_notes(path, LONG + " and a tail someone else added")   # past what is shown
        refused = v.post(url + "/notes", {**stale, "notes": "mine"})
        assert refused.status == 409 and "changed by someone else" in refused.text
        assert notes_on_disk(path) == LONG + " and a tail someone else added"
        again = v.post(url + "/notes", {**form_fields(v.get(url).text), "notes": "mine"})
        assert again.status == 200 and notes_on_disk(path) == "mine"

        write_notes(path, LONG)          # saved as shown, edited: a million characters back
        page = v.get(url).text
        kept = "\u00e9t\u00e9 \U0001F600 " + LONG[:MAX_NOTES - 8]            # the limit exactly
        full = v.post(url + "/notes", {**form_fields(page), "notes": kept})
        assert full.status == 200, full.text[:300]
        assert notes_on_disk(path) == kept


def test_short_notes_round_trip_through_the_form(root):
    """The form of ordinary notes: a save from it works, a save from a stale one is refused."""
    with nb.init("llm", run_name="short", notes="first", **QUIET) as run:
        pass
    url = f"/p/llm/.run/{run.id}"
    with Viewer(root) as v:
        opened = form_fields(v.get(url).text)
        assert v.post(url + "/notes", {**opened, "notes": "second"}).status == 200
        assert v.post(url + "/notes", {**opened, "notes": "third"}).status == 409
        assert notes_on_disk(Path(run.path)) == "second"
        empty = form_fields(v.get(f"/p/llm/.run/{run.id}").text)
        assert v.post(url + "/notes", {**empty, "notes": ""}).status == 200
