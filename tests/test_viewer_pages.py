"""The viewer's pages over real HTTP: Runs (query, sort, columns, pages, views), run details,
console, files and charts, on runs written by the real API."""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import time
from urllib.parse import quote

import pytest
from helpers import QUIET, loss_run
from helpers_http import Viewer, visible_text

import nuboard as nb

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def sweep(root):
    """Five finished runs with configs and tags, one crashed, one still running."""
    ids = {}
    for i, lr in enumerate([1e-4, 3e-4, 1e-3, 3e-3, 1e-2]):
        ids[f"lr{lr:g}"] = loss_run(root, name=f"lr{lr:g}", config={"lr": lr, "model": {"width": 64 * (i + 1)}},
                                    tags=["sweep"] + (["baseline"] if i == 2 else []), group="lr-sweep")
    try:
        with nb.init("llm", dir=root, run_name="crasher", **QUIET) as run:
            run.add_scalar("train/loss", 5.0, step=0)
            raise RuntimeError("boom")
    except RuntimeError:
        ids["crasher"] = run.id
    live = nb.init("llm", dir=root, run_name="live-one", **QUIET)
    live.add_scalar("train/loss", 2.0, step=0)
    live.flush()
    ids["live"] = live.id
    yield ids
    live.finish()


def test_runs_page_lists_filters_and_sorts(root, sweep):
    with Viewer(root) as v:
        page = v.get("/p/llm")
        assert page.status == 200
        text = visible_text(page.text)
        for name in ("lr0.0001", "lr0.01", "crasher", "live-one"):
            assert name in text
        assert "status-crashed" in page.text and "status-running" in page.text
        assert 'hx-trigger="every 5s"' in page.text          # live refresh while a run runs

        found = v.get("/api/p/llm/runs?q=" + quote("tag:baseline")).json()
        assert [r["name"] for r in found["runs"]] == ["lr0.001"]
        found = v.get("/api/p/llm/runs?q=" + quote("lr>=1e-3") + "&sort=config:lr&desc=0").json()
        assert [r["name"] for r in found["runs"]] == ["lr0.001", "lr0.003", "lr0.01"]
        by_name = v.get("/api/p/llm/runs?sort=name&desc=0").json()
        names = [r["name"] for r in by_name["runs"]]
        assert names == sorted(names)

        bad = v.get("/p/llm?q=" + quote("tag:"))
        assert bad.status == 200 and "query-error" in bad.text
        assert "expected a tag after" in bad.text
        assert v.get("/api/p/llm/runs?q=" + quote("tag:")).status == 400


def test_columns_and_pages(root, sweep):
    with Viewer(root) as v:
        cols = "status,name,config:lr,config:model.width,scalar:train/loss"
        page = v.get(f"/p/llm?cols={quote(cols)}&sort=config:model.width&desc=1")
        assert page.status == 200
        text = visible_text(page.text)
        assert "model.width" in text and "train/loss" in text
        assert text.index("lr0.01") < text.index("lr0.0001")          # widest first
        data = v.get(f"/api/p/llm/runs?cols={quote(cols)}").json()
        first = {r["name"]: r["values"] for r in data["runs"]}
        assert first["lr0.001"]["config:lr"] == pytest.approx(1e-3)
        assert first["lr0.001"]["scalar:train/loss"] == pytest.approx(0.1)
        summary = v.get("/api/p/llm/runs?cols=name,min:train/loss,max:train/loss"
                        "&sort=max:train/loss&desc=1").json()
        assert summary["runs"][0]["name"] == "crasher"
        assert summary["runs"][0]["values"]["max:train/loss"] == 5.0
        assert first["lr0.001"]["scalar:train/loss"] == pytest.approx(0.1)
        lowest = {r["name"]: r["values"]["min:train/loss"] for r in summary["runs"]}
        assert lowest["lr0.001"] == pytest.approx(0.1)
        assert "train/loss (max)" in v.get("/p/llm?cols=name,max:train/loss").text
        pages = v.get("/api/p/llm/runs?per_page=3&page=2&sort=name&desc=0").json()
        assert pages["total"] == 7 and pages["pages"] == 3 and len(pages["runs"]) == 3
        assert v.get("/p/llm?cols=bogus").status == 200
        assert "unknown column" in v.get("/p/llm?cols=bogus").text
        chooser = v.get("/p/llm").text
        assert 'value="config:model.width"' in chooser and 'value="scalar:train/loss"' in chooser
        assert 'value="min:train/loss"' in chooser


