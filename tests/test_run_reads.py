"""The catalog's reads for the run-side faces (catalog/run_reads.py), its writes for them
(catalog/run_writes.py) and the `nuboard sql` connection (catalog/sql_console.py).

Real runs written by the API, a real catalog brought up to date by the sync; no mocks.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from helpers import QUIET, make_tree

import nuboard as nb
from nuboard.catalog import run_reads, run_writes
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.query import QuerySyntaxError
from nuboard.catalog.run_doc import read_run_doc
from nuboard.catalog.sql_console import ReadOnlyError, SqlError, run_statement
from nuboard.catalog.sync import sync

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def write_run(root: Path, project: str = "llm", points: dict | None = None, **kw) -> str:
    """A finished run written by the API; points is {name: [(step, value), ...]}; its id."""
    with nb.init(project, dir=root, **QUIET, **kw) as run:
        for name, pairs in (points or {}).items():
            for step, value in pairs:
                run.add_scalar(name, value, step=step)
    time.sleep(0.01)                 # distinct start times, so "newest first" is one order
    return run.id


@pytest.fixture
def three(root):
    """Three finished runs of 'llm' (a, b, c, oldest first) in a synced catalog."""
    ids = {
        "a": write_run(root, run_name="a", config={"lr": 1e-2, "opt": {"name": "adam"}},
                       tags=["baseline"], points={"train/loss": [(0, 3.0), (5, 1.0)]}),
        "b": write_run(root, run_name="b", config={"lr": 1e-4, "layers": 12},
                       points={"train/loss": [(0, 4.0), (9, 2.0)], "eval/acc": [(9, 0.5)]}),
        "c": write_run(root, run_name="c", config={"lr": 1e-3}, tags=["baseline", "x"]),
    }
    catalog = Catalog(root, "llm")
    sync(catalog)
    yield catalog, ids
    catalog.close()


def test_find_runs_newest_first_narrowed_by_a_query(three):
    catalog, ids = three
    now = time.time()
    assert [r["name"] for r in run_reads.find_runs(catalog, now=now)] == ["c", "b", "a"]
    assert [r["name"] for r in run_reads.find_runs(catalog, "", now=now, limit=2)] == ["c", "b"]
    assert [r["name"] for r in run_reads.find_runs(catalog, "tag:baseline", now=now)] == ["c", "a"]
    found = run_reads.find_runs(catalog, "lr>=1e-3", now=now, sort="name", desc=False,
                                fields=("run_id", "name"))
    assert found == [{"run_id": ids["a"], "name": "a"}, {"run_id": ids["c"], "name": "c"}]
    assert run_reads.count_runs(catalog, "tag:baseline", now=now) == 2
    assert run_reads.count_runs(catalog, None, now=now) == 3
    assert run_reads.running_count(catalog) == 0
    with pytest.raises(QuerySyntaxError):
        run_reads.find_runs(catalog, "lr>=", now=now)
    with pytest.raises(QuerySyntaxError):
        run_reads.check_query("(", now=now)


def test_runs_page_sorts_by_config_and_summaries_and_clamps_the_page(three):
    catalog, ids = three
    now = time.time()
    page = run_reads.runs_page(catalog, now=now, sort="config:lr", desc=False, per_page=2)
    assert (page.total, page.page, page.pages) == (3, 1, 2)
    assert [r["name"] for r in page.rows] == ["b", "c"]
    last = run_reads.runs_page(catalog, now=now, sort="config:lr", desc=False, page=9, per_page=2)
    assert last.page == 2 and [r["name"] for r in last.rows] == ["a"]
    by_loss = run_reads.runs_page(catalog, now=now, sort="scalar:train/loss", desc=True)
    assert [r["name"] for r in by_loss.rows] == ["b", "a", "c"]     # no value: last
    by_tags = run_reads.runs_page(catalog, now=now, sort="tags", desc=False)
    assert [r["name"] for r in by_tags.rows][-1] == "b"
    with pytest.raises(run_reads.SortKeyError, match="cannot sort by 'nope'"):
        run_reads.runs_page(catalog, now=now, sort="nope")


def test_cells_tags_and_column_choices(three):
    catalog, ids = three
    rows = run_reads.runs_by_id(catalog, [ids["a"], ids["b"], "no-such-run"], ("id", "name"))
    assert set(rows) == {ids["a"], ids["b"]} and rows[ids["a"]]["name"] == "a"
    a, b = rows[ids["a"]]["id"], rows[ids["b"]]["id"]
    c = run_reads.runs_by_id(catalog, [ids["c"]], ("id",))[ids["c"]]["id"]
    assert run_reads.tags_by_run(catalog, [a, b, c]) == {a: ["baseline"], b: [], c: ["baseline", "x"]}
    cells = run_reads.config_cells(catalog, [a, b], ["lr", "opt.name"])
    assert cells[a]["opt.name"]["value_text"] == "adam" and "opt.name" not in cells[b]
    assert cells[b]["lr"]["value_num"] == pytest.approx(1e-4)
    assert run_reads.config_cells(catalog, [a], []) == {a: {}}
    summaries = run_reads.scalar_summaries(catalog, [a, b], ["train/loss"])
    assert summaries[a]["train/loss"] == {"last": 1.0, "min": 1.0, "max": 3.0}
    assert summaries[b]["train/loss"]["last"] == 2.0
    choices = run_reads.column_choices(catalog)
    assert {"lr", "layers", "opt.name"} <= set(choices["config"])
    assert choices["scalar"] == sorted(choices["scalar"]) and "eval/acc" in choices["scalar"]
    assert run_reads.scalar_names_and_ranks(catalog, [b]) == (["train/loss", "eval/acc"], [0])
    assert run_reads.scalar_names_and_ranks(catalog, []) == ([], [0])
    assert run_reads.last_steps(catalog, [a, b, c]) == {a: 5, b: 9}
    assert run_reads.newest_run_ids(catalog, 2) == [ids["c"], ids["b"]]


def test_versions_a_run_produced_and_those_stored_by_reference(root, tmp_path):
    data = make_tree(tmp_path / "data", {"a.bin": b"aa"})
    with nb.init("llm", dir=root, **QUIET) as run:
        run.add_artifact("datasets/corpus", data, type="dataset", reference=True)
        run.add_artifact("model", data / "a.bin", type="checkpoint")
    with Catalog(root, "llm") as catalog, Catalog(root, "datasets") as other:
        sync(catalog)
        sync(other)
        refs = set(run_reads.produced_refs(catalog))
        assert refs == {(run.id, "datasets", "corpus", 1), (run.id, "llm", "model", 1)}
        facts = run_reads.version_facts(other, {"corpus"})
        assert facts[("datasets", "corpus", 1)]["type"] == "dataset"
        assert facts[("datasets", "corpus", 1)]["unlinked"] is False
        assert [(r["name"], r["version"]) for r in run_reads.reference_versions(other)] == \
            [("corpus", 1)]
        assert run_reads.reference_versions(catalog) == []


def test_delete_runs_and_mirror_views(three):
    catalog, ids = three
    now = time.time()
    run_writes.delete_runs(catalog, [ids["a"], ids["b"]])
    assert [r["run_id"] for r in run_reads.find_runs(catalog, now=now)] == [ids["c"]]
    run_writes.mirror_views(catalog, [{"name": "best", "query": "tag:x", "columns": ["name"],
                                       "sort": "config:lr", "desc": True}])
    columns, rows = run_statement(catalog, "SELECT name, query, columns, sort FROM views")
    assert columns == ["name", "query", "columns", "sort"]
    assert rows == [("best", "tag:x", json.dumps(["name"]), "-config:lr")]
    run_writes.mirror_views(catalog, [])
    assert run_statement(catalog, "SELECT count(*) FROM views")[1] == [(0,)]


@pytest.mark.sqlite_only         # the PostgreSQL console: test_team_catalog.py
def test_sql_console_reads_and_refuses_to_write(three):
    catalog, _ = three
    columns, rows = run_statement(catalog.path, "SELECT name FROM runs ORDER BY name")
    assert (columns, rows) == (["name"], [("a",), ("b",), ("c",)])
    assert run_statement(catalog.path, "PRAGMA table_info(runs)")[1]
    with pytest.raises(ReadOnlyError, match="read-only"):
        run_statement(catalog.path, "DELETE FROM runs")
    with pytest.raises(ReadOnlyError):
        run_statement(catalog.path, "PRAGMA journal_mode=DELETE")
    with pytest.raises(SqlError, match="no such table"):
        run_statement(catalog.path, "SELECT * FROM missing_table")
    con = sqlite3.connect(catalog.path)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (3,)
    con.close()


def test_read_run_doc(root):
    run_id = write_run(root, run_name="solo")
    folder = root / "llm" / "runs" / run_id
    assert read_run_doc(folder)["name"] == "solo"
    (folder / "run.json").write_text("{not json")
    with pytest.raises(ValueError):
        read_run_doc(folder)
    with pytest.raises(FileNotFoundError):
        read_run_doc(root / "llm" / "runs" / "missing")
