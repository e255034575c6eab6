"""The catalog: schema and migrations, where it lives and how it is opened, and the sync.

Real SQLite files and real run folders written by the API; the rows a sync makes are
compared with what was logged, and an incremental sync with a rebuild from nothing.
"""
from __future__ import annotations

import json
import math
import os
import random
import shutil
import sqlite3
import string
import time
from pathlib import Path

import pytest
from helpers import QUIET, catalog_rows, count, drop_catalog, run_child, start_child
from sqlalchemy import Column, Integer, MetaData, select, text

import nuboard as nb
from nuboard.catalog.engine import BUSY_TIMEOUT_MS, alembic_config, make_engine, migrate
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
from nuboard.catalog.tables import config, metadata, projects, runs, scalars, tags
from nuboard.files.jsonfile import write_json_atomic

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def one_run(catalog: Catalog, run_id: str) -> dict:
    """The runs row of one run, with its tags, config and scalars."""
    with catalog.reader.connect() as conn:
        row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().one()
        pk = row["id"]
        found = dict(row)
        found["tags"] = sorted(conn.execute(select(tags.c.tag).where(tags.c.run == pk)).scalars())
        found["config"] = {r.key: (r.type, r.value_num, r.value_text) for r in
                           conn.execute(select(config).where(config.c.run == pk))}
        found["scalars"] = {(r.rank, r.name): (r.last, r.min, r.max, r.count, r.last_step)
                            for r in conn.execute(select(scalars).where(scalars.c.run == pk))}
    return found


def schema_of(path: Path) -> dict:
    """Tables, columns, foreign keys and indexes of an SQLite file, in a comparable form."""
    con = sqlite3.connect(path)
    try:
        out = {}
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        for name in sorted(names):
            columns = con.execute(f"PRAGMA table_info('{name}')").fetchall()
            fks = sorted(r[2:] for r in con.execute(f"PRAGMA foreign_key_list('{name}')"))
            indexes = []
            for _, index, unique, origin, partial in con.execute(f"PRAGMA index_list('{name}')"):
                cols = [r[2] for r in con.execute(f"PRAGMA index_info('{index}')")]
                indexes.append((index if origin == "c" else origin, unique, partial, cols))
            out[name] = (columns, fks, sorted(indexes))
        return out
    finally:
        con.close()


