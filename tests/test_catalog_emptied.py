"""A catalog emptied to 0 bytes under an idle viewer is set aside and rebuilt (issue 30, item 11).

An idle viewer keeps its connections, so the catalog's -shm stays, mapped, while its WAL is
empty (a viewer that found the catalog up to date has written nothing). A file truncated to
0 bytes then looks like a new database to the next opener, which used to wait out the 60 s
busy timeout on the viewer's shared memory and fail with "database is locked".
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers import cli, loss_run
from helpers_http import RemoteViewer

pytestmark = pytest.mark.sqlite_only


def catalog_file(root: Path) -> Path:
    return root / "llm" / ".nuboard" / "catalog.sqlite"


def wait_idle(path: Path, timeout: float = 60) -> None:
    """Until the WAL beside the catalog is empty (the viewer checkpoints when it idles)."""
    deadline = time.monotonic() + timeout
    wal = Path(f"{path}-wal")
    while time.monotonic() < deadline:
        if Path(f"{path}-shm").exists() and (not wal.exists() or wal.stat().st_size == 0):
            return
        time.sleep(0.1)
    raise AssertionError(f"the WAL of {path} never emptied")


def test_ls_rebuilds_a_catalog_emptied_under_an_idle_viewer(root):
    loss_run(root, "llm", name="alpha")
    loss_run(root, "llm", name="beta")
    assert cli(root, "ls", "llm").returncode == 0       # the catalog made, and closed, by a command
    with RemoteViewer(root) as viewer:
        assert viewer.get("/api/p/llm/runs").status == 200
        path = catalog_file(root)
        wait_idle(path)
        os.truncate(path, 0)
        started = time.monotonic()
        listed = cli(root, "ls", "llm", "--json", timeout=120)
        took = time.monotonic() - started
        assert listed.returncode == 0, listed.stderr
        assert sorted(r["name"] for r in json.loads(listed.stdout)) == ["alpha", "beta"]
        assert took < 30, f"nuboard ls took {took:.0f} s"
        assert "truncated to 0 bytes" in listed.stderr
        assert list(path.parent.glob("catalog.sqlite.damaged-*"))        # set aside, not lost
        # the viewer goes on with the rebuilt catalog
        page = viewer.get("/api/p/llm/runs")
        assert page.status == 200 and b"alpha" in page.body
