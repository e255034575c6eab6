"""Hiding runs (`nuboard up --edit-runs`): a run hidden from its page leaves the Runs page and
its JSON, Charts' newest runs, Scatter, the Timeline, `nuboard ls` and `nb.runs`; `ls --hidden`
and `nb.runs(hidden=True)` list it; the mark (the project's hidden.json) survives `nuboard
reindex` and a copy of the project folder; Unhide brings it back. The POST is refused without
the CSRF token, from another Origin and without --edit-runs; --read-only refuses the flag."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers import run_cli, sweep_runs
from helpers_http import AppViewer, Viewer, visible_text

from nuboard.errors import InvalidArgumentError
from nuboard.files.hidden_runs import read_hidden, set_hidden
from nuboard.tables import run_records

GONE = "w10"                       # the run hidden in the module's project


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    """The sweep's five runs with w10 hidden through its run page's form: (root, ids, viewer)."""
    root = tmp_path_factory.mktemp("hide") / "experiments"
    ids = sweep_runs(root, "xss")
    with Viewer(root, edit_runs=True) as viewer:
        page = viewer.get(f"/p/llm/.run/{ids[GONE]}")
        assert 'id="hide-run"' in page.text and 'id="delete-run"' in page.text
        reply = viewer.post("/p/llm/.hide", {"run": ids[GONE], "hidden": "1"})
        assert reply.status == 303, reply.text
        assert reply.headers["location"].endswith(f"/p/llm/.run/{ids[GONE]}")
        yield root, ids, viewer


def ls_ids(root, *args) -> list[str]:
    done = run_cli(root, "ls", "llm", "--json", *args)
    assert done.returncode == 0, done.stderr
    return [r["id"] for r in json.loads(done.stdout)]


def test_a_hidden_run_leaves_every_list(hidden):
    root, ids, viewer = hidden
    gone, kept = ids[GONE], [i for n, i in ids.items() if n != GONE]
    assert read_hidden(root, "llm") == {gone}
    assert json.loads((root / "llm" / "hidden.json").read_text())["hidden"] == [gone]

    runs_page = viewer.get("/p/llm")
    assert runs_page.status == 200 and gone not in runs_page.text
    assert all(i in runs_page.text for i in kept)
    table = json.dumps(viewer.get("/api/p/llm/runs").json())
    assert gone not in table and all(i in table for i in kept)
    charts = viewer.get("/api/p/llm/.charts").json()
    assert sorted(r["id"] for r in charts["runs"]) == sorted(kept)
    scatter = viewer.get("/api/p/llm/.scatter?x=config.width&y=train/acc.last").json()
    assert "w10" not in {p["name"] for p in scatter["points"]}
    timeline = viewer.get("/api/p/llm/.timeline").json()
    assert sorted(r["id"] for r in timeline["runs"]) == sorted(kept) and timeline["total"] == 4

    # grouped Runs table: the hidden run counts in no group and in no mean
    grouped = viewer.get("/api/p/llm/runs?cols=scalar:train/acc&group=config:opt").json()
    sgd = {g["label"]: g for g in grouped["groups"]}["sgd"]
    assert sgd["count"] == 1 and sgd["means"]["scalar:train/acc"] == 5.0      # w0 alone, not w10

    assert sorted(ls_ids(root)) == sorted(kept)
    assert ls_ids(root, "--hidden") == [gone]
    everything = json.loads(run_cli(root, "ls", "llm", "--json", "--all").stdout)
    assert {r["id"]: r["hidden"] for r in everything} == {i: i == gone for i in ids.values()}
    assert run_cli(root, "ls", "llm", "--hidden", "--all").returncode == 2

    import nuboard as nb
    assert sorted(r.id for r in nb.runs("llm", dir=root)) == sorted(kept)
    assert [r.id for r in run_records.runs("llm", dir=root, hidden=True)] == [gone]
    assert len(run_records.runs("llm", dir=root, hidden=None)) == 5
    table = run_records.runs("llm", query="opt:sgd", dir=root).to_arrow()
    assert table.column("id").to_pylist() == [ids["w0"]]


def test_the_run_page_still_shows_a_hidden_run_and_says_so(hidden):
    _, ids, viewer = hidden
    page = viewer.get(f"/p/llm/.run/{ids[GONE]}")
    assert page.status == 200 and 'id="run-hidden-note"' in page.text
    assert 'id="unhide-run"' in page.text
    assert viewer.get(f"/api/p/llm/.run/{ids[GONE]}").json()["hidden"] is True
    assert viewer.get(f"/api/p/llm/.run/{ids['w1']}").json()["hidden"] is False
    named = viewer.get(f"/api/p/llm/.charts?runs={ids[GONE]}").json()   # named by id: shown
    assert [r["id"] for r in named["runs"]] == [ids[GONE]]


def test_the_mark_survives_reindex_and_a_copy_of_the_project(hidden, tmp_path):
    root, ids, _ = hidden
    assert run_cli(root, "reindex", "llm").returncode == 0
    assert ids[GONE] not in ls_ids(root)
    copy = tmp_path / "elsewhere"
    shutil.copytree(root / "llm", copy / "llm", ignore=shutil.ignore_patterns(".nuboard"))
    assert sorted(ls_ids(copy)) == sorted(i for n, i in ids.items() if n != GONE)
    assert ls_ids(copy, "--hidden") == [ids[GONE]]


def test_unhide_brings_it_back(tmp_path):
    root = tmp_path / "experiments"
    ids = sweep_runs(root, "xss")
    with AppViewer(root, edit_runs=True) as viewer:
        both = {"runs": f"{ids['w1']},{ids['w0']}", "hidden": "1"}
        assert viewer.post("/api/p/llm/.hide", both).json()["hidden_runs"] == sorted(
            [ids["w1"], ids["w0"]])
        assert len(ls_ids(root)) == 3
        back = viewer.post("/p/llm/.hide", {"run": ids["w1"], "hidden": "0"})
        assert back.status == 303
        assert ids["w1"] in ls_ids(root) and ls_ids(root, "--hidden") == [ids["w0"]]
        page = viewer.get(f"/p/llm/.run/{ids['w1']}").text
        assert 'id="run-hidden-note"' not in page and 'id="hide-run"' in page


def test_many_hidden_runs_and_a_damaged_file(tmp_path, backend):
    """Past the bound-parameter chunk the ids are written into the statement (on both catalog
    backends); a hidden.json that is not JSON hides nothing and a hide is refused rather than
    writing over it."""
    root = tmp_path / "experiments"
    ids = sweep_runs(root, "xss")
    set_hidden(root, "llm", [f"gone-{i}" for i in range(1200)] + [ids["w1"]], True)
    assert sorted(ls_ids(root)) == sorted(i for n, i in ids.items() if n != "w1")
    assert ls_ids(root, "--hidden") == [ids["w1"]]
    (root / "llm" / "hidden.json").write_text("{not json")
    assert len(ls_ids(root)) == 5
    with AppViewer(root, edit_runs=True) as viewer:
        refused = viewer.post("/api/p/llm/.hide", {"run": ids["w0"]})
        assert refused.status == 409 and "hidden.json" in refused.json()["error"]
    assert (root / "llm" / "hidden.json").read_text() == "{not json"


def test_hiding_is_refused_without_the_flag_the_token_or_our_origin(tmp_path):
    root = tmp_path / "experiments"
    ids = sweep_runs(root, "xss")
    run = {"run": ids["w1"]}
    with AppViewer(root) as plain:
        refused = plain.post("/p/llm/.hide", run)
        assert refused.status == 403 and "--edit-runs" in visible_text(refused.text)
        page = plain.get(f"/p/llm/.run/{ids['w1']}").text
        assert 'id="hide-run"' not in page and 'id="delete-run"' not in page
    with AppViewer(root, edit_runs=True) as viewer:
        no_token = viewer.post("/p/llm/.hide", run, token=False)
        assert no_token.status == 403 and "security token" in no_token.text
        foreign = viewer.post("/p/llm/.hide", run, origin="http://evil.example")
        assert foreign.status == 403 and "evil.example" in foreign.text
        unknown = viewer.post("/api/p/llm/.hide", {"run": "no-such-run"})
        assert unknown.status == 404 and "no-such-run" in unknown.json()["error"]
        bad = viewer.post("/api/p/llm/.hide", {"run": ids["w1"], "hidden": "maybe"})
        assert bad.status == 400 and "'maybe'" in bad.json()["error"]
    assert read_hidden(root, "llm") == frozenset()
    with pytest.raises(InvalidArgumentError, match="--edit-runs"):
        AppViewer(root, read_only=True, edit_runs=True)
    done = run_cli(root, "up", str(root), "--read-only", "--edit-runs")
    assert done.returncode == 2 and "--edit-runs" in done.stderr


def test_the_runs_page_lists_the_hidden_runs_and_unhides_a_selection(tmp_path):
    """'N hidden' beside the count opens the hidden runs (?hidden=1), whose selection bar
    says Unhide selected: a mistaken Hide selected is undone from the browser."""
    root = tmp_path / "experiments"
    ids = sweep_runs(root, "xss")
    with Viewer(root, edit_runs=True) as viewer:
        reply = viewer.post("/p/llm/.hide", {"runs": f"{ids['w1']},{ids['w10']}", "hidden": "1",
                                             "back": "runs"})
        assert reply.status == 303
        page = viewer.get("/p/llm")
        assert "3 runs" in visible_text(page.text) and "2 hidden" in visible_text(page.text)
        listed = viewer.get("/api/p/llm/runs?hidden=1").json()
        assert listed["hidden"] is True and sorted(r["id"] for r in listed["runs"]) == sorted(
            [ids["w1"], ids["w10"]])
        hidden_page = viewer.get("/p/llm?hidden=1").text
        assert "2 hidden runs" in visible_text(hidden_page) and "Unhide selected" in hidden_page
        assert viewer.get("/p/llm?hidden=yes").status == 400
        reply = viewer.post("/p/llm/.hide", {"runs": f"{ids['w1']},{ids['w10']}", "hidden": "0",
                                             "back": "runs"})
        assert reply.status == 303
        assert viewer.get("/api/p/llm/runs").json()["total"] == 5
        assert viewer.get("/api/p/llm/runs?hidden=1").json()["total"] == 0
