"""A read-only `nuboard sql` never holds a project's write lock (issue 30, item 17).

The writers of each project's schema take its advisory lock (server.lock_key), which a SELECT
can take too: `SELECT pg_advisory_xact_lock(...), pg_sleep(30)` on one project made `nuboard ls`
of another wait for it (19 s in the attack). Such a statement is stopped, with one line.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from helpers import child_env, cli, loss_run, one_line_error
from sqlalchemy import create_engine, text

from nuboard.catalog import server
from nuboard.catalog.project_catalog import Catalog


@pytest.fixture
def url(team_url) -> str:
    """The test cluster's URL; each test passes it itself."""
    return team_url


def lock_held_or_exited(engine, key: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until the advisory lock `key` is held by someone, or the child has ended."""
    deadline = time.monotonic() + timeout
    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return
        with engine.connect() as conn:
            if conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                                 "classid::bigint = :h AND objid::bigint = :l"),
                            {"h": high, "l": low}).scalar():
                return
        time.sleep(0.05)
    raise AssertionError("the statement neither took the lock nor ended")


@pytest.mark.parametrize("call", [
    "pg_advisory_xact_lock({key}), pg_sleep(30)",
    "pg_catalog.pg_advisory_lock({key}), pg_sleep(30)",
    "query_to_xml('SELECT pg_advisory_xact_lock({key}), pg_sleep(30)', true, false, '')",
])
def test_a_statement_taking_a_write_lock_is_stopped_and_ls_never_waits(root, url, call):
    loss_run(root, "llm", name="mine")
    loss_run(root, "other", name="theirs")
    assert cli(root, "ls", "--catalog", url).returncode == 0
    with Catalog(root, "other", url=url) as other:
        key = server.lock_key(other.schema)
    statement = f"SELECT {call.format(key=key)}"
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "sql", statement,
                             "--project", "llm", "--catalog", url],
                            env=child_env(NUBOARD_DIR=str(root)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    admin = create_engine(url)
    try:
        lock_held_or_exited(admin, key, proc)
        started = time.monotonic()
        listed = cli(root, "ls", "other", "--catalog", url, timeout=120)
        took = time.monotonic() - started
        assert listed.returncode == 0 and "theirs" in listed.stdout, listed.stderr
        assert took < 15, f"nuboard ls waited {took:.0f} s for the statement's lock"
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        admin.dispose()
    assert proc.returncode == 1, (out, err)
    assert "takes an advisory lock" in one_line_error(subprocess.CompletedProcess([], 1, out, err))