def test_htmx_gets_a_fragment_and_a_history_restore_the_whole_page(root, sweep):
    with Viewer(root) as v:
        part = v.get("/p/llm?q=tag:baseline", headers={"HX-Request": "true",
                                                      "HX-Target": "runs-results"})
        assert part.status == 200 and "<html" not in part.text and 'id="runs-results"' in part.text
        assert "HX-Request" in part.headers["vary"]
        whole = v.get("/p/llm?q=tag:baseline", headers={"HX-Request": "true",
                                                       "HX-Target": "runs-results",
                                                       "HX-History-Restore-Request": "true"})
        assert whole.text.lstrip().startswith("<!doctype html>") and 'id="q"' in whole.text


def test_unknown_project_and_run_are_404(root, sweep):
    with Viewer(root) as v:
        assert v.get("/p/nope").status == 404
        assert v.get("/p/llm/.run/20260101T0000-deadbeef").status == 404
        assert v.get("/api/p/llm/.run/20260101T0000-deadbeef").json()["status"] == 404
        assert v.get("/").status == 302                  # one project: straight to its runs


def test_run_details_show_what_the_run_recorded(root, tmp_path):
    repo = tmp_path / "code"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "train.py").write_text("print('hi')\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a",
                    "commit", "-qm", "init"], check=True)
    (repo / "train.py").write_text("print('changed')\n")
    parent = loss_run(root, name="parent", steps=20, config={"optim": {"lr": 0.1}},
                      tags=["base"], notes="first try", group="g1",
                      system_metrics=False, capture_console=False, capture_env=True,
                      code_dir=str(repo))
    with nb.init("llm", dir=root, run_name="child", fork_from=(parent, 9), **QUIET) as fork:
        fork.add_scalar("train/loss", 0.5, step=10)
    again = nb.init("llm", dir=root, run_id=parent, resume="must", **QUIET)
    again.add_scalar("train/loss", 0.01, step=20)
    again.finish()
    with Viewer(root) as v:
        run = v.get(f"/api/p/llm/.run/{parent}").json()
        assert {"key": "optim.lr", "value": 0.1, "type": "float"} in run["config"]
        assert run["tags"] == ["base"] and run["notes"] == "first try" and run["group"] == "g1"
        assert run["git"]["dirty"] is True and "changed" in run["patch"]
        assert run["command"] and run["packages"]
        assert len(run["sessions"]) == 2 and run["ranks"] == [0]
        page = v.get(f"/p/llm/.run/{parent}").text
        assert "optim.lr" in page and "Resumed 1 time" in page and "git.patch" in page
        group_link = re.search(r'href="(/p/llm\?q=group[^"]+)"', page).group(1)
        linked = v.get(html.unescape(group_link).replace("?", "?format=json&", 1)).json()
        assert [r["name"] for r in linked["runs"]] == ["parent"]
        child = v.get(f"/p/llm/.run/{fork.id}").text
        assert f'href="/p/llm/.run/{parent}"' in child and "at step 9" in child


def test_notes_edit_conflict_and_guards(root, sweep):
    run_id = sweep["lr0.001"]
    path = f"/p/llm/.run/{run_id}/notes"
    run_json = root / "llm" / "runs" / run_id / "run.json"
    with Viewer(root) as v:
        ok = v.post(path, {"notes": "better <b>lr</b>", "base": "", "base_set": "0"},
                    headers={"HX-Request": "true"})
        assert ok.status == 200 and "Saved." in ok.text
        assert json.loads(run_json.read_text())["notes"] == "better <b>lr</b>"
        assert "better &lt;b&gt;lr&lt;/b&gt;" in ok.text
        assert "better" in v.get(f"/api/p/llm/runs?q={quote('better')}").text
        stale = v.post(path, {"notes": "mine", "base": "", "base_set": "0"})
        assert stale.status == 409 and "changed by someone else" in stale.text
        assert json.loads(run_json.read_text())["notes"] == "better <b>lr</b>"
        for reply in (v.post(path, {"notes": "x"}, token=False),
                      v.post(path, {"notes": "x"}, origin="http://evil.example"),
                      v.post(path, {"notes": "x"}, origin=None),
                      v.request("POST", path, f"notes=x&csrf_token={v.token}".encode(),
                                {"Content-Type": "text/plain", "Origin": "http://evil.example"}),
                      v.request("POST", path, b"notes=x", {"Content-Type": "text/plain",
                                                          "Origin": v.origin})):
            assert reply.status == 403
        assert json.loads(run_json.read_text())["notes"] == "better <b>lr</b>"
    with Viewer(root, read_only=True) as v:
        assert v.post(path, {"notes": "x", "base": "better <b>lr</b>", "base_set": "1"}).status == 403


