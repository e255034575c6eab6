"""The catalog bench, scaled down: it exits 0, prints every figure beside its target for each
backend (SQLite, and PostgreSQL with --catalog), and removes what it wrote."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers import REPO, child_env

RUNS = 30
FIGURES = ["open a new catalog (migrate to head)", f"full rebuild of {RUNS} runs",
           "incremental sync, nothing changed (median of 5)",
           f"query tag:baseline over {RUNS} runs (median of 21)",
           "open an existing catalog (median of 5)"]
ENV = "NUBOARD_CATALOG_URL"


def bench(tmp_path, *args: str, catalog_env: str | None = None) -> str:
    env = {k: v for k, v in child_env(TMPDIR=str(tmp_path)).items() if k != ENV}
    if catalog_env is not None:
        env[ENV] = catalog_env
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_catalog.py"), "--runs", str(RUNS),
         "--scalars", "2", "--steps", "5", *args],
        capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def sections(out: str) -> dict[str, list[str]]:
    """The figures under each '-- SQLite: ...' / '-- PostgreSQL: ...' header."""
    found: dict[str, list[str]] = {}
    current = None
    for text in out.splitlines():
        if text.startswith("-- "):
            current = text[3:].split(":")[0]
            assert current not in found, out
            found[current] = []
        elif current is not None:
            found[current].append(text)
    return found


def check_figures(lines: list[str]) -> None:
    for label in FIGURES:
        hit = [text for text in lines if text.startswith(label)]
        assert len(hit) == 1, (label, lines)
        assert " target " in hit[0] and hit[0].rstrip().endswith(("ok", "MISSED")), hit[0]


def test_bench_on_sqlite_alone_prints_each_figure_with_its_target(tmp_path):
    out = bench(tmp_path)
    assert "catalog on SQLite\n" in out
    found = sections(out)
    assert list(found) == ["SQLite"], out
    assert found and "catalog.sqlite" in out.split("-- SQLite: ")[1].splitlines()[0]
    check_figures(found["SQLite"])
    assert os.listdir(tmp_path) == []                   # the data is removed


def test_empty_catalog_url_means_sqlite_whatever_the_environment_says(tmp_path):
    out = bench(tmp_path, "--catalog", "", catalog_env="postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert list(sections(out)) == ["SQLite"], out


def test_bench_with_catalog_measures_sqlite_then_postgresql(tmp_path):
    url = os.environ.get("NUBOARD_TEST_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL for the tests (NUBOARD_TEST_PG_URL); scripts/test starts one")
    from sqlalchemy import create_engine

    engine = create_engine(url)

    def schemas(name: str) -> list[str]:
        with engine.connect() as conn:
            return [row[0] for row in conn.exec_driver_sql(
                "SELECT nspname FROM pg_namespace WHERE nspname = %(s)s", {"s": name})]

    def count_runs(name: str) -> int:
        with engine.connect() as conn:
            return conn.exec_driver_sql(f'SELECT count(*) FROM "{name}".runs').scalar()

    def schema_of(out: str) -> str:
        match = re.search(r"^-- PostgreSQL: schema (nb_\w+) on ", out, re.M)
        assert match, out
        return match.group(1)

    # the default is $NUBOARD_CATALOG_URL; without --keep the schema is dropped at the end
    out = bench(tmp_path, catalog_env=url)
    found = sections(out)
    assert list(found) == ["SQLite", "PostgreSQL"], out
    assert "catalog on SQLite and PostgreSQL" in out
    for lines in found.values():
        check_figures(lines)
    assert schemas(schema_of(out)) == []
    assert os.listdir(tmp_path) == []

    keep = tmp_path / "keep"
    schema = None
    try:
        out = bench(tmp_path, "--keep", str(keep), "--catalog", url)
        schema = schema_of(out)
        assert count_runs(schema) == RUNS                   # kept with --keep
        # again over the same folders: the schema is emptied first, the full rebuild adds all
        again = bench(tmp_path, "--keep", str(keep), "--catalog", url)
        assert schema_of(again) == schema and "writing the runs" not in again
        check_figures(sections(again)["PostgreSQL"])
        assert count_runs(schema) == RUNS
    finally:
        if schema is not None:
            with engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()
