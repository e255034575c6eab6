"""The Timeline page over real HTTP: runs on a wall-time axis, resumed sessions, crashed and
lost runs, forks linked to their parents, versions as diamonds (in this project and
another), the query box, and the page's data, script and escaping; on runs written by the
real API (and a child killed with SIGKILL)."""
from __future__ import annotations

import html
import json
import os
import re
import time
from urllib.parse import quote

import pytest
from helpers import QUIET, killed_run, loss_run, make_tree
from helpers_http import Viewer

import nuboard as nb
from nuboard.artifacts.api import unlink_version

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")

XSS = "<script>alert('tl')</script><img src=x onerror=alert(1)>"



def make_lost(root, project: str, name: str, age: float = 600.0) -> str:
    """A run left 'running' by a child killed with SIGKILL, its heartbeat `age` seconds old."""
    run_id = killed_run(root, project, name)
    old = time.time() - age
    os.utime(root / project / "runs" / run_id / "heartbeat", (old, old))
    return run_id


@pytest.fixture
def history(root):
    """A finished run, one resumed once, a crashed one, a fork of the first, a lost one and
    one still running."""
    ids = {"base": loss_run(root, name="base", steps=20, tags=["sweep"])}
    ids["resumed"] = loss_run(root, name="resumed", steps=5)
    time.sleep(0.05)
    again = nb.init("llm", dir=root, run_id=ids["resumed"], resume="must", **QUIET)
    again.add_scalar("train/loss", 0.1, step=5)
    again.finish()
    try:
        with nb.init("llm", dir=root, run_name="crasher", **QUIET) as run:
            run.add_scalar("train/loss", 5.0, step=0)
            raise RuntimeError("boom")
    except RuntimeError:
        ids["crashed"] = run.id
    with nb.init("llm", dir=root, run_name="fork", fork_from=(ids["base"], 9), **QUIET) as fork:
        fork.add_scalar("train/loss", 0.5, step=10)
    ids["fork"] = fork.id
    ids["lost"] = make_lost(root, "llm", "lost-one")
    live = nb.init("llm", dir=root, run_name="live-one", **QUIET)
    live.add_scalar("train/loss", 2.0, step=0)
    live.flush()
    ids["live"] = live.id
    yield ids
    live.finish()


def by_name(data: dict) -> dict:
    return {r["name"]: r for r in data["runs"]}


def test_runs_sessions_crashed_lost_running_and_forks(root, history):
    with Viewer(root) as v:
        reply = v.get("/api/p/llm/.timeline")
        assert reply.status == 200
        data = reply.json()
        assert data["project"] == "llm" and data["total"] == 6 and data["shown"] == 6
        assert not data["capped"] and data["live"] is True
        runs = by_name(data)
        assert set(runs) == {"base", "resumed", "crasher", "fork", "lost-one", "live-one"}
        starts = [r["start"] for r in data["runs"]]
        assert starts == sorted(starts)                      # rows sorted by start
        for run in data["runs"]:
            assert run["url"] == f"/p/llm/.run/{run['id']}"
            assert run["start"] <= data["now"]

        base = runs["base"]
        assert base["status"] == "finished" and base["start"] < base["end"]
        assert base["sessions"] == [{"session": 0, "start": base["start"], "end": base["end"]}]
        assert base["duration_s"] == pytest.approx(base["end"] - base["start"], abs=0.01)

        resumed = runs["resumed"]
        assert resumed["status"] == "finished"
        first, second = resumed["sessions"]
        assert (first["session"], second["session"]) == (0, 1)
        assert first["start"] == resumed["start"] and first["end"] == second["start"]
        assert first["start"] < second["start"] < second["end"] == resumed["end"]

        crashed = runs["crasher"]
        assert crashed["status"] == "crashed" and crashed["end"] >= crashed["start"]

        lost = runs["lost-one"]                               # ends where it last wrote
        folder = root / "llm" / "runs" / history["lost"]
        last = max(os.stat(folder / name).st_mtime for name in ("run.json", "events.r0.s0.log"))
        assert lost["status"] == "lost" and lost["end"] == pytest.approx(last, abs=0.01)
        assert lost["start"] <= lost["end"] <= data["now"]
        assert lost["end"] > os.stat(folder / "heartbeat").st_mtime        # set 10 min back

        live = runs["live-one"]
        assert live["status"] == "running" and live["end"] is None
        assert live["sessions"][-1]["end"] is None           # drawn to now
        assert live["duration_s"] == pytest.approx(data["now"] - live["start"], abs=0.01)

        fork = runs["fork"]
        parent = fork["parent"]
        assert parent["id"] == history["base"] and parent["step"] == 9 and parent["shown"]
        assert parent["url"] == f"/p/llm/.run/{history['base']}"
        assert base["start"] <= parent["time"] <= min(base["end"], fork["start"])
        assert fork["sessions"][0]["start"] == fork["start"]
        assert base["parent"] is None

        as_page = v.get("/p/llm/.timeline?format=json").json()
        assert [r["id"] for r in as_page["runs"]] == [r["id"] for r in data["runs"]]


