"""catalog/artifact_reads.py: each read on real catalogs synced from versions the API wrote."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import make_tree

import nuboard as nb
from nuboard.artifacts import add_artifact, unlink_version
from nuboard.catalog import artifact_reads
from nuboard.catalog.artifact_reads import LineageEdge, RunSummary, VersionSummary
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def quiet(project, **kw):
    return nb.init(project, system_metrics=False, capture_env=False, **kw)


@pytest.fixture
def world(root: Path, tmp_path: Path):
    """datasets/raw v1, v2 (v1 unlinked later) and datasets/notes v1; llm runs 'prepare'
    (produced llm/model:v1 from a run) and 'train' (used datasets/raw:v2 and llm/model:v1)."""
    raw = make_tree(tmp_path / "raw", {"a.bin": b"aa", "b.bin": b"bbb"})
    add_artifact("datasets", "raw", raw, type="dataset", reference=True, dir=root)
    add_artifact("datasets", "raw", raw / "a.bin", type="dataset", description="only a",
                 dir=root)
    add_artifact("datasets", "notes", raw / "b.bin", type="report", dir=root)
    with quiet("llm", run_name="prepare") as prep:
        prep.add_artifact("model", make_tree(tmp_path / "ck", {"w.pt": b"w"}), type="checkpoint")
    with quiet("llm", run_name="train") as train:
        train.use_artifact("datasets/raw:v2")
        train.use_artifact("model:v1")
    unlink_version("datasets", "raw", 1, dir=root)
    catalogs = {}
    for project in ("datasets", "llm"):
        catalogs[project] = Catalog(root, project)
        sync(catalogs[project])
    yield catalogs, prep, train
    for catalog in catalogs.values():
        catalog.close()


def test_version_rows_newest_first_and_filtered(world):
    catalogs, _, _ = world
    datasets = catalogs["datasets"]
    every = artifact_reads.version_rows(datasets)
    assert sorted((r["name"], r["version"]) for r in every) == [("notes", 1), ("raw", 1), ("raw", 2)]
    # newest first by created (to the second), then by number
    keys = [(r["created"], r["version"]) for r in every]
    assert keys == sorted(keys, reverse=True)
    assert all(isinstance(r, dict) for r in every)
    assert {r["storage"] for r in every if r["name"] == "raw"} == {"reference", "copy"}
    linked = artifact_reads.version_rows(datasets, unlinked=False)
    assert sorted((r["name"], r["version"]) for r in linked) == [("notes", 1), ("raw", 2)]
    unlinked = artifact_reads.version_rows(datasets, unlinked=True)
    assert [(r["name"], r["version"], r["unlinked"]) for r in unlinked] == [("raw", 1, True)]
    raw = artifact_reads.version_rows(datasets, name="raw")
    assert [r["version"] for r in raw] == [2, 1]
    assert raw[0]["description"] == "only a" and raw[0]["files"] == 1 and raw[0]["size"] == 2
    assert artifact_reads.version_rows(datasets, name="nothing") == []


def test_version_summaries_of_the_keys_it_has(world):
    catalogs, _, _ = world
    found = artifact_reads.version_summaries(catalogs["datasets"],
                                             [("raw", 1), ("raw", 2), ("raw", 9), ("gone", 1)])
    assert found == {("raw", 1): VersionSummary("dataset", None, True),
                     ("raw", 2): VersionSummary("dataset", "only a", False)}
    assert artifact_reads.version_summaries(catalogs["datasets"], []) == {}


def test_used_by_and_used_from_other_projects(world):
    catalogs, _, train = world
    llm = catalogs["llm"]
    assert artifact_reads.used_by(llm, "datasets", "raw", 2) == [("llm", train.id)]
    assert artifact_reads.used_by(llm, "llm", "model", 1) == [("llm", train.id)]
    assert artifact_reads.used_by(llm, "datasets", "raw", 1) == []
    # the datasets catalog knows the use too (from the use note in the version's folder)
    assert artifact_reads.used_by(catalogs["datasets"], "datasets", "raw", 2) == [("llm", train.id)]
    assert artifact_reads.used_from_other_projects(llm, "llm") == [("datasets", "raw")]
    assert artifact_reads.used_from_other_projects(catalogs["datasets"], "datasets") == []


def test_edges_of_versions_and_of_runs(world):
    catalogs, prep, train = world
    llm = catalogs["llm"]
    produced = artifact_reads.edges_of_versions(llm, "produced", [("llm", "model", 1)])
    assert produced == {LineageEdge("llm", prep.id, "llm", "model", 1)}
    used = artifact_reads.edges_of_versions(llm, "used", [("llm", "model", 1),
                                                          ("datasets", "raw", 2)])
    assert used == {LineageEdge("llm", train.id, "llm", "model", 1),
                    LineageEdge("llm", train.id, "datasets", "raw", 2)}
    inputs = artifact_reads.edges_of_runs(llm, "used", [("llm", train.id)])
    assert {(e.artifact_project, e.artifact_name, e.version) for e in inputs} == \
        {("llm", "model", 1), ("datasets", "raw", 2)}
    assert artifact_reads.edges_of_runs(llm, "produced", [("llm", train.id)]) == set()
    assert artifact_reads.edges_of_runs(llm, "used", []) == set()


def test_edges_asked_in_chunks(world, monkeypatch):
    """More keys than one statement takes: the answer is the same."""
    catalogs, _, train = world
    monkeypatch.setattr(artifact_reads, "CHUNK", 2)
    keys = [("llm", f"nope-{i}") for i in range(5)] + [("llm", train.id)]
    assert len(artifact_reads.edges_of_runs(catalogs["llm"], "used", keys)) == 2


def test_lineage_projects(world):
    catalogs, _, _ = world
    assert artifact_reads.lineage_projects(catalogs["llm"]) == \
        (frozenset({"llm", "datasets"}), frozenset({"llm"}))
    assert artifact_reads.lineage_projects(catalogs["datasets"]) == \
        (frozenset({"datasets"}), frozenset({"llm"}))


def test_run_summaries(world):
    catalogs, prep, train = world
    found = artifact_reads.run_summaries(catalogs["llm"], [prep.id, train.id, "missing"])
    assert set(found) == {prep.id, train.id}
    assert isinstance(found[train.id], RunSummary)
    assert (found[train.id].name, found[train.id].status) == ("train", "finished")
    assert artifact_reads.run_summaries(catalogs["datasets"], [prep.id]) == {}
