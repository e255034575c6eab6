"""Sizes read from files are capped like sizes from the API (issue 17, row 14 of reliability.md).

A run.json or a manifest is a file anyone can write: a million tags, a name of 300 characters,
a config nested 80 levels deep. Each is indexed and shown cut to the limit the API writes by,
with a note that it was cut, and the pages that list it stay fast.
"""
from __future__ import annotations

import json
import sqlite3
import time

import pytest
from helpers import QUIET, cli
from helpers_http import RemoteViewer, Viewer, visible_text

import nuboard as nb
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
from nuboard.files import layout

MILLION = 1_000_000


def edit_run_json(folder, **fields) -> None:
    """Rewrite a finished run's run.json by hand, as anyone can."""
    path = folder / layout.RUN_JSON
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))


def nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.fixture
def huge_tags(make_run):
    """Project 'big': three runs, one of whose run.json holds a million tags (17 MB)."""
    folders = [make_run("big", points={"loss": [(0, 1.0)]}, run_name=f"run{i}", tags=["ok"])
               for i in range(3)]
    edit_run_json(folders[0], tags=[f"tag-{i:07d}" for i in range(MILLION)])
    return folders[0]


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_a_million_tags_show_the_first_thousand_and_the_runs_page_stays_fast(root, huge_tags):
    with RemoteViewer(root, project="big") as viewer:
        started = time.monotonic()
        page = viewer.get("/p/big?cols=name,tags")            # the first request syncs too
        took = time.monotonic() - started
        assert page.status == 200
        assert took < 1.0, f"the Runs page of a run with 10**6 tags took {took:.2f} s"
        text = " ".join(visible_text(page.text).split())
        assert "1 run on this page is shown cut to the API's limits" in text
        assert "tags: the first 1,000 of 1,000,000" in text
        assert "+992 more" in text                             # 8 tags in the row, the rest on its page
        assert page.text.count('class="tag"') == 8 + 2         # and the two other runs' one tag
        runs = {r["name"]: r for r in viewer.get("/api/p/big/runs?cols=name,tags").json()["runs"]}
        assert len(runs["run0"]["tags"]) == 1000 and runs["run0"]["tags"][999] == "tag-0000999"
        assert runs["run0"]["cut"] == "tags: the first 1,000 of 1,000,000"
        assert runs["run1"]["cut"] is None and runs["run1"]["tags"] == ["ok"]

        started = time.monotonic()
        run_page = viewer.get(f"/p/big/.run/{huge_tags.name}")
        took = time.monotonic() - started
        assert run_page.status == 200 and took < 2.0, f"the run page took {took:.2f} s"
        assert run_page.text.count('class="tag"') == 1000
        assert "shown cut to the API's limits: tags: the first 1,000 of 1,000,000" in \
            " ".join(visible_text(run_page.text).split())
        assert viewer.get(f"/api/p/big/.run/{huge_tags.name}").json()["cut"] == [
            "tags: the first 1,000 of 1,000,000"]
        assert viewer.get("/p/big?q=tag:tag-0000999").text.count('class="run-link"') == 1
        assert viewer.get("/p/big?q=tag:tag-0001000").text.count('class="run-link"') == 0

    with sqlite3.connect(root / "big" / ".nuboard" / "catalog.sqlite") as con:
        assert con.execute("SELECT count(*) FROM tags").fetchone() == (1002,)


