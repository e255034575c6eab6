"""Shared fixtures: a fresh root folder per test, finished runs in it, the catalog's backend
(SQLite, or the PostgreSQL that scripts/test starts), and Playwright's Chromium.

Helpers that are not fixtures (makers, child processes, the CLI) are in helpers.py.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import write_run

PG_URL = "NUBOARD_TEST_PG_URL"          # set by scripts/test to its private cluster
PG_REQUIRED = "NUBOARD_TEST_PG_REQUIRED"  # set by scripts/test: no PostgreSQL is a failure


def pytest_generate_tests(metafunc):
    """A test that uses `backend` runs on SQLite and on PostgreSQL; one marked sqlite_only
    (it looks at the catalog file itself) on SQLite alone."""
    if "backend" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("sqlite_only")
        metafunc.parametrize("backend", ["sqlite"] if only else ["sqlite", "postgresql"],
                             indirect=True)


def pg_url() -> str | None:
    """The test cluster's URL (None when there is none)."""
    return os.environ.get(PG_URL) or None



@pytest.fixture
def backend(request, monkeypatch) -> str:
    """'sqlite' (each project's own file) or 'postgresql' ($NUBOARD_CATALOG_URL set to the test
    cluster, for this process and the commands it starts; every test's root gets its own schemas)."""
    monkeypatch.delenv("NUBOARD_CATALOG_URL", raising=False)
    if request.param == "postgresql":
        url = pg_url()
        if url is None:
            if os.environ.get(PG_REQUIRED):
                pytest.fail(f"{PG_URL} is not set: scripts/test starts a PostgreSQL for these tests")
            pytest.skip(f"no PostgreSQL for the tests ({PG_URL}); scripts/test starts one")
        monkeypatch.setenv("NUBOARD_CATALOG_URL", url)
    return request.param


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A fresh experiments root; $NUBOARD_DIR points at it and RANK variables are cleared."""
    path = tmp_path / "experiments"
    monkeypatch.setenv("NUBOARD_DIR", str(path))
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture
def make_run(root):
    """make_run("llm", points={"train/loss": [(0, 1.0)]}, **init_kw) -> a finished run's folder."""
    def make(project: str = "llm", points: dict | None = None, **kw) -> Path:
        return write_run(root, project, points, **kw)
    return make


# -- Playwright (pytest-playwright's fixtures, pointed at Debian's Chromium) ---------------------

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args():
    """Debian's Chromium (never a browser Playwright downloads), headless, no network chatter."""
    return {"executable_path": CHROMIUM, "headless": True,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """Playwright's waits evaluate JavaScript, which the viewer's CSP forbids; the XSS test
    opens its own context with the CSP in force."""
    return {**browser_context_args, "bypass_csp": True, "viewport": {"width": 1400, "height": 900}}
