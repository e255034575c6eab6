"""Shared fixtures: a fresh root folder per test, finished runs in it, the catalog's backend
(SQLite, or the PostgreSQL that scripts/test starts), and Playwright's Chromium.

Helpers that are not fixtures (makers, child processes, the CLI) are in helpers.py.
"""
from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest
from helpers import write_run

PG_URL = "NUBOARD_TEST_PG_URL"          # set by scripts/test to its private cluster
PG_REQUIRED = "NUBOARD_TEST_PG_REQUIRED"  # set by scripts/test: no PostgreSQL is a failure

# -- hypothesis: the fuzz tests' budgets (docs/testing.md) ----------------------------------------
# `ci` (the default): the same examples on every run, a few seconds per fuzz test. `long`:
# NUBOARD_FUZZ=long, random examples, 100 times as many; NUBOARD_FUZZ_EXAMPLES=N sets the count.
# (tests/test_package.py runs a test in a venv without hypothesis: then there are no profiles.)
FUZZ_EXAMPLES = 50
try:
    from hypothesis import HealthCheck, settings
except ImportError:
    settings = None
if settings is not None:
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",       # not .hypothesis/ in the checkout
                          os.path.join(tempfile.gettempdir(), "nuboard-hypothesis"))
    _FUZZ_COMMON = dict(deadline=None, database=None, print_blob=True,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                               HealthCheck.function_scoped_fixture])
    settings.register_profile("ci", derandomize=True, max_examples=FUZZ_EXAMPLES, **_FUZZ_COMMON)
    settings.register_profile("long", derandomize=False, max_examples=100 * FUZZ_EXAMPLES,
                              **_FUZZ_COMMON)
    if os.environ.get("NUBOARD_FUZZ_EXAMPLES"):
        settings.register_profile("custom", derandomize=False,
                                  max_examples=int(os.environ["NUBOARD_FUZZ_EXAMPLES"]), **_FUZZ_COMMON)
        settings.load_profile("custom")
    else:
        settings.load_profile("long" if os.environ.get("NUBOARD_FUZZ") == "long" else "ci")


# -- the parallel and the serial part (scripts/test, docs/testing.md) -----------------------------
# An xdist worker (and pytest started as a shell's background job) runs with SIGINT ignored, and a
# child inherits that: `nuboard up` stopped with SIGINT (a user's Ctrl-C; RemoteViewer.close)
# would serve on. The tests take Python's own handler back, so their children start with it.
signal.signal(signal.SIGINT, signal.default_int_handler)

PART = "NUBOARD_TEST_PART"      # set by scripts/test: "parallel" (under xdist) or "serial"


# The modules that take longest, slowest first (measured under xdist, 2026-12-07; the object-storage
# ones, which run child processes against a moto server, among them): under xdist
# they are handed out first, so that none starts last and holds up the end (--dist loadfile keeps
# a module on one worker).
SLOW_MODULES = [
    "test_package.py", "test_fuzz_file_kinds.py", "test_integration_lightning.py", "test_sync.py",
    "test_artifact_remote.py", "test_up_bucket.py", "test_sync_to.py", "test_bench_sync.py",
    "test_import_mlflow.py", "test_clean_exit.py", "test_team_catalog.py", "test_browser_layout.py",
    "test_browser.py", "test_browser_artifacts.py", "test_shutdown_stress.py", "test_team_outage.py",
    "test_browser_run_page.py", "test_viewer_serving.py", "test_browser_charts.py",
    "test_browser_sweep_accept.py",
]


def pytest_collection_modifyitems(config, items):
    """With $NUBOARD_TEST_PART, keep the tests of that part: `serial` ones (they time one call
    against a bound, so they run alone) or the rest. Under xdist, the slowest modules first."""
    part = os.environ.get(PART)
    if part in ("parallel", "serial"):
        keep = [item for item in items
                if (item.get_closest_marker("serial") is not None) == (part == "serial")]
        if len(keep) < len(items):
            kept = set(map(id, keep))
            config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
            items[:] = keep
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {name: i for i, name in enumerate(SLOW_MODULES)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))     # stable: in-module order kept


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
def team_url(monkeypatch) -> str:
    """The test cluster's URL, for tests that pass it themselves ($NUBOARD_CATALOG_URL unset);
    a failure without it where scripts/test said there is one, else a skip."""
    found = pg_url()
    if found is None:
        if os.environ.get(PG_REQUIRED):
            pytest.fail(f"{PG_URL} is not set: scripts/test starts a PostgreSQL for these tests")
        pytest.skip(f"no PostgreSQL for the tests ({PG_URL}); scripts/test starts one")
    monkeypatch.delenv("NUBOARD_CATALOG_URL", raising=False)
    return found


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


# -- object storage: moto's S3 server, one per worker (tests/helpers_s3.py) -----------------------
@pytest.fixture(scope="session")
def s3():
    """A real S3-compatible server for this worker; while a test uses it, the AWS_* settings in
    os.environ point at it (so nb.init, the CLI in-process and child processes reach it)."""
    from helpers_s3 import S3Server
    with S3Server() as server:
        yield server


@pytest.fixture
def s3_env(s3, monkeypatch):
    """The `s3` server, with its AWS_* settings in os.environ for this test."""
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    return s3
