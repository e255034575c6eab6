"""`nuboard import mlflow`: runs logged by the real mlflow (an SQLite store and an mlruns folder),
imported through the CLI and the Python API, every metric point compared with MLflow's own
get_metric_history; statuses, params, tags, idempotency, a RUNNING run replaced once it ended,
reference artifacts, errors, ls and the query language on the imported runs."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import cli, one_line_error, run_child
from helpers_http import Viewer

import nuboard as nb
from nuboard import importers
from nuboard.importers.source_runs import iso

pytest.importorskip("mlflow")

WRITE_STORE = """
    import json, os, mlflow
    from mlflow import MlflowClient
    uri = {uri!r}
    os.chdir({home!r})        # a new SQLite store keeps its artifacts under ./mlruns
    mlflow.set_tracking_uri(uri)
    ids = {{}}
    mlflow.set_experiment("sweep")
    for lr, status in ((0.001, "FINISHED"), (0.01, "FAILED"), (0.1, "KILLED")):
        with mlflow.start_run(run_name=f"lr{{lr}}") as run:
            mlflow.log_param("lr", lr)
            mlflow.log_param("optimizer", "adam")
            mlflow.log_param("layers", 4)
            mlflow.log_param("amp", True)
            mlflow.set_tag("stage", "baseline" if lr == 0.001 else "try")
            mlflow.set_tag("mlflow.note.content", "first sweep")
            for step in range(0, 60, 3):
                mlflow.log_metric("train/loss", 1.0 / (step + 1) + lr, step=step)
                mlflow.log_metric("train/loss", 2.0 / (step + 1) + lr, step=step)   # twice at a step
                if step % 9 == 0:
                    mlflow.log_metric("eval acc", step * lr, step=step)
            mlflow.log_metric("system/gpu", 1.5, step=1)          # NuBoard's default system prefix
            os.makedirs({art!r}, exist_ok=True)
            with open(os.path.join({art!r}, "notes.txt"), "w") as f:
                f.write(str(lr))
            mlflow.log_artifact(os.path.join({art!r}, "notes.txt"))
            if status != "FINISHED":
                mlflow.end_run(status=status)
            ids[status] = run.info.run_id
    client = MlflowClient(uri)
    other = client.create_experiment("other")
    live = client.create_run(other, run_name="still-going",          # never terminated: RUNNING
                             start_time=1_699_999_999_000)
    client.log_param(live.info.run_id, "lr", "3e-4")
    client.log_metric(live.info.run_id, "train/loss", 0.7, step=0, timestamp=1_700_000_000_000)
    ids["RUNNING"] = live.info.run_id
    print(json.dumps(ids))
"""


def write_store(uri: str, art: Path, **env) -> dict:
    proc = run_child(WRITE_STORE.format(uri=uri, art=str(art), home=str(art.parent)), **env)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[str, dict]:
    """An SQLite store: three runs of 'sweep' (finished, failed, killed), one RUNNING in 'other'."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    return uri, write_store(uri, folder / "art")


def mlflow_points(client, run_id: str) -> dict[str, list[tuple]]:
    run = client.get_run(run_id)
    return {key: [(m.step, m.timestamp / 1000, m.value) for m in client.get_metric_history(run_id, key)]
            for key in run.data.metrics}


def runs_by_key(root: Path, project: str) -> dict[str, tuple[Path, dict]]:
    out = {}
    for folder in (root / project / "runs").iterdir():
        doc = json.loads((folder / "run.json").read_text())
        out[doc["source"]["key"]] = (folder, doc)
    return out


def test_cli_imports_every_run_and_point_once(root, store):
    from mlflow import MlflowClient
    uri, ids = store
    done = cli(root, "import", "mlflow", uri, "--project", "ml")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and len(done.stdout.splitlines()) == 1
    assert done.stdout.startswith("Imported 4 runs (") and f"from MLflow {uri} into ml" in done.stdout
    runs = runs_by_key(root, "ml")
    assert sorted(runs) == sorted(ids.values())
    client = MlflowClient(uri)
    total = 0
    for status, run_id in ids.items():
        folder, doc = runs[run_id]
        source = client.get_run(run_id)
        expected = mlflow_points(client, run_id)
        renamed = doc["source"].get("renamed", {})
        got = nb.read_scalars(folder)
        assert sorted(got) == sorted(renamed.get(k, k) for k in expected)
        for key, points in expected.items():
            scalar = got[renamed.get(key, key)]
            assert list(zip(scalar.steps, scalar.wall_times, scalar.values)) == points, (status, key)
            total += len(points)
        assert doc["start_time"] == iso(source.info.start_time / 1000)
        assert doc["name"] == source.info.run_name
        assert doc["source"]["status"] == status and doc["source"]["uri"] == uri
        assert doc["source"]["tags"] == source.data.tags
        if status != "RUNNING":
            assert doc["end_time"] == iso(source.info.end_time / 1000)
            assert doc["status"] == status.lower()
            assert doc["group"] == "sweep" and doc["notes"] == "first sweep"
            assert "renamed" not in doc["source"] and doc["prefixes"]["system"] != "system"
            assert doc["config"]["optimizer"] == "adam" and doc["config"]["layers"] == 4
            assert doc["config"]["amp"] is True and isinstance(doc["config"]["lr"], float)
    assert f"({total:,} points, 3 media entries)" in done.stdout and total == 3 * (2 * 20 + 7 + 1) + 1
    finished = runs[ids["FINISHED"]][1]
    assert finished["tags"] == ["stage=baseline"] and finished["config"]["lr"] == 0.001
    live = runs[ids["RUNNING"]][1]
    assert live["status"] == "running" and live["end_time"] is None and live["group"] == "other"
    assert live["config"] == {"lr": 0.0003}

    listed = {r["name"]: r for r in json.loads(cli(root, "ls", "ml", "--json").stdout)}
    assert {n: r["status"] for n, r in listed.items()} == {
        "lr0.001": "finished", "lr0.01": "failed", "lr0.1": "killed", "still-going": "lost"}
    found = json.loads(cli(root, "ls", "ml", "--query", "lr>=0.01 optimizer=adam", "--json").stdout)
    assert sorted(r["name"] for r in found) == ["lr0.01", "lr0.1"]
    found = json.loads(cli(root, "ls", "ml", "--query", 'tag:"stage=baseline"', "--json").stdout)
    assert [r["name"] for r in found] == ["lr0.001"]

    again = cli(root, "import", "mlflow", uri, "--project", "ml")
    assert again.returncode == 0 and again.stdout.startswith("Nothing to import"), again.stderr
    assert "4 runs are already imported" in again.stdout
    assert len(list((root / "ml" / "runs").iterdir())) == 4

    run_id = runs[ids["FINISHED"]][0].name
    with Viewer(root) as v:
        assert "lr0.001" in v.get("/p/ml").text
        page = v.get(f"/p/ml/.run/{run_id}").text
        assert "first sweep" in page and "optimizer" in page
        chart = v.get(f"/api/p/ml/.chart?name=train/loss&runs={run_id}").json()
        assert chart["series"][0]["total"] == 40


