"""The viewer's catalog under a live server: fresh after an idle spell, healed after damage."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from helpers import child_env, loss_run
from helpers_http import RemoteViewer, Viewer

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def test_first_request_after_idle_shows_runs_made_meanwhile(root):
    loss_run(root, "llm", name="first")
    with Viewer(root, sync_every=0.5) as viewer:
        assert viewer.get("/api/p/llm/runs").json()["total"] == 1
        time.sleep(1.0)                                # idle past the refresh interval
        loss_run(root, "llm", name="made-while-idle")
        listed = viewer.get("/api/p/llm/runs").json()
        page = viewer.get("/p/llm").text
    assert listed["total"] == 2
    assert "made-while-idle" in page


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_requests_within_the_interval_do_not_wait_for_a_sync(root):
    loss_run(root, "llm", name="first")
    with Viewer(root, sync_every=60.0) as viewer:
        viewer.get("/api/p/llm/runs")
        loss_run(root, "llm", name="second")
        started = time.monotonic()
        total = viewer.get("/api/p/llm/runs").json()["total"]
        took = time.monotonic() - started
    assert total == 1 and took < 1.0               # answered from the catalog as it was


def _ls(root) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", "ls", "llm", "--json",
                           "--dir", str(root)], capture_output=True, text=True, timeout=50,
                          env=child_env())


def _total_soon(viewer, want: int) -> int:
    """The runs the viewer lists, asked again for a few seconds until it is `want`."""
    deadline = time.monotonic() + 10
    while True:
        reply = viewer.get("/api/p/llm/runs")
        assert reply.status == 200, reply.text
        total = reply.json()["total"]
        if total == want or time.monotonic() > deadline:
            return total
        time.sleep(0.2)


@pytest.mark.sqlite_only
def test_catalog_truncated_or_removed_under_a_live_viewer_heals(root):
    for i in range(3):
        loss_run(root, "llm", name=f"r{i}")
    catalog = root / "llm" / ".nuboard" / "catalog.sqlite"
    with RemoteViewer(root) as viewer:
        assert viewer.get("/api/p/llm/runs").json()["total"] == 3
        os.truncate(catalog, 0)                      # the viewer still holds it and its WAL
        started = time.monotonic()
        listed = _ls(root)
        assert listed.returncode == 0, listed.stderr
        assert time.monotonic() - started < 30       # no wait on a broken catalog's lock
        assert len(json.loads(listed.stdout)) == 3
        assert _total_soon(viewer, 3) == 3
        shutil.rmtree(root / "llm" / ".nuboard")     # the folder itself, under the viewer
        for path in ("/p/llm", "/api/p/llm/runs", "/p/llm/.charts", "/p/llm/.timeline"):
            assert viewer.get(path).status == 200, path
        loss_run(root, "llm", name="after")
        assert _total_soon(viewer, 4) == 4
        assert catalog.stat().st_size > 0
        listed = _ls(root)
        assert listed.returncode == 0 and len(json.loads(listed.stdout)) == 4