def test_dns_rebinding_host_is_refused(root, sweep):
    with Viewer(root) as v:
        assert v.get("/p/llm", headers={"Host": "evil.example"}).status == 403
        assert v.get("/p/llm", headers={"Host": f"evil.example:{v.port}"}).status == 403
        assert v.get("/p/llm", headers={"Host": f"localhost:{v.port}"}).status == 200
        page = v.get("/p/llm")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "HX-Request" in page.headers["vary"]


def test_saved_views_round_trip(root, sweep):
    with Viewer(root) as v:
        ids = f"{sweep['lr0.001']},{sweep['lr0.01']}"
        saved = v.post("/p/llm/.views", {"name": "big lr", "q": "lr>=1e-3",
                                          "cols": "status,name,config:lr", "sort": "config:lr",
                                          "desc": "0", "runs": ids})
        assert saved.status == 303
        doc = json.loads((root / "llm" / "views.json").read_text())
        assert doc["views"][0]["query"] == "lr>=1e-3" and doc["views"][0]["runs"] == ids.split(",")
        page = v.get("/p/llm?view=" + quote("big lr"))
        text = visible_text(page.text)
        assert "3 runs" in text and "lr0.0001" not in text
        assert text.index("lr0.001") < text.index("lr0.01")
        charts = v.get("/p/llm/.charts?view=" + quote("big lr")).text
        assert "lr0.001" in charts and "lr0.003" not in charts
        assert v.post("/p/llm/.views", {"name": "", "q": ""}).status == 400
        assert v.post("/p/llm/.views", {"name": "x", "q": ""}, token=False).status == 403
        from nuboard.catalog.project_catalog import Catalog
        with Catalog(root, "llm") as catalog, catalog.reader.connect() as conn:
            rows = conn.exec_driver_sql("SELECT name, query FROM views").all()
        assert rows == [("big lr", "lr>=1e-3")]
        assert 'aria-label="delete view big lr"' in v.get("/p/llm").text
        assert v.post("/p/llm/.views/delete", {"name": "big lr"}).status == 303
        assert json.loads((root / "llm" / "views.json").read_text())["views"] == []
        assert v.post("/p/llm/.views/delete", {"name": "big lr"}).status == 404


def test_a_view_that_cannot_be_written_is_one_clear_error(root, sweep):
    (root / "llm" / ".views.json.lock").mkdir()         # the lock cannot be opened
    with Viewer(root) as v:
        reply = v.post("/p/llm/.views", {"name": "x", "q": ""})
        assert reply.status == 400 and "cannot save views" in reply.text
    assert not (root / "llm" / "views.json").exists()


def test_console_tab_renders_like_a_terminal(root):
    with nb.init("llm", dir=root, run_name="printer", system_metrics=False,
                 capture_env=False) as run:
        print("\x1b[32mepoch 1\x1b[0m starting")
        for i in range(0, 101, 10):
            print(f"\rtrain {i:3d}%|{'#' * (i // 10):<10}|", end="", flush=True)
        print()
        print("<script>alert(1)</script> done")
    with Viewer(root) as v:
        data = v.get(f"/api/p/llm/.run/{run.id}/console").json()
        assert "epoch 1 starting" in data["lines"]
        assert "train 100%|##########|" in data["lines"]
        assert not any("train  10%" in line for line in data["lines"])
        page = v.get(f"/p/llm/.run/{run.id}?tab=console").text
        assert "&lt;script&gt;alert(1)&lt;/script&gt; done" in page
        assert "\x1b" not in page


def test_live_console_answers_204_while_unchanged(root):
    run = nb.init("llm", dir=root, run_name="live", system_metrics=False, capture_env=False)
    try:
        print("line one")
        run.flush()
        with Viewer(root) as v:
            first = v.get(f"/api/p/llm/.run/{run.id}/console").json()
            hx = {"HX-Request": "true"}
            same = v.get(f"/p/llm/.run/{run.id}/console?size={first['size']}", headers=hx)
            assert same.status == 204
            print("line two")
            grown = v.get(f"/p/llm/.run/{run.id}/console?size={first['size']}", headers=hx)
            assert grown.status == 200 and "line two" in grown.text
    finally:
        run.finish()