def revisions_base_to_head() -> list[str]:
    from alembic.script import ScriptDirectory
    script = ScriptDirectory.from_config(alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


# -- schema and migrations ------------------------------------------------------------------
def test_models_and_migrations_agree(root):
    """autogenerate finds nothing between tables.py and a catalog the migrations built."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    catalog = Catalog(root, "proj")
    try:
        with catalog.writer.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})

            def compare(model):
                diff = compare_metadata(context, model)
                if conn.dialect.name == "postgresql":
                    # tables.py says ddl_if(dialect="sqlite"), which autogenerate does not read
                    diff = [d for d in diff
                            if not (d[0] == "add_index" and d[1].name == "ix_config_key_text")]
                return diff

            assert compare(metadata) == []
            # the comparison does see a difference when there is one
            changed = MetaData()
            for table in metadata.sorted_tables:
                table.to_metadata(changed)
            changed.tables["runs"].append_column(Column("new_column", Integer))
            diff = compare(changed)
            assert [d[0] for d in diff] == ["add_column"] and diff[0][3].name == "new_column"
    finally:
        catalog.close()


@pytest.mark.sqlite_only         # test_team_catalog.py upgrades a PostgreSQL schema
def test_every_revision_upgrades_to_head(tmp_path):
    """A catalog at each revision (and at base) upgrades to the schema of a fresh head."""
    from alembic import command
    revisions = revisions_base_to_head()
    head = revisions[-1]
    fresh = tmp_path / "fresh.sqlite"
    engine = make_engine(fresh)
    assert migrate(engine) == "base"
    assert migrate(engine) is None                    # at head: nothing to do
    engine.dispose()
    want = schema_of(fresh)
    assert {"projects", "runs", "tags", "config", "scalars", "artifacts", "versions", "lineage",
            "views", "alembic_version"} <= set(want)

    for rev in ["base"] + revisions:
        path = tmp_path / f"at-{rev}.sqlite"
        engine = make_engine(path)
        with engine.connect() as conn:
            cfg = alembic_config(conn)
            command.upgrade(cfg, head)
            command.downgrade(cfg, rev)               # the real downgrades, down to rev
            conn.commit()
        with engine.connect() as conn:
            at = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        assert at == ([] if rev == "base" else [rev])
        if rev == "base":
            assert set(schema_of(path)) == {"alembic_version"}
        assert migrate(engine) == (None if rev == head else rev)
        engine.dispose()
        assert schema_of(path) == want, f"upgrading from {rev} differs from a fresh head"
        con = sqlite3.connect(path)
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]
        con.close()


def test_a_catalog_from_a_newer_nuboard_is_refused_clearly(root):
    """An alembic_version this code does not know: a CatalogError saying what to do."""
    from nuboard.catalog.engine import CatalogError
    with Catalog(root, "proj") as catalog:
        with catalog.writer.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = 'f00dfeed'"))
    with pytest.raises(CatalogError, match="newer NuBoard.*Upgrade nuboard"):
        Catalog(root, "proj")
    with catalog.reader.connect() as conn:             # left as it was
        assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == [("f00dfeed",)]


@pytest.mark.sqlite_only
def test_catalog_is_in_the_project_in_wal_mode_with_its_pragmas(root, make_run):
    """<project>/.nuboard/catalog.sqlite; WAL, foreign keys, busy_timeout; BEGIN IMMEDIATE."""
    catalog = Catalog(root, "team/llm")
    try:
        assert catalog.path == root / "team" / "llm" / ".nuboard" / "catalog.sqlite"
        assert catalog.path.is_file() and catalog.moved_because is None
        for engine in (catalog.writer, catalog.reader):
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
                assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == BUSY_TIMEOUT_MS
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1     # NORMAL
        con = sqlite3.connect(catalog.path)
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)     # kept in the file
        con.close()

        other = sqlite3.connect(catalog.path, timeout=0, isolation_level=None)
        with catalog.writer.begin():                  # the write lock is taken at BEGIN
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        with catalog.reader.connect() as conn:        # a reader takes no lock and writes nothing
            conn.execute(select(runs.c.id)).all()
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            with pytest.raises(Exception, match="readonly|read-only|attempt to write"):
                conn.execute(projects.insert().values(name="x", path="/x"))
        other.close()

        make_run("team/llm", tags=["x", "y"])
        sync(catalog)
        assert count(catalog, "tags") == 2
        with catalog.writer.begin() as conn:          # foreign keys on: the tags go with the run
            conn.execute(runs.delete())
        assert count(catalog, "tags") == 0
        with pytest.raises(Exception, match="FOREIGN KEY"):
            with catalog.writer.begin() as conn:
                conn.execute(tags.insert().values(run=12345, tag="orphan"))
    finally:
        catalog.close()


# -- the sync ---------------------------------------------------------------------------------
def test_sync_indexes_name_status_tags_config_and_scalar_summaries(root, make_run):
    """Every field of a run, the config flattened with its types, summaries per scalar and rank."""
    nan = float("nan")
    path = make_run(
        "proj", run_name="lr-1e-3", tags=["baseline", "small"], notes="first try", group="sweep-1",
        config={"lr": 1e-3, "epochs": 3, "amp": True, "model": {"width": 512, "act": "gelu",
                                                                "dims": [1, 2]},
                "nothing": None, "empty": {}},
        points={"train/loss": [(0, 3.0), (1, nan), (2, 1.0), (3, 2.0)],
                "eval/acc": [(10, 0.5), (20, 0.7)],
                "train/nan_last": [(0, 1.0), (1, nan)],
                "train/nan_first": [(0, nan), (1, 2.0), (2, 1.0)],
                "train/all_nan": [(0, nan), (1, nan)],
                "train/inf": [(0, float("inf")), (1, -1.0)]})
    run_id = path.name
    # rank 1 of the same run, in its own process
    run_child(f"""
        import nuboard as nb
        run = nb.init("proj", run_id={run_id!r}, resume="must", system_metrics=False,
                      capture_console=False, capture_env=False)
        for step in range(5):
            run.add_scalar("train/loss", 10.0 + step, step=step)
        run.finish()
    """, NUBOARD_DIR=str(root), RANK="1", WORLD_SIZE="2")
    # a long series takes the pyarrow path for min and max
    values = [math.sin(i / 100) for i in range(20_000)]
    values[5] = nan
    long_path = make_run("proj", points={"long": list(enumerate(values))})

    catalog = Catalog(root, "proj")
    try:
        report = sync(catalog)
        assert (report.added, report.updated, report.skipped) == (2, 0, [])
        got = one_run(catalog, run_id)
        doc = json.loads((path / "run.json").read_text())
        assert (got["name"], got["status"], got["notes"], got["group_name"]) == \
            ("lr-1e-3", "finished", "first try", "sweep-1")
        assert got["created"] == doc["start_time"] and got["ended"] == doc["end_time"]
        assert got["host"] == doc["host"] and got["duration_s"] >= 0
        assert got["heartbeat_mtime"] == pytest.approx((path / "heartbeat").stat().st_mtime)
        assert got["tags"] == ["baseline", "small"]
        assert got["config"] == {
            "lr": ("float", 1e-3, "0.001"), "epochs": ("int", 3.0, "3"),
            "amp": ("bool", 1.0, "true"), "model.width": ("int", 512.0, "512"),
            "model.act": ("str", None, "gelu"), "model.dims": ("list", None, "[1, 2]"),
            "nothing": ("null", None, "null"), "empty": ("dict", None, "{}")}
        assert got["scalars"] == {
            (0, "train/loss"): (2.0, 1.0, 3.0, 4, 3),          # NaN counted, not in min/max
            (0, "eval/acc"): (0.7, 0.5, 0.7, 2, 20),
            (0, "train/nan_last"): (None, 1.0, 1.0, 2, 1),
            (0, "train/nan_first"): (1.0, 1.0, 2.0, 3, 2),
            (0, "train/all_nan"): (None, None, None, 2, 1),
            (0, "train/inf"): (-1.0, -1.0, float("inf"), 2, 1),
            (1, "train/loss"): (14.0, 10.0, 14.0, 5, 4)}
        finite = [v for v in values if v == v]
        assert one_run(catalog, long_path.name)["scalars"] == {
            (0, "long"): (values[-1], min(finite), max(finite), 20_000, 19_999)}
        with catalog.reader.connect() as conn:      # the one-tag query the viewer makes
            found = conn.execute(select(runs.c.run_id).join(tags, tags.c.run == runs.c.id)
                                 .where(tags.c.tag == "baseline")).scalars().all()
        assert found == [run_id]
    finally:
        catalog.close()


def test_incremental_sync_sees_new_changed_and_removed_runs_and_matches_a_rebuild(root, make_run):
    """New, resumed, edited and deleted runs; then reindex and a new catalog give the same rows."""
    a = make_run("proj", run_name="a", tags=["t"], points={"loss": [(0, 1.0), (1, 0.5)]})
    b = make_run("proj", run_name="b", points={"loss": [(0, 2.0)]})
    c = make_run("proj", run_name="c", tags=["old"], points={"loss": [(0, 3.0)]})
    gone = make_run("proj", run_name="gone", tags=["t"], config={"x": 1},
                     points={"loss": [(0, 4.0)]})
    catalog = Catalog(root, "proj")
    try:
        assert sync(catalog).added == 4
        report = sync(catalog)
        assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 4)
        new = make_run("proj", run_name="new", tags=["t"], points={"loss": [(0, 9.0)]})
        with nb.init("proj", dir=root, run_id=a.name, resume="must", **QUIET) as run:
            run.add_scalar("loss", 0.25, step=2)
            run.add_scalar("acc", 0.9, step=2)
        doc = json.loads((b / "run.json").read_text())
        doc["notes"] = "edited by hand, in place"
        (b / "run.json").write_text(json.dumps(doc, indent=1))        # the folder's mtime stays
        doc = json.loads((c / "run.json").read_text())
        doc["tags"] = ["new-tag", "other"]
        write_json_atomic(c / "run.json", doc)                          # as the viewer writes
        shutil.rmtree(gone)

        report = sync(catalog)
        assert (report.added, report.updated, report.removed, report.unchanged) == (1, 3, 1, 0)
        assert one_run(catalog, new.name)["scalars"] == {(0, "loss"): (9.0, 9.0, 9.0, 1, 0)}
        assert one_run(catalog, a.name)["scalars"] == {(0, "loss"): (0.25, 0.25, 1.0, 3, 2),
                                                       (0, "acc"): (0.9, 0.9, 0.9, 1, 2)}
        assert one_run(catalog, b.name)["notes"] == "edited by hand, in place"
        assert one_run(catalog, c.name)["tags"] == ["new-tag", "other"]
        with catalog.reader.connect() as conn:
            assert conn.execute(select(runs.c.name)).scalars().all().count("gone") == 0
        assert count(catalog, "runs") == 4 and count(catalog, "config") == 0
        assert count(catalog, "tags") == 4 and count(catalog, "scalars") == 5
        assert sync(catalog).unchanged == 4

        incremental = catalog_rows(catalog)
        report = sync(catalog, full=True)
        assert (report.added + report.updated, report.removed) == (4, 0)
        assert catalog_rows(catalog) == incremental
    finally:
        catalog.close()
    drop_catalog(catalog)
    with Catalog(root, "proj") as fresh:
        assert sync(fresh, full=True).added == 4
        assert catalog_rows(fresh) == incremental


def test_a_scalar_name_past_the_limit_in_a_hand_made_log_is_left_out_and_noted(root, make_run):
    """The API refuses scalar names over 256 characters; a log written by hand may hold one of
    4 kB, which a PostgreSQL index entry cannot: the run is indexed without it, and says so."""
    from array import array

    from nuboard.eventlog import logfile
    folder = make_run("proj", points={"train/loss": [(0, 1.0), (1, 0.5)]})
    long_name = "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=4000))
    (folder / "events.r0.s1.log").write_bytes(
        logfile.FILE_HEADER + logfile.meta_record({"rank": 0, "session": 1})
        + logfile.key_record(0, long_name) + logfile.key_record(1, "ok/short")
        + logfile.points_record(0, array("q", [5]), array("d", [1.0]), array("d", [2.0]))
        + logfile.points_record(1, array("q", [5]), array("d", [1.0]), array("d", [3.0])))
    with Catalog(root, "proj") as catalog:
        report = sync(catalog)
        assert report.added == 1 and report.skipped == []
        with catalog.reader.connect() as conn:
            names = conn.execute(select(scalars.c.name).order_by(scalars.c.name)).scalars().all()
            assert names == ["ok/short", "train/loss"]
            assert conn.execute(select(runs.c.cut)).scalar() == \
                "1 scalar with a name over 256 characters not indexed"


def test_a_config_key_past_what_an_index_holds_is_left_out_and_noted(root, make_run):
    """A flattened config key over 1 kB (the API takes it) is not indexed, on both backends
    alike; the rest of the config is, and the run says what was left out."""
    key = "".join(random.Random(3).choices(string.ascii_letters + string.digits, k=4000))
    make_run("proj", config={key: 1, "lr": 0.1, "model": {"width": 8}})
    with Catalog(root, "proj") as catalog:
        report = sync(catalog)
        assert report.added == 1 and report.skipped == []
        with catalog.reader.connect() as conn:
            assert conn.execute(select(config.c.key).order_by(config.c.seq)).scalars().all() == \
                ["lr", "model.width"]
            assert conn.execute(select(runs.c.cut)).scalar() == \
                "1 config key longer than 1024 bytes not indexed"


def test_bad_run_folders_are_reported_and_skipped(root, make_run):
    """Half written, not JSON, format 99, nested too deep: skipped with a reason; others indexed."""
    good = make_run("proj", run_name="good", points={"loss": [(0, 1.0)]})
    odd = make_run("proj", run_name="odd")
    doc = json.loads((odd / "run.json").read_text())
    doc["tags"] = ["x", "x", 7]                           # duplicates and a non-string
    doc["config"] = {"a.b": 1, "a": {"b": 2}}             # one flattened key twice
    write_json_atomic(odd / "run.json", doc)
    runs_dir = good.parent
    half = runs_dir / "20261202T0000-halfhalf"
    half.mkdir()
    shutil.copy(good / "events.r0.s0.log", half)
    broken = runs_dir / "20261202T0000-notjson0"
    shutil.copytree(good, broken)
    (broken / "run.json").write_text('{"format": 1, "id": "20261202T0000-notjson0", "name": ')
    future = runs_dir / "20261202T0000-future99"
    shutil.copytree(good, future)
    doc = json.loads((good / "run.json").read_text())
    write_json_atomic(future / "run.json", dict(doc, id=future.name, format=99))
    deep = runs_dir / "20261202T0000-deep0000"
    shutil.copytree(good, deep)
    (deep / "run.json").write_text('{"format": 1, "id": "x", "config": ' + '{"a": ' * 100_000
                                   + "1" + "}" * 100_001)

    catalog = Catalog(root, "proj")
    try:
        for _ in range(2):                               # never fatal, and said each time
            report = sync(catalog)
            reasons = dict(report.skipped)
            assert sorted(reasons) == sorted([half.name, broken.name, future.name, deep.name])
            assert "no run.json" in reasons[half.name]
            assert "not readable JSON" in reasons[broken.name]
            assert "format 99" in reasons[future.name] and "upgrade" in reasons[future.name]
            assert "not readable JSON" in reasons[deep.name]
        with catalog.reader.connect() as conn:
            names = conn.execute(select(runs.c.name)).scalars().all()
        assert sorted(names) == ["good", "odd"]
        assert one_run(catalog, odd.name)["tags"] == ["x"]
        assert one_run(catalog, odd.name)["config"] == {"a.b": ("int", 1.0, "1")}

        write_json_atomic(future / "run.json", dict(doc, id=future.name))   # format 1 again
        report = sync(catalog)
        assert report.added == 1 and future.name not in dict(report.skipped)
        (good / "run.json").write_text("garbage")        # an indexed run turns unreadable
        report = sync(catalog)
        assert good.name in dict(report.skipped) and report.removed == 0
        with catalog.reader.connect() as conn:
            names = conn.execute(select(runs.c.name)).scalars().all()
        assert sorted(names) == ["good", "odd"]          # 'good' is gone, the future one came
        rows = catalog_rows(catalog)
        sync(catalog, full=True)
        assert catalog_rows(catalog) == rows
    finally:
        catalog.close()


def test_points_a_rank_flushes_after_rank_zero_finished_are_seen(root, make_run, tmp_path):
    """Rank 1 still logging when run.json already says finished: the next sync sees its points."""
    make_run("proj", run_id="ranks", points={"loss": [(0, 1.0)]})
    flag = tmp_path / "flag"
    flag.mkdir()
    child = start_child(f"""
        import os, time
        from pathlib import Path
        import nuboard as nb
        run = nb.init("proj", run_id="ranks", resume="must", system_metrics=False,
                      capture_console=False, capture_env=False)
        for step in range(5):
            run.add_scalar("loss", float(step), step=step)
        run.flush()
        (Path({str(flag)!r}) / "logged").touch()
        while not (Path({str(flag)!r}) / "more").exists():
            time.sleep(0.01)
        for step in range(5, 10):
            run.add_scalar("loss", float(step), step=step)
        run.finish()
    """, NUBOARD_DIR=str(root), RANK="1", WORLD_SIZE="2")
    catalog = Catalog(root, "proj")
    try:
        deadline = time.monotonic() + 30
        while not (flag / "logged").exists():
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
            time.sleep(0.01)
        sync(catalog)
        got = one_run(catalog, "ranks")
        assert got["status"] == "finished"
        assert got["scalars"][(1, "loss")] == (4.0, 0.0, 4.0, 5, 4)
        (flag / "more").touch()
        assert child.wait(timeout=30) == 0, child.stderr.read()
        assert sync(catalog).updated == 1
        assert one_run(catalog, "ranks")["scalars"][(1, "loss")] == (9.0, 0.0, 9.0, 10, 9)
        assert sync(catalog).unchanged == 1
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
        catalog.close()


def test_incremental_sync_refreshes_a_running_runs_heartbeat(root):
    """A heartbeat touched in place, and the writer's own beats, reach heartbeat_mtime."""
    quiet = nb.init("proj", dir=root, heartbeat_interval=3600, **QUIET)
    beating = nb.init("proj", dir=root, heartbeat_interval=0.1, **QUIET)
    catalog = Catalog(root, "proj")
    try:
        assert sync(catalog).added == 2
        first = one_run(catalog, quiet.id)
        assert first["status"] == "running" and first["heartbeat_mtime"] is not None
        later = first["heartbeat_mtime"] + 30
        os.utime(Path(quiet.path) / "heartbeat", (later, later))   # the folder's mtime stays
        sync(catalog)
        assert one_run(catalog, quiet.id)["heartbeat_mtime"] == later

        seen = one_run(catalog, beating.id)["heartbeat_mtime"]
        deadline = time.monotonic() + 10
        while (Path(beating.path) / "heartbeat").stat().st_mtime == seen:
            assert time.monotonic() < deadline, "the heartbeat never changed"
            time.sleep(0.05)
        sync(catalog)
        assert one_run(catalog, beating.id)["heartbeat_mtime"] > seen
    finally:
        quiet.finish()
        beating.finish()
        catalog.close()
    with Catalog(root, "proj") as catalog:
        sync(catalog)
        assert {one_run(catalog, r.id)["status"] for r in (quiet, beating)} == {"finished"}