def test_a_fork_whose_parent_is_filtered_out_still_names_it(root, history):
    with Viewer(root) as v:
        data = v.get("/api/p/llm/.timeline?q=" + quote("name:fork")).json()
        (fork,) = data["runs"]
        assert fork["parent"]["id"] == history["base"]
        assert fork["parent"]["shown"] is False and fork["parent"]["time"] is None


def test_versions_made_by_runs_are_diamonds_on_them(root, tmp_path):
    data_dir = make_tree(tmp_path / "x", {"a.bin": b"aa", "b.bin": b"b"})
    with nb.init("llm", dir=root, run_name="prepare", **QUIET) as prep:
        time.sleep(0.02)
        prep.add_artifact("datasets/x", data_dir, type="dataset", reference=True)
        time.sleep(0.02)
    ckpt = make_tree(tmp_path / "ckpt", {"model.pt": b"w" * 10}) / "model.pt"
    with nb.init("llm", dir=root, run_name="train", **QUIET) as train:
        train.use_artifact("datasets/x:v1")
        time.sleep(0.02)
        train.add_artifact("model", ckpt, type="checkpoint")
        train.add_artifact("model", ckpt, type="checkpoint")
    nb.add_artifact("llm", "notes", str(ckpt), dir=root)       # made outside a run: no diamond
    with Viewer(root) as v:
        runs = by_name(v.get("/api/p/llm/.timeline").json())
        (made,) = runs["prepare"]["versions"]
        assert made["label"] == "datasets/x:v1" and made["type"] == "dataset"
        assert made["project"] == "datasets" and made["state"] == "linked"
        assert made["url"] == "/p/datasets/.artifact/x/v1"
        prepare = runs["prepare"]
        assert prepare["start"] - 1 < made["created"] < prepare["end"]     # whole seconds
        assert prepare["start"] <= made["at"] <= prepare["end"]            # on the bar
        models = runs["train"]["versions"]
        assert [m["label"] for m in models] == ["llm/model:v1", "llm/model:v2"]
        assert all(m["type"] == "checkpoint" and m["url"].startswith("/p/llm/.artifact/model/v")
                   for m in models)
        assert runs["train"]["start"] <= models[0]["at"] <= models[1]["at"] <= runs["train"]["end"]
        # the version this run used is not a diamond on it
        assert "datasets/x:v1" not in [m["label"] for m in models]

    unlink_version("llm", "model", 1, dir=root)
    with Viewer(root) as v:
        models = by_name(v.get("/api/p/llm/.timeline").json())["train"]["versions"]
        assert [(m["label"], m["state"]) for m in models] == [("llm/model:v1", "unlinked"),
                                                              ("llm/model:v2", "linked")]


