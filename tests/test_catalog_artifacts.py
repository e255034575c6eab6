"""The catalog's artifacts, versions and lineage, synced from files the real API wrote."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import make_tree
from sqlalchemy import text

import nuboard as nb
from nuboard.artifacts import restore_version, unlink_version
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def synced(root: Path, project: str, full: bool = False):
    catalog = Catalog(root, project)
    try:
        report = sync(catalog, full=full)
    finally:
        catalog.close()
    return report, catalog


def rows(catalog, sql: str) -> list[tuple]:
    """Rows of a query, read through the catalog (its file, or its schema on the server)."""
    with catalog.reader.connect() as conn:
        return sorted((tuple(r) for r in conn.execute(text(sql))), key=repr)


EDGES = "SELECT kind, run_project, run_id, artifact_project, artifact_name, version, origin FROM lineage"
VERSIONS = ("SELECT a.name, a.type, v.version, v.files, v.size, v.storage, v.unlinked, "
            "v.producer_project, v.producer_run, v.digest FROM versions v JOIN artifacts a "
            "ON a.id = v.artifact")


def quiet(project, **kw):
    return nb.init(project, system_metrics=False, capture_env=False, **kw)


def lineage_demo(root: Path, tmp_path: Path):
    data = make_tree(tmp_path / "fw", {"a.bin": b"aa", "b.bin": b"bbb"})
    with quiet("llm", run_name="prepare") as prep:
        prep.add_artifact("datasets/fineweb-edu", data, type="dataset", reference=True)
    with quiet("llm", run_name="train") as train:
        train.use_artifact("datasets/fineweb-edu:v1")
        ckpt = make_tree(tmp_path / "ck", {"final.pt": b"w"})
        train.add_artifact("model", ckpt / "final.pt", type="checkpoint")
    with quiet("llm", run_name="eval") as evaluation:
        evaluation.use_artifact("model:latest")
    return prep, train, evaluation


def test_versions_and_edges_are_indexed_in_both_projects(root, tmp_path):
    prep, train, evaluation = lineage_demo(root, tmp_path)
    report, datasets_db = synced(root, "datasets")
    assert report.versions == {"added": 1, "updated": 0, "removed": 0, "uses": 1}
    _, llm_db = synced(root, "llm")
    got = rows(datasets_db, VERSIONS)
    assert [r[:9] for r in got] == [("fineweb-edu", "dataset", 1, 2, 5, "reference", 0, "llm", prep.id)]
    # the datasets catalog knows who made and used its version, though those runs are elsewhere
    assert rows(datasets_db, EDGES) == sorted([
        ("produced", "llm", prep.id, "datasets", "fineweb-edu", 1, "manifest"),
        ("used", "llm", train.id, "datasets", "fineweb-edu", 1, "use"),
    ], key=repr)
    edges = {(k, run, a, n, v) for k, _, run, a, n, v, _ in rows(llm_db, EDGES)}
    assert edges == {
        ("produced", prep.id, "datasets", "fineweb-edu", 1),
        ("used", train.id, "datasets", "fineweb-edu", 1),
        ("produced", train.id, "llm", "model", 1),
        ("used", evaluation.id, "llm", "model", 1),
    }
    assert [r[:3] for r in rows(llm_db, VERSIONS)] == [("model", "checkpoint", 1)]


def test_incremental_and_full_sync_agree_and_unlink_shows(root, tmp_path):
    lineage_demo(root, tmp_path)
    _, db = synced(root, "datasets")
    again, _ = synced(root, "datasets")
    assert again.versions == {"added": 0, "updated": 0, "removed": 0, "uses": 0}   # nothing changed
    unlink_version("datasets", "fineweb-edu", "v1")
    report, _ = synced(root, "datasets")
    assert report.versions == {"added": 0, "updated": 1, "removed": 0, "uses": 0}
    assert [r[6] for r in rows(db, VERSIONS)] == [1]                      # marked unlinked
    incremental = (rows(db, VERSIONS), rows(db, EDGES))
    synced(root, "datasets", full=True)
    assert (rows(db, VERSIONS), rows(db, EDGES)) == incremental
    restore_version("datasets", "fineweb-edu", "v1")
    synced(root, "datasets")
    assert [r[6] for r in rows(db, VERSIONS)] == [0]


def test_removed_runs_and_versions_leave_the_catalog(root, tmp_path):
    prep, train, evaluation = lineage_demo(root, tmp_path)
    _, llm_db = synced(root, "llm")
    shutil.rmtree(evaluation.path)
    synced(root, "llm")
    assert evaluation.id not in {r[2] for r in rows(llm_db, EDGES)}
    shutil.rmtree(root / "llm" / "artifacts" / "model" / "v1")
    report, _ = synced(root, "llm")
    assert report.versions["removed"] == 1
    assert rows(llm_db, VERSIONS) == []
    assert rows(llm_db, "SELECT name FROM artifacts") == []
    # the run that produced it still lists it (its run.json is its record)
    assert ("produced", train.id, "llm", "model", 1) in {
        (k, run, a, n, v) for k, _, run, a, n, v, _ in rows(llm_db, EDGES)}


def test_same_files_give_the_same_digest(root, tmp_path):
    data = make_tree(tmp_path / "d", {"x": b"1"})
    nb.add_artifact("datasets", "d", data, reference=True)
    nb.add_artifact("datasets", "d", data, reference=True)
    (data / "x").write_bytes(b"22")
    nb.add_artifact("datasets", "d", data, reference=True)
    _, db = synced(root, "datasets")
    digests = [r[9] for r in sorted(rows(db, VERSIONS), key=lambda r: r[2])]
    assert digests[0] == digests[1] != digests[2]
