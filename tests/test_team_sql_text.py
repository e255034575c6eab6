"""Team mode never builds SQL from strings: a folder's name is a value, never SQL (issue 30, 14).

With standard_conforming_strings=off a backslash escapes a quote inside '...', so a quote
doubled by hand ends the literal early and what follows runs. The test's own connections set
it off through the URL's options, as a lab's server may have it.
"""
from __future__ import annotations

import os

import pytest
from helpers import loss_run
from sqlalchemy import create_engine, text

from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync

NON_CONFORMING = "options=-c%20standard_conforming_strings%3Doff"


@pytest.fixture
def url(team_url) -> str:
    """The test cluster's URL, with standard_conforming_strings off for its connections."""
    return team_url + ("&" if "?" in team_url else "?") + NON_CONFORMING


def test_a_root_named_like_sql_is_a_comment_not_a_statement(tmp_path, url):
    table = f"pwned_{os.getpid()}_{os.urandom(3).hex()}"
    folder = tmp_path / f"lab\\'; CREATE TABLE public.{table}(x int); --"
    root = folder / "experiments"
    loss_run(root, "llm", name="alpha")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SHOW standard_conforming_strings")).scalar() == "off"
        with Catalog(root, "llm", url=url) as catalog:
            sync(catalog)
            with catalog.reader.connect() as conn:
                comment = conn.execute(text(
                    "SELECT obj_description(current_schema()::regnamespace)")).scalar()
                names = conn.execute(text("SELECT name FROM runs")).scalars().all()
        with engine.connect() as conn:
            made = conn.execute(text("SELECT to_regclass(:t)"), {"t": f"public.{table}"}).scalar()
        assert made is None, "the folder's name ran as SQL"
        assert comment == f"NuBoard catalog of the project 'llm' under {os.path.realpath(root)}"
        assert names == ["alpha"]
    finally:
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS public.{table}"))
        engine.dispose()