def test_query_filters_and_a_bad_query_says_why(root, history):
    with Viewer(root) as v:
        found = v.get("/api/p/llm/.timeline?q=" + quote("status:crashed")).json()
        assert [r["name"] for r in found["runs"]] == ["crasher"] and found["total"] == 1
        assert found["query"] == "status:crashed" and found["live"] is False
        tagged = v.get("/api/p/llm/.timeline?q=" + quote("tag:sweep")).json()
        assert [r["name"] for r in tagged["runs"]] == ["base"]
        lost = v.get("/api/p/llm/.timeline?q=" + quote("status:lost")).json()
        assert [r["name"] for r in lost["runs"]] == ["lost-one"]

        bad = v.get("/api/p/llm/.timeline?q=" + quote("tag:"))
        assert bad.status == 400
        assert "expected a tag after" in bad.json()["error"]
        page = v.get("/p/llm/.timeline?q=" + quote("tag:"))
        assert page.status == 200 and "query-error" in page.text
        assert "expected a tag after" in page.text
        assert 'value="tag:"' in page.text                    # the box keeps the query
        assert 'id="timeline-data"' not in page.text

        narrowed = v.get("/p/llm/.timeline?q=" + quote("status:crashed"))
        assert narrowed.status == 200
        embedded = json.loads(html.unescape(re.search(
            r'<script type="application/json" id="timeline-data">(.*?)</script>',
            narrowed.text, re.S).group(1)))
        assert [r["name"] for r in embedded["runs"]] == ["crasher"]
        assert 'data-api="/api/p/llm/.timeline?q=status:crashed"' in narrowed.text

        empty = v.get("/p/llm/.timeline?q=" + quote("name:nothing-like-this"))
        assert empty.status == 200 and "No runs match this query." in empty.text
        assert 'id="timeline"' not in empty.text

        assert v.get("/p/nope/.timeline").status == 404
        assert v.get("/api/p/nope/.timeline").json()["status"] == 404


def test_page_holds_the_data_and_the_script_and_escapes_names(root, tmp_path):
    loss_run(root, name=XSS, steps=3)
    ckpt = make_tree(tmp_path / "c", {"m.pt": b"m"}) / "m.pt"
    with nb.init("llm", dir=root, run_name="plain", **QUIET) as run:
        run.add_artifact("model", ckpt, type="model")
    with Viewer(root) as v:
        page = v.get("/p/llm/.timeline")
        assert page.status == 200
        text = page.text
        assert '<script src="/static/timeline.js" defer></script>' in text
        assert 'href="/static/timeline.css"' in text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert XSS not in text and "<img src=x" not in text
        raw = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>',
                        text, re.S).group(1)
        assert "<" not in raw and "</script" not in raw.lower()
        embedded = json.loads(raw)
        api = v.get("/api/p/llm/.timeline").json()
        assert [r["id"] for r in embedded["runs"]] == [r["id"] for r in api["runs"]]
        assert {r["name"] for r in embedded["runs"]} == {XSS, "plain"}
        assert [x["label"] for x in by_name(embedded)["plain"]["versions"]] == ["llm/model:v1"]
        assert 'id="tl-reset"' in text and 'id="tl-q"' in text
        script = v.get("/static/timeline.js")
        assert script.status == 200 and b"textContent" in script.body
        assert b"innerHTML" not in script.body
        assert v.get("/static/timeline.css").status == 200


def test_at_most_limit_runs_the_newest(root):
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    from nuboard.web.timeline_data import SessionCache, timeline
    names = [f"r{i}" for i in range(4)]
    for name in names:
        loss_run(root, name=name, steps=1)
        time.sleep(0.01)
    catalog = Catalog(root, "llm")
    try:
        sync(catalog)
        data = timeline(catalog, now=time.time(), sessions=SessionCache(), limit=2)
    finally:
        catalog.close()
    assert data["total"] == 4 and data["shown"] == 2 and data["capped"]
    assert [r["name"] for r in data["runs"]] == ["r2", "r3"]


def test_the_capped_page_says_so(root):
    for i in range(3):
        loss_run(root, name=f"r{i}", steps=1)
    with Viewer(root) as v:
        v.app.config["NUBOARD_TIMELINE_LIMIT"] = 2
        page = v.get("/p/llm/.timeline").text
        assert "showing the newest 2 (at most 2)" in page
        data = v.get("/api/p/llm/.timeline").json()
        assert data["total"] == 3 and [r["name"] for r in data["runs"]] == ["r1", "r2"]
