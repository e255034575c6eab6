"""The Charts page shows each run's status as the Runs table does ('lost' for a running run
whose process died), and polls for new points only while a chosen run is running."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from helpers import QUIET, loss_run, start_child
from helpers_http import AppViewer

import nuboard as nb

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def _lost_run(root) -> str:
    """A run whose process was killed (SIGKILL) ten minutes ago, as its heartbeat shows."""
    child = start_child(f"""
        import time, nuboard as nb
        run = nb.init("llm", dir={str(root)!r}, run_name="killed", system_metrics=False,
                      capture_console=False, capture_env=False)
        run.add_scalar("train/loss", 1.0, step=0)
        run.flush()
        print(run.path, flush=True)
        time.sleep(600)
    """)
    folder = Path(child.stdout.readline().strip())
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    old = time.time() - 600
    for name in ("heartbeat", "run.json"):
        os.utime(folder / name, (old, old))
    return folder.name


def test_a_lost_run_is_lost_on_the_charts_page_and_nothing_polls(root):
    done = loss_run(root, name="done")
    lost = _lost_run(root)
    with AppViewer(root) as viewer:
        data = viewer.get(f"/api/p/llm/.charts?runs={lost},{done}").json()
        page = viewer.get(f"/p/llm/.charts?runs={lost},{done}").text
        series = viewer.get(f"/api/p/llm/.chart?runs={lost},{done}&name=train/loss").json()
        table = viewer.get("/api/p/llm/runs").json()["runs"]
    status = {r["id"]: r["status"] for r in data["runs"]}
    assert status == {lost: "lost", done: "finished"}
    assert {r["id"]: r["status"] for r in table}[lost] == "lost"    # as the Runs table says
    assert data["live"] is False
    assert 'data-live="0"' in page and 'data-live="1"' not in page
    assert 'class="badge status-lost">lost<' in page and "charts-live" not in page
    assert series["live"] is False and not any(s["live"] for s in series["series"])


def test_a_running_run_is_polled(root):
    with nb.init("llm", dir=root, run_name="live", **QUIET) as run:
        run.add_scalar("train/loss", 1.0, step=0)
        run.flush()
        with AppViewer(root) as viewer:
            page = viewer.get(f"/p/llm/.charts?runs={run.id}").text
            series = viewer.get(f"/api/p/llm/.chart?runs={run.id}&name=train/loss").json()
    assert 'data-live="1"' in page and "charts-live" in page
    assert series["live"] is True
