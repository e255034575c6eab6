"""A catalog server stopping under a command or a viewer: one line, no SQL (issue 30, item 17).

A PostgreSQL of this test's own (scripts/pg_cluster) is stopped while `nuboard reindex` waits
inside its sync (on a table lock the test holds) and while a viewer serves: the reindex ends
with one line and exit 1, and the viewer's log says once that the server is gone, not a
traceback with the SQL at every background sync.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import PG_REQUIRED, pg_url
from helpers import child_env, cli, loss_run, one_line_error
from helpers_http import RemoteViewer
from sqlalchemy import create_engine, text

from nuboard.catalog.project_catalog import Catalog

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pg_cluster"


@pytest.fixture
def own_cluster(monkeypatch):
    """A cluster of this test's own, started: (its URL, a function that stops it)."""
    if pg_url() is None:
        if os.environ.get(PG_REQUIRED):
            pytest.fail("NUBOARD_TEST_PG_URL is not set: scripts/test starts a PostgreSQL")
        pytest.skip("no PostgreSQL for the tests; scripts/test starts one")
    monkeypatch.delenv("NUBOARD_CATALOG_URL", raising=False)
    # not under tmp_path: the server runs as `postgres` and must enter every folder above its own
    folder = Path(tempfile.mkdtemp(prefix="nuboard-pg-outage-"))
    started = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr

    def stop() -> None:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], timeout=120, check=True)

    try:
        yield started.stdout.strip(), stop
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_lock_wait(engine, timeout: float = 60) -> None:
    """Until a nuboard session waits on a lock (the reindex reached the locked table)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            if conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                 "'nuboard' AND wait_event_type = 'Lock'")).scalar():
                return
        time.sleep(0.1)
    raise AssertionError("the reindex never reached the locked table")


def test_a_stopped_server_is_one_line_for_reindex_and_once_in_the_viewer_log(root, own_cluster):
    url, stop = own_cluster
    for i in range(3):
        loss_run(root, "llm", name=f"run{i}")
    assert cli(root, "ls", "llm", "--catalog", url).returncode == 0
    with Catalog(root, "llm", url=url) as catalog:
        schema = catalog.schema
    viewer = RemoteViewer(root, "--catalog", url)
    admin = create_engine(url)
    holder = None
    try:
        assert viewer.get("/api/p/llm/runs").status == 200
        holder = admin.connect()
        holder.execute(text(f'LOCK TABLE "{schema}".runs IN ACCESS EXCLUSIVE MODE'))
        reindex = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "reindex", "llm",
                                    "--catalog", url], env=child_env(NUBOARD_DIR=str(root)),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        wait_for_lock_wait(admin)
        stop()                                         # the lock is still held: it never ends
        out, err = reindex.communicate(timeout=120)
        assert reindex.returncode == 1, (out, err)
        line = one_line_error(subprocess.CompletedProcess([], 1, out, err))
        assert "cannot be used" in line and "SELECT" not in line and "sqlalche.me" not in line
        # the viewer, while the server is down: pages answer 503, its log says so once
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            assert viewer.get("/api/p/llm/runs").status == 503
            time.sleep(0.5)
    finally:
        # the holder is let go here, not by the garbage collector in some later test: its
        # finalizer logs the stopped server's error with a traceback, and Python 3.11.7's
        # traceback parses source with ast, which broke a werkzeug ast.parse it interrupted
        # ("AST constructor recursion depth mismatch")
        if holder is not None:
            holder.invalidate()
            holder.close()
        admin.dispose()
        viewer.proc.send_signal(signal.SIGINT)
        _, log = viewer.proc.communicate(timeout=60)
    assert "Traceback" not in log and "SELECT" not in log and "sqlalche.me" not in log, log
    down = [ln for ln in log.splitlines() if "cannot be used" in ln]
    assert len(down) == 1 and "503" in down[0], log
