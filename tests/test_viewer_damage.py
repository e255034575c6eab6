"""One damaged file never breaks a project: the sync skips the run with its reason, and every
page of the viewer answers (the damaged run shows what it can, or a clear 4xx), never a 500."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import loss_run
from helpers_http import Viewer

from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync

DEEP = 5000


def _copy_run(runs, good: str, name: str, edit) -> None:
    """A copy of the good run's folder under a new id, its run.json rewritten by edit."""
    folder = runs / name
    shutil.copytree(runs / good, folder)
    doc = json.loads((folder / "run.json").read_text())
    doc["id"] = name
    text = edit(doc)
    (folder / "run.json").write_text(text if isinstance(text, str) else json.dumps(doc))


def _set(**fields):
    def edit(doc):
        doc.update(fields)
    return edit


def _nested(depth: int):
    def edit(doc):
        doc.pop("config", None)
        return json.dumps(doc)[:-1] + ', "config": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    return edit


DAMAGED = {
    "surrogate": lambda doc: json.dumps(doc).replace('"good"', '"\\ud800"'),
    "start-int": _set(start_time=12345),
    "input-null-project": _set(inputs=[{"project": None, "name": "data", "version": 1}]),
    "input-int-project": _set(inputs=[{"project": 7, "name": "data", "version": 1}]),
    "deep-config": _nested(DEEP),
    "deep-150": _nested(150),
    "tags-dict": _set(tags={"a": 1}),
    "parent-list": _set(parent=[1, 2]),
}


@pytest.fixture
def damaged(root):
    """Project 'proj' with one good run, each kind of damaged run, a stray log of an absurd
    rank, a version folder of an absurd number and a views.json of the wrong shape."""
    good = loss_run(root, "proj", name="good")
    runs = root / "proj" / "runs"
    for name, edit in DAMAGED.items():
        _copy_run(runs, good, name, edit)
    _copy_run(runs, good, "stray-log", lambda doc: None)
    shutil.copy(runs / "stray-log" / "events.r0.s0.log",
                runs / "stray-log" / "events.r99999999999999999999.s0.log")
    _copy_run(runs, good, "fifo-run-json", lambda doc: None)
    (runs / "fifo-run-json" / "run.json").unlink()
    os.mkfifo(runs / "fifo-run-json" / "run.json")
    (root / "proj" / "artifacts" / "model" / "v99999999999999999999").mkdir(parents=True)
    (root / "proj" / "views.json").write_text(json.dumps({"views": {"name": "x"}}))
    loss_run(root, "other", name="elsewhere")
    return good


def test_sync_skips_each_damaged_run_with_its_reason(root, damaged):
    with Catalog(root, "proj") as catalog:
        report = sync(catalog)
    skipped = dict(report.skipped)
    assert [where for where, _ in report.skipped_versions] == ["artifacts/model/v99999999999999999999"]
    # a log file name beyond 64 bits is skipped with the run, or ignored by the log listing
    assert report.added + ("stray-log" in skipped) == 2
    assert set(skipped) - {"stray-log"} == set(DAMAGED) | {"fifo-run-json"}
    assert "surrogate" in skipped["surrogate"]
    assert "'start_time' is 12345" in skipped["start-int"]
    assert "inputs[0] has project None" in skipped["input-null-project"]
    assert "nested more than" in skipped["deep-150"]
    assert "99999999999999999999" in skipped.get("stray-log", "99999999999999999999")
    assert "not a regular file" in skipped["fifo-run-json"]


def test_every_page_answers_and_lists_the_good_run(root, damaged):
    pages = ["/", "/p/proj", "/api/p/proj/runs", "/p/proj/.charts", "/api/p/proj/.charts",
             "/p/proj/.timeline", "/api/p/proj/.timeline", "/artifacts", "/api/artifacts",
             "/p/proj/.artifacts", "/p/proj/.views", f"/p/proj/.charts?runs={damaged}"]
    for run_id in [damaged, *DAMAGED, "stray-log", "fifo-run-json"]:
        base = f"/p/proj/.run/{run_id}"
        pages += [base, f"{base}?tab=console", f"{base}?tab=files", f"/api{base}",
                  f"{base}/console", f"{base}/files/", f"/p/proj/.charts?runs={run_id},{damaged}",
                  f"/api/p/proj/.chart?runs={run_id},{damaged}&name=train/loss"]
    with Viewer(root) as viewer:
        answers = {path: viewer.get(path) for path in pages}
        listed = [r["id"] for r in viewer.get("/api/p/proj/runs").json()["runs"]]
        runs_page = viewer.get("/p/proj").text
    errors = {path: r.status for path, r in answers.items() if r.status >= 500}
    assert errors == {}
    assert set(listed) - {"stray-log"} == {damaged}
    assert "views.json is not of the shape" in runs_page
    assert "run folders cannot be shown" in runs_page          # each skip, with its reason
    assert "start-int</a>: run.json field &#39;start_time&#39; is 12345" in runs_page
    # a damaged run's Overview names what is wrong; its files can still be browsed
    page = answers["/p/proj/.run/start-int"]
    assert page.status == 422 and "start_time" in page.text
    assert answers["/p/proj/.run/start-int/files/"].status == 200
    assert "run.json" in answers["/p/proj/.run/start-int/files/"].text
    assert answers["/p/proj/.run/deep-config?tab=files"].status == 200