def test_api_one_experiment_and_a_run_that_ended_since(root, store, tmp_path):
    uri, ids = store
    copy = tmp_path / "mlflow.db"                     # this test ends the RUNNING run: its own copy
    copy.write_bytes(Path(uri[len("sqlite:///"):]).read_bytes())
    uri = f"sqlite:///{copy}"
    planned = importers.mlflow(uri, "ml", experiment="other", dir=root, dry_run=True)
    assert planned.pending == [ids["RUNNING"]] and not (root / "ml").exists()
    first = importers.mlflow(uri, "ml", experiment="other", dir=root)
    assert len(first.written) == 1 and first.skipped == []
    same = importers.mlflow(uri, "ml", "other", root)
    assert same.written == [] and same.skipped == first.written
    run_child(f"""
        from mlflow import MlflowClient
        c = MlflowClient({uri!r})
        c.log_metric({ids["RUNNING"]!r}, "train/loss", 0.5, step=1, timestamp=1_700_000_060_000)
        c.set_terminated({ids["RUNNING"]!r}, "FINISHED")
    """)
    ended = importers.mlflow(uri, "ml", "other", root)
    assert ended.written == first.written and ended.replaced == first.written   # the same run id
    folder = root / "ml" / "runs" / first.written[0]
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "finished" and doc["end_time"] is not None
    assert list(nb.read_scalars(folder)["train/loss"].values) == [0.7, 0.5]
    assert [p.name for p in (root / "ml" / "runs").iterdir()] == first.written
    with pytest.raises(importers.ImportSourceError, match="experiment 'nope' not found.*'other'"):
        importers.mlflow(uri, "ml", "nope", root)


def test_mlruns_folder_with_artifacts(root, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    mlruns = tmp_path / "mlruns"
    ids = write_store(str(mlruns), tmp_path / "art", MLFLOW_ALLOW_FILE_STORE="true")
    result = importers.mlflow(mlruns, "ml", dir=root, artifacts=True)
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ            # set for the import only
    assert len(result.written) == 4 and result.points == 3 * 48 + 1
    assert sorted(result.artifacts) == ["ml/mlflow-sweep:v1", "ml/mlflow-sweep:v2", "ml/mlflow-sweep:v3"]
    runs = runs_by_key(root, "ml")
    finished_dir, doc = runs[ids["FINISHED"]]
    version = nb.get_artifact(doc["source"]["artifact"], dir=root)
    assert version.storage == "reference" and list(version) == ["notes.txt"]
    assert version.producer == {"project": "ml", "run_id": finished_dir.name}
    assert version["notes.txt"].read_text() == "0.001"
    assert doc["outputs"][0]["name"] == "mlflow-sweep"
    again = importers.mlflow(str(mlruns), "ml", dir=root, artifacts=True)
    assert again.written == [] and again.artifacts == [] and len(again.skipped) == 4
    assert "Nothing to import" in again.summary()


def test_errors_are_one_line(root, tmp_path, store):
    (tmp_path / "notes.txt").write_text("not a database")
    (tmp_path / "empty").mkdir()
    cases = [(f"sqlite:///{tmp_path / 'missing.db'}", "there is no MLflow database"),
             (str(tmp_path / "missing"), "there is no mlruns folder"),
             (str(tmp_path / "empty"), "is not an mlruns folder"),
             (str(tmp_path / "notes.txt"), "is not an SQLite database"),
             ("foo://bar", "MLflow cannot open 'foo://bar'")]
    for uri, words in cases:
        done = cli(root, "import", "mlflow", uri, "--project", "ml")
        assert done.returncode == 1 and words in one_line_error(done), uri
    assert not (tmp_path / "missing.db").exists() and list((tmp_path / "empty").iterdir()) == []
    assert not (root / "ml").exists()
    wrong = cli(root, "import", "mlflow", store[0], "--project", "ml", "--experiment", "nope")
    assert wrong.returncode == 1 and "experiment 'nope' not found" in one_line_error(wrong)