def test_charts_page_groups_and_data(root):
    ids = []
    for k in range(2):
        with nb.init("llm", dir=root, run_name=f"r{k}", system_metrics=True, system_interval=0.05,
                     capture_console=False, capture_env=False) as run:
            for i in range(5000):
                run.add_scalar("train/loss", 1.0 / (i + 1) + k, step=i)
                if i % 100 == 0:
                    run.add_scalar("eval/acc", i / 5000, step=i)
            time.sleep(0.2)
        ids.append(run.id)
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.charts?runs={ids[0]},{ids[1]}").text
        assert page.index('data-name="train/loss"') < page.index('data-name="eval/acc"')   # first logged
        assert page.index('data-name="train/loss"') < page.index('data-name="system/cpu/percent"')
        data = v.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]},{ids[1]}&buckets=100").json()
        assert [s["run"] for s in data["series"]] == ids
        assert all(s["total"] == 5000 and s["sent"] <= 2 * 100 + 4 for s in data["series"])
        assert data["series"][1]["y"][0] == pytest.approx(2.0)
        zoom = v.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]}&lo=100&hi=149&buckets=100").json()
        xs = zoom["series"][0]["x"]
        assert zoom["series"][0]["in_range"] == 50 and 100 in xs and 149 in xs
        wall = v.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]}&x=relative").json()
        assert wall["series"][0]["x"][0] == pytest.approx(0, abs=1.0)
        assert v.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]}&x=sideways").status == 400
        assert v.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]}&lo=nan").status == 400
        newest = v.get("/p/llm/.charts").text
        assert "showing the 2 newest" in newest


def test_a_changed_system_prefix_still_makes_the_system_section(root):
    with nb.init("llm", dir=root, run_name="own", system_prefix="sys", system_interval=0.05,
                 capture_console=False, capture_env=False) as run:
        run.add_scalar("system/temperature", 20.0, step=0)       # the user's own 'system'
        time.sleep(0.3)
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.charts?runs={run.id}").text
        assert '<section class="chart-group system">\n    <h2>sys</h2>' in page
        assert page.index('data-name="system/temperature"') < page.index('data-name="sys/cpu/percent"')


def test_live_chart_data_grows_while_the_run_runs(root):
    run = nb.init("llm", dir=root, run_name="live", **QUIET)
    try:
        for i in range(100):
            run.add_scalar("train/loss", 1.0, step=i)
        run.flush()
        with Viewer(root) as v:
            page = v.get(f"/api/p/llm/.charts?runs={run.id}").json()
            assert page["live"] is True and page["groups"] == [{"group": "train",
                                                                 "names": ["train/loss"]}]
            url = f"/api/p/llm/.chart?name=train/loss&runs={run.id}"
            first = v.get(url).json()["series"][0]
            assert first["live"] and first["total"] == 100
            for i in range(100, 250):
                run.add_scalar("train/loss", 0.5, step=i)
            run.flush()
            later = v.get(url).json()["series"][0]
            assert later["total"] == 250 and later["last"]["step"] == 249
    finally:
        run.finish()


def test_rank_picker_serves_each_rank(root, monkeypatch):
    run_id = "20261201T0000-abcdef01"
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        run = nb.init("llm", dir=root, run_id=run_id, resume="auto" if rank else None, **QUIET)
        for i in range(10):
            run.add_scalar("train/loss", float(rank * 100 + i), step=i)
        run.finish()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.charts?runs={run_id}").text
        assert '<option value="1"' in page and 'value="all"' in page
        one = v.get(f"/api/p/llm/.chart?name=train/loss&runs={run_id}&rank=1").json()
        assert one["series"][0]["y"][0] == 100.0
        both = v.get(f"/api/p/llm/.chart?name=train/loss&runs={run_id}&rank=all").json()
        assert [s["rank"] for s in both["series"]] == [0, 1]
        assert both["series"][1]["label"].endswith("r1")


@pytest.mark.sqlite_only         # a dropped schema: test_team_catalog.py
def test_catalog_deleted_under_a_live_viewer_is_rebuilt(root, sweep):
    with Viewer(root, sync_every=0.0) as v:
        before = v.get("/api/p/llm/runs").json()["total"]
        catalog = root / "llm" / ".nuboard" / "catalog.sqlite"
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{catalog}{suffix}")
            except FileNotFoundError:
                pass
        deadline = time.monotonic() + 30
        while True:
            reply = v.get("/api/p/llm/runs")
            if reply.status == 200 and reply.json()["total"] == before and catalog.exists():
                break
            assert time.monotonic() < deadline, reply.text
            time.sleep(0.2)
        assert v.get("/api/p/llm/runs?q=" + quote("status:crashed")).json()["total"] == 1