# -- FIFOs, sockets and devices (row 14 of reliability.md) -------------------------------------

def _release(fifos) -> None:
    """Open each FIFO for writing and close it, so a reader stuck on it sees its end."""
    for fifo in fifos:
        for _ in range(20):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                break


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_a_fifo_in_a_run_folder_never_blocks_the_viewer(root):
    good = loss_run(root, "proj", name="good")
    pipes = loss_run(root, "proj", name="pipes")
    folder = root / "proj" / "runs" / pipes
    (folder / "files").mkdir(exist_ok=True)
    fifos = [folder / "files" / "fifo", folder / "files" / "output.log",
             folder / "files" / "command.txt", folder / "data.parquet"]
    for fifo in fifos:
        if fifo.exists():
            fifo.unlink()
        os.mkfifo(fifo)
    base = f"/p/proj/.run/{pipes}"
    asked = [f"{base}/files/files/fifo", f"{base}/files/files/fifo?download=1", f"{base}/files/files/output.log",
             base, f"{base}?tab=console", f"{base}/console", f"/api{base}/console",
             f"/api/p/proj/.chart?runs={pipes}&name=train/loss"]
    try:
        with Viewer(root) as viewer:
            with ThreadPoolExecutor(len(asked)) as pool:
                answers = list(pool.map(lambda p: _get_within(viewer, p, 10), asked))
            started = time.monotonic()
            page = viewer.get(f"/p/proj/.run/{good}")
            took = time.monotonic() - started
    finally:
        _release(fifos)
    assert page.status == 200 and took < 1.0
    status = dict(zip(asked, answers))
    assert status[f"{base}/files/files/fifo"] == 404
    assert status[f"{base}/files/files/fifo?download=1"] == 404
    assert status[base] == 200 and status[f"{base}?tab=console"] == 200
    assert status[f"/api/p/proj/.chart?runs={pipes}&name=train/loss"] == 200


def _get_within(viewer, path: str, seconds: float):
    """The status of a GET, or 'timeout' when no answer came in time."""
    conn = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=seconds)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except (TimeoutError, OSError):
        return "timeout"
    finally:
        conn.close()


def test_a_path_too_long_for_the_system_is_a_404(root):
    run_id = loss_run(root, "proj", name="good")
    base = f"/p/proj/.run/{run_id}/files/"
    with Viewer(root) as viewer:
        answers = [viewer.get(base + sub).status
                   for sub in ("a" * 3000, "a/" * 3000, "a" * 3000 + "?download=1")]
        answers.append(viewer.get(f"/api{base}" + "a/" * 3000).status)
    assert answers == [404] * 4


def test_a_run_json_made_too_deep_after_indexing_breaks_no_page(root):
    """Indexed while fine, then rewritten nested 5,000 deep: pages that read run.json answer."""
    good = loss_run(root, "proj", name="good")
    later = loss_run(root, "proj", name="later")
    with Viewer(root, sync_every=3600) as viewer:
        assert viewer.get("/api/p/proj/runs").json()["total"] == 2
        _copy_run(root / "proj" / "runs", good, "tmp", _nested(DEEP))
        os.replace(root / "proj" / "runs" / "tmp" / "run.json",
                   root / "proj" / "runs" / later / "run.json")
        pages = [f"/p/proj/.charts?runs={later},{good}", "/p/proj/.timeline",
                 f"/p/proj/.run/{later}", f"/p/proj/.run/{later}?tab=files", "/p/proj"]
        answers = {p: viewer.get(p).status for p in pages}
    assert all(status < 500 for status in answers.values()), answers
    assert answers[f"/p/proj/.run/{later}"] == 422


def test_a_skipped_run_is_reported_again_until_it_is_fixed(root):
    good = loss_run(root, "proj", name="good")
    runs = root / "proj" / "runs"
    _copy_run(runs, good, "bad", _set(start_time=12345))
    with Catalog(root, "proj") as catalog:
        first = sync(catalog)
        again = sync(catalog)                        # unchanged: the same reason, not re-read
        assert dict(first.skipped) == dict(again.skipped)
        assert "start_time" in dict(again.skipped)["bad"]
        doc = json.loads((runs / "bad" / "run.json").read_text())
        doc["start_time"] = "2026-12-03T10:00:00.000Z"
        (runs / "bad" / "run.json").write_text(json.dumps(doc))
        fixed = sync(catalog)
        assert fixed.skipped == [] and fixed.added == 1
        shutil.rmtree(runs / "bad")
        assert sync(catalog).removed == 1
        assert catalog.skips == {}
