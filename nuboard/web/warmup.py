"""What `nuboard up` does once before it serves, so that no user's first page pays for it.

A fresh server's first Charts page otherwise compiled its templates, imported SQLite's dialect
and pyarrow's Parquet reader, and had every page of Arrow's memory faulted in by mimalloc,
all inside the page the user is waiting for (`scripts/bench_viewer.py`, the Chromium part);
and the first visit of the Artifacts page, or of a project's Runs page, opened and synced
each catalog it read, one after another (222-1,300 ms on the demo;
`scripts/bench_first_visit.py`).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

from flask import Flask

PROGRESS_EVERY = 2.0       # seconds between the lines that say how far open_catalogs got


def prepare(app: Flask) -> None:
    """Load the libraries, compile the templates and pick Arrow's allocator, before serving."""
    use_fast_arrow_pool()
    load_libraries()
    compile_templates(app)


def use_fast_arrow_pool() -> None:
    """Make jemalloc Arrow's allocator when this pyarrow has it and the user chose none.

    Arrow's default, mimalloc, faults in fresh pages for each table read: 12 runs' series
    (86 MB) cost 275 ms of CPU on a first read against 89 ms with jemalloc, which keeps and
    reuses what was freed. ARROW_DEFAULT_MEMORY_POOL, when set, is the user's choice and stays.
    """
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, AttributeError):      # a build without jemalloc: Arrow's own
        pass


def load_libraries() -> None:
    """Import what the first pages import lazily: Alembic's migrations (the catalog's schema
    check), SQLAlchemy's SQLite dialect and pyarrow's Parquet reader. (With a catalog server,
    `nuboard up` has connected once already, and the pool keeps that connection.)"""
    import pyarrow.parquet  # noqa: F401
    import sqlalchemy.dialects.sqlite  # noqa: F401

    from nuboard.catalog.engine import head_revision

    head_revision()


def compile_templates(app: Flask) -> None:
    """Compile every template into Jinja's cache (each page's first render compiled its own)."""
    env = app.jinja_env
    for name in env.list_templates(filter_func=lambda n: n.endswith(".html")):
        env.get_template(name)


def open_catalogs(app: Flask, note: Callable[[str], None]) -> int:
    """Open and sync every project's catalog, one after another, saying every PROGRESS_EVERY
    seconds how many are open; how many opened. One that cannot open is left for its pages
    to report (the catalogs log an unavailable catalog once)."""
    catalogs = app.extensions["nuboard_catalogs"]
    names = catalogs.projects()
    opened = 0
    last = time.monotonic()
    for done, name in enumerate(names, 1):
        opened += catalogs.open(name)
        if time.monotonic() - last >= PROGRESS_EVERY and done < len(names):
            note(f"  {done} of {len(names)} catalogs open (the last: {name}) ...")
            last = time.monotonic()
    return opened
