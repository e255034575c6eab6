"""The note of what was cut from a run.json is itself capped (issue 30, item 17).

A run.json anyone can write may hold thousands of fields past the API's limits, under keys of
any length; the note naming them used to grow with them (a 30 MB run.json gave a 10 MB note
and a 20 MB Runs page).
"""
from __future__ import annotations

import json

from helpers import loss_run, run_cli
from helpers_http import AppViewer

from nuboard.files.caps import MAX_NOTE, MAX_NOTE_LINES

LONG_KEY = "k" * 1_000_000


def bloat(root, run_id: str) -> int:
    """env.git with 3,000 values past the shown limit and one key of a million characters."""
    path = root / "llm" / "runs" / run_id / "run.json"
    doc = json.loads(path.read_text())
    git = {f"field{i}": "v" * 5000 for i in range(3000)}
    git[LONG_KEY] = "x" * 5000
    doc.setdefault("env", {})["git"] = git
    path.write_text(json.dumps(doc))
    return path.stat().st_size


def test_the_cut_note_is_capped_in_ls_and_on_the_pages(root):
    run_id = loss_run(root, "llm", name="bloated")
    assert bloat(root, run_id) > 15_000_000
    listed = run_cli(root, "ls", "llm", "--json")
    assert listed.returncode == 0, listed.stderr
    (record,) = json.loads(listed.stdout)
    cut = record["cut"]
    assert cut and "env.git.field0: the first 4,096 of 5,000 characters" in cut
    assert "more fields cut" in cut
    assert len(cut) < (MAX_NOTE + 2) * (MAX_NOTE_LINES + 1)
    assert len(listed.stderr) < 10_000                       # the one line ls prints about it
    with AppViewer(root) as viewer:
        runs_page = viewer.get("/p/llm")
        run_page = viewer.get(f"/p/llm/.run/{run_id}")
    assert runs_page.status == 200 and run_page.status == 200
    assert len(runs_page.body) < 200_000, len(runs_page.body)
    assert b"more fields cut" in runs_page.body and b"more fields cut" in run_page.body
    assert LONG_KEY[:MAX_NOTE].encode() not in runs_page.body