def test_ls_lists_a_million_tags_run_cut_with_a_line_on_stderr(root, huge_tags):
    proc = cli(root, "ls", "big", "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) < 100_000                        # not 17 MB of tags
    records = {r["name"]: r for r in json.loads(proc.stdout)}
    assert len(records["run0"]["tags"]) == 1000
    assert records["run0"]["cut"] == "tags: the first 1,000 of 1,000,000"
    assert proc.stderr.strip() == (f"nuboard ls: run 'big/{huge_tags.name}' is shown cut to the "
                                   "API's limits: tags: the first 1,000 of 1,000,000")
    table = cli(root, "ls", "big").stdout
    row = next(line for line in table.splitlines() if huge_tags.name in line)
    assert "+99" in row and "more" in row and len(row) < 250     # the cell shows a few tags


def test_every_field_past_the_apis_limits_is_cut_and_noted(root, make_run):
    folder = make_run("p", points={"loss": [(0, 1.0)]})
    deep_config = {"model": nested(80), "lr": 0.1}
    edit_run_json(folder, name="n" * 300, group="g" * 300, notes="x" * (MILLION + 5),
                  host="h" * 5000, config=deep_config,
                  sessions=[{"session": i, "start_time": "2026-12-07T00:00:00Z"} for i in range(1500)])
    with Catalog(root, "p") as catalog:
        report = sync(catalog)
        assert report.skipped == []
        with catalog.reader.connect() as conn:
            row = conn.exec_driver_sql("SELECT length(name), length(group_name), length(notes), "
                                       "length(host), cut FROM runs").one()
            keys = [k for (k,) in conn.exec_driver_sql("SELECT key FROM config ORDER BY key")]
    assert tuple(row[:4]) == (256, 256, MILLION, 256)
    assert row[4] == ("name: the first 256 of 300 characters; "
                      "group: the first 256 of 300 characters; "
                      "notes: the first 1,000,000 of 1,000,005 characters; "
                      "host: the first 256 of 5,000 characters; "
                      "config: nested deeper than 64 levels, cut below that; "
                      "sessions: the last 1,000 of 1,500")
    assert keys == ["lr", "model" + ".k" * 63]               # 64 levels, the rest cut
    with Viewer(root) as viewer:
        run = viewer.get(f"/api/p/p/.run/{folder.name}").json()
        assert len(run["name"]) == 256 and len(run["notes"]) == MILLION
        assert len(run["sessions"]) == 1000 and run["sessions"][0]["session"] == 500
        assert "config: nested deeper than 64 levels, cut below that" in run["cut"]
        page = viewer.get(f"/p/p/.run/{folder.name}")
        assert page.status == 200 and "shown cut to the API's limits" in page.text


def test_a_config_over_16_mb_keeps_its_first_keys(root, make_run):
    folder = make_run("p", points={"loss": [(0, 1.0)]})
    edit_run_json(folder, config={f"k{i}": "v" * (1 << 20) for i in range(20)})   # 20 MB
    with Catalog(root, "p") as catalog:
        sync(catalog)
        with catalog.reader.connect() as conn:
            keys = conn.exec_driver_sql("SELECT count(*) FROM config").scalar()
            cut = conn.exec_driver_sql("SELECT cut FROM runs").scalar()
    assert keys == 15 and cut == "config: the first 15 of 20 keys (16 MB as JSON)"


def test_an_older_catalog_holding_a_million_tags_is_read_again(root, huge_tags):
    """A catalog written before the caps holds every tag; upgrading reads such runs again."""
    with Catalog(root, "big") as catalog:
        sync(catalog)
        path = catalog.path
    with sqlite3.connect(path) as con:                       # revision 0003, as an older sync wrote it
        for table, column in (("runs", "cut"), ("versions", "cut"), ("projects", "changes"),
                              ("config", "seq"), ("scalars", "seq")):      # 0004's and 0005's
            con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        con.execute("DROP TABLE media_keys")                             # 0006's
        con.execute("UPDATE alembic_version SET version_num = '0003'")
        run = con.execute("SELECT id FROM runs WHERE name = 'run0'").fetchone()[0]
        con.executemany("INSERT INTO tags VALUES (?, ?)",
                        ((run, f"tag-{i:07d}") for i in range(1000, 5000)))
    with Catalog(root, "big") as catalog:
        report = sync(catalog)
        assert report.updated == 1 and report.unchanged == 2
        with catalog.reader.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM tags").scalar() == 1002
            assert conn.exec_driver_sql("SELECT cut FROM runs WHERE name = 'run0'").scalar() == \
                "tags: the first 1,000 of 1,000,000"


# ---- artifact versions: metadata and description ------------------------------------------

def test_add_artifact_refuses_metadata_and_descriptions_past_its_limits(root, tmp_path):
    source = tmp_path / "data.txt"
    source.write_text("x")
    for kwargs, message in (
            ({"metadata": {"blob": "x" * (1 << 20)}}, "metadata is 1,048,588 bytes as JSON: at most 1,048,576"),
            ({"metadata": nested(65)}, "metadata is nested deeper than 64 levels"),
            ({"metadata": nested(5000)}, "metadata is nested deeper than 64 levels"),
            ({"description": "d" * (MILLION + 1)}, "description is 1,000,001 characters: at most 1,000,000")):
        with pytest.raises(ValueError, match=message):
            nb.add_artifact("data", "corpus", source, reference=True, **kwargs)
    assert not (root / "data" / "artifacts").exists()
    version = nb.add_artifact("data", "corpus", source, reference=True, metadata=nested(64),
                              description="d" * MILLION)
    assert version.version == 1


def test_a_manifest_past_the_limits_is_indexed_and_shown_cut(root, tmp_path):
    source = tmp_path / "data.txt"
    source.write_text("x")
    version = nb.add_artifact("data", "corpus", source, reference=True, metadata={"rows": 3})
    manifest = version.path / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["metadata"] = {"rows": 3, **{f"blob{i}": "x" * 400_000 for i in range(4)}, "deep": nested(70)}
    doc["description"] = "d" * (MILLION + 10)
    manifest.write_text(json.dumps(doc))
    expected = ("metadata: nested deeper than 64 levels, cut below that; "
                "metadata: the first 3 of 6 keys (1 MB as JSON); "
                "description: the first 1,000,000 of 1,000,010 characters")
    with Viewer(root) as viewer:
        page = viewer.get("/p/data/.artifact/corpus/v1")
        assert page.status == 200
        assert "shown cut to the API's limits: " + expected in page.text
        assert "blob2" not in page.text and "blob1" in page.text
    with sqlite3.connect(root / "data" / ".nuboard" / "catalog.sqlite") as con:
        cut, size = con.execute("SELECT cut, length(metadata) FROM versions").fetchone()
    assert cut == expected and size < (1 << 20)
    shown = cli(root, "artifact", "show", "data/corpus:v1")
    assert f"  cut          shown cut to the API's limits: {expected}" in shown.stdout.splitlines()
    assert "blob2" not in shown.stdout
    listed = json.loads(cli(root, "artifact", "ls", "data", "--json").stdout)
    assert listed[0]["cut"] == expected and list(listed[0]["metadata"]) == ["rows", "blob0", "blob1"]


def test_the_api_refuses_what_the_files_above_hold(root):
    """The fixtures above write run.json by hand; the API itself refuses the same sizes."""
    for kwargs in ({"tags": [f"t{i}" for i in range(1001)]}, {"run_name": "n" * 257},
                   {"notes": "x" * (MILLION + 1)}, {"config": nested(70)}):
        with pytest.raises(ValueError):
            nb.init("p", **QUIET, **kwargs)
