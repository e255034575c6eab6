"""What `nuboard up` prepares before it serves (web/warmup.py): every template compiled, the
lazy libraries loaded, and jemalloc as Arrow's allocator unless the user chose one. Each case
runs in a child process, as `nuboard up` does, since Arrow's allocator is the process's own."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers import child_env

import nuboard as nb

CHILD = r"""
import json, sys
import pyarrow as pa
from nuboard.web.app import create_app
from nuboard.web.warmup import prepare
app = create_app(sys.argv[1])
before = {name: name in sys.modules for name in ("pyarrow.parquet", "sqlalchemy.dialects.sqlite")}
try:
    pa.jemalloc_memory_pool()
    has_jemalloc = True
except NotImplementedError:
    has_jemalloc = False
prepare(app)
compiled = len(app.jinja_env.cache)
listed = len([n for n in app.jinja_env.list_templates() if n.endswith(".html")])
page = app.test_client().get("/p/p/.charts", headers={"Host": "127.0.0.1"})
print(json.dumps({"before": before, "pool": pa.default_memory_pool().backend_name,
                  "has_jemalloc": has_jemalloc, "compiled": compiled, "listed": listed,
                  "status": page.status_code, "after_page": len(app.jinja_env.cache),
                  "loaded": {name: name in sys.modules
                             for name in ("pyarrow.parquet", "sqlalchemy.dialects.sqlite")}}))
"""


def prepared(root, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(root)], capture_output=True,
                          text=True, env=child_env(**env), timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_prepare_compiles_every_template_and_loads_the_readers(root):
    """After prepare, the Charts page renders without compiling a template, and the Parquet
    reader and SQLite's dialect are already imported."""
    with nb.init("p", system_metrics=False) as run:
        run.add_scalar("train/loss", 1.0, step=1)
    found = prepared(root)
    assert found["before"] == {"pyarrow.parquet": False, "sqlalchemy.dialects.sqlite": False}
    assert found["loaded"] == {"pyarrow.parquet": True, "sqlalchemy.dialects.sqlite": True}
    assert found["listed"] >= 10 and found["compiled"] == found["listed"]
    assert found["status"] == 200 and found["after_page"] == found["compiled"]
    assert found["pool"] == ("jemalloc" if found["has_jemalloc"] else found["pool"])


def test_a_chosen_arrow_allocator_is_kept(root):
    """ARROW_DEFAULT_MEMORY_POOL is the user's choice: prepare leaves it."""
    found = prepared(root, ARROW_DEFAULT_MEMORY_POOL="system")
    assert found["pool"] == "system"


def test_a_process_that_ends_right_after_a_charts_page_ends_cleanly(root):
    """Serving the Charts page starts the prefetch of its first charts; a process that ends at
    once (Ctrl-C just after opening the page) waits for it rather than aborting inside Arrow's
    reader ("terminate called without an active exception", exit -6)."""
    with nb.init("p", system_metrics=False) as run:
        for step in range(20_000):
            run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
    for _ in range(3):
        assert prepared(root)["status"] == 200         # the child exits 0 each time


def test_open_catalogs_opens_every_project_and_says_how_far_it_got(root, monkeypatch):
    """Before `nuboard up` prints its URL every project's catalog is open and synced; while that
    takes long (here: every catalog) a line says how many are open."""
    from nuboard.web import warmup
    from nuboard.web.app import create_app
    for project in ("a", "b", "c"):
        with nb.init(project, system_metrics=False, capture_console=False, capture_env=False):
            pass
    app = create_app(root)
    monkeypatch.setattr(warmup, "PROGRESS_EVERY", 0.0)
    said: list[str] = []
    try:
        assert warmup.open_catalogs(app, said.append) == 3
        assert said == ["  1 of 3 catalogs open (the last: a) ...",
                        "  2 of 3 catalogs open (the last: b) ..."]
        assert all((root / p / ".nuboard" / "catalog.sqlite").is_file() for p in "abc")
    finally:
        app.extensions["nuboard_catalogs"].close()
