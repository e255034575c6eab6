"""`nuboard import mlflow` keeps what MLflow showed: a nested run keeps its parent (run.json,
the catalog, the run page); a metric logged to a finished run after the first import comes in
with the second, the run keeping its id (unless it was resumed in NuBoard since); datasets and
logged models become reference versions the run used and made (--artifacts); MLflow's own log
lines never reach the terminal: an mlruns folder half-migrated (runs MLflow calls malformed)
gives one line per problem."""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from helpers import QUIET, cli, run_child
from helpers_http import Viewer

import nuboard as nb
from nuboard import importers

pytest.importorskip("mlflow")

WRITE = """
    import json, mlflow, numpy as np
    mlflow.set_tracking_uri({uri!r})
    mlflow.set_experiment("sweep")
    with open({data!r}, "w") as f:
        f.write("x\\n1\\n2\\n")
    with mlflow.start_run(run_name="search") as parent:
        mlflow.log_metric("best", 0.5, step=0)
        for lr in (0.1, 0.01):
            with mlflow.start_run(run_name=f"lr{{lr}}", nested=True) as child:
                mlflow.log_param("lr", lr)
                for step in range(3):
                    mlflow.log_metric("loss", lr / (step + 1), step=step)
        mlflow.log_input(mlflow.data.from_numpy(np.arange(3), source={data!r}, name="train"),
                         context="training")
        mlflow.log_input(mlflow.data.from_numpy(np.arange(2), source="s3://bucket/eval.csv",
                                                name="eval"), context="eval")
        mlflow.create_external_model(name="net")                 # an MLflow 3 logged model
    print(json.dumps({{"parent": parent.info.run_id, "child": child.info.run_id,
                      "experiment": parent.info.experiment_id}}))
"""

LOG_LATER = """
    from mlflow import MlflowClient
    MlflowClient({uri!r}).log_metric({run!r}, "loss", 0.001, step=10)
"""


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory) -> tuple[Path, dict]:
    """An mlruns folder: run 'search' with two nested runs, 'lr0.1' and 'lr0.01'; 'search'
    logged a local dataset, one on S3, and a logged model."""
    folder = tmp_path_factory.mktemp("fidelity") / "mlruns"
    data = folder.parent / "train.csv"
    proc = run_child(WRITE.format(uri=str(folder), data=str(data)), MLFLOW_ALLOW_FILE_STORE="true")
    return folder, json.loads(proc.stdout.strip().splitlines()[-1])


def docs_by_name(root: Path, project: str) -> dict[str, dict]:
    return {doc["name"]: doc for doc in
            (json.loads(p.read_text()) for p in (root / project / "runs").glob("*/run.json"))}


def test_nested_runs_keep_their_parent(tmp_path, mlruns):
    folder, ids = mlruns
    root = tmp_path / "exp"
    proc = cli(root, "import", "mlflow", str(folder), "-p", "ml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [              # nothing from MLflow on the terminal
        f"nuboard import mlflow: note: {ids['parent']}: 2 datasets and 1 logged model kept in "
        "run.json's source only (pass --artifacts to record them as reference versions)"]
    docs = docs_by_name(root, "ml")
    parent_id = docs["search"]["id"]
    assert docs["search"].get("parent") is None
    for name in ("lr0.1", "lr0.01"):
        assert docs[name]["parent"] == {"run_id": parent_id, "step": None, "project": "ml"}
        assert docs[name]["source"]["parent_run_id"] == ids["parent"]

    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.run_reads import child_runs
    with Catalog(root, "ml") as catalog:
        assert sorted(r["name"] for r in child_runs(catalog, parent_id)) == ["lr0.01", "lr0.1"]
    with Viewer(root) as v:
        page = v.get(f"/p/ml/.run/{docs['lr0.1']['id']}").text
        assert f"/p/ml/.run/{parent_id}" in page
        assert "Parent run" in page and "Forked from" not in page
        table = v.get("/p/ml").text
        assert table.count(f'title="nested in {parent_id}">child</span>') == 2
    children = nb.runs("ml", query=f"parent:{parent_id}", dir=root)
    assert sorted(r.name for r in children) == ["lr0.01", "lr0.1"]
    assert [r.name for r in nb.runs("ml", query="-parent:*", dir=root)] == ["search"]


def test_a_parent_imported_after_its_child_is_linked(tmp_path, mlruns):
    """A store read child first (here: the parent's folder left out of the first import, as
    an unreadable parent is) links the child once the parent comes in."""
    folder, ids = mlruns
    copy = tmp_path / "mlruns"
    shutil.copytree(folder, copy)
    meta = copy / ids["experiment"] / ids["parent"] / "meta.yaml"
    text = meta.read_text()
    meta.write_text(text.replace("experiment_id:", "experiment_id: '999'\nx:", 1))   # malformed
    root = tmp_path / "exp"
    first = importers.mlflow(copy, "ml", dir=root)
    assert [bad["key"] for bad in first.unreadable] == [ids["parent"]]
    assert all(doc.get("parent") is None for doc in docs_by_name(root, "ml").values())
    meta.write_text(text)
    second = importers.mlflow(copy, "ml", dir=root)
    assert len(second.written) == 1 and len(second.skipped) == 2
    docs = docs_by_name(root, "ml")
    assert docs["lr0.1"]["parent"]["run_id"] == docs["search"]["id"]


def test_a_metric_logged_after_the_import_comes_in_with_the_same_run_id(tmp_path, mlruns):
    folder, ids = mlruns
    copy = tmp_path / "mlruns"
    shutil.copytree(folder, copy)
    root = tmp_path / "exp"
    first = importers.mlflow(copy, "ml", dir=root)
    assert len(first.written) == 3
    before = {doc["name"]: doc["id"] for doc in docs_by_name(root, "ml").values()}
    again = importers.mlflow(copy, "ml", dir=root)
    assert again.written == [] and len(again.skipped) == 3          # nothing new: left alone

    run_child(LOG_LATER.format(uri=str(copy), run=ids["child"]), MLFLOW_ALLOW_FILE_STORE="true")
    second = importers.mlflow(copy, "ml", dir=root)
    child_id = before["lr0.01"]
    assert second.written == [child_id] and second.replaced == [child_id]
    assert "(1 updated)" in second.summary()
    assert {doc["name"]: doc["id"] for doc in docs_by_name(root, "ml").values()} == before
    assert docs_by_name(root, "ml")["lr0.01"]["parent"]["run_id"] == before["search"]
    loss = nb.runs("ml", query="name:lr0.01", dir=root)[0].scalars["loss"]
    assert loss["last"] == pytest.approx(0.001)
    assert importers.mlflow(copy, "ml", dir=root).written == []

    with nb.init("ml", dir=root, run_id=child_id, resume="must", **QUIET) as run:   # resumed here
        run.add_scalar("eval/acc", 0.9, step=11)
    run_child(LOG_LATER.format(uri=str(copy), run=ids["child"]).replace("step=10", "step=12"),
              MLFLOW_ALLOW_FILE_STORE="true")
    third = importers.mlflow(copy, "ml", dir=root)
    assert third.written == [] and child_id in third.skipped
    assert any("was resumed in NuBoard since: left as it is" in note for note in third.notes)
    assert nb.runs("ml", query="name:lr0.01", dir=root)[0].scalars["eval/acc"]["last"] == 0.9


def test_a_half_migrated_folder_gives_one_line_per_problem(tmp_path, mlruns):
    """Runs MLflow finds malformed (one recorded under another experiment, one with a bare
    meta.yaml) are each one line naming the run; MLflow's warnings and tracebacks stay off
    stderr, and the import leaves the root logger as it found it."""
    folder, ids = mlruns
    copy = tmp_path / "mlruns"
    shutil.copytree(folder, copy)
    meta = copy / ids["experiment"] / ids["child"] / "meta.yaml"
    meta.write_text(meta.read_text().replace(f"experiment_id: '{ids['experiment']}'",
                                             "experiment_id: '999'"))
    bare = copy / ids["experiment"] / "0123456789abcdef"
    bare.mkdir()
    (bare / "meta.yaml").write_text("run_id: 0123456789abcdef\n")
    for meta in (copy / ids["experiment"] / "models").glob("*/meta.yaml"):
        meta.unlink()                                   # a logged model without its meta.yaml
    proc = cli(tmp_path / "exp", "import", "mlflow", str(copy), "-p", "ml")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert all(line.startswith("nuboard import mlflow: ") for line in lines), proc.stderr
    skips = [line for line in lines if line.startswith("nuboard import mlflow: skipped run '")]
    assert len(skips) == 2 and ids["child"] in skips[1] and "0123456789abcdef" in skips[0], lines
    assert len(lines) <= 4, proc.stderr         # and a note on the parent's datasets and models
    assert "2 could not be read" in proc.stdout

    handlers = list(logging.getLogger().handlers)
    result = importers.mlflow(copy, "ml2", dir=tmp_path / "exp")
    assert len(result.unreadable) == 2 and len(result.written) == 2
    assert logging.getLogger().handlers == handlers          # MLflow's logging.warning added none


def test_datasets_and_logged_models_become_versions_used_and_made(tmp_path, mlruns):
    folder, ids = mlruns
    root = tmp_path / "exp"
    result = importers.mlflow(folder, "ml", dir=root, artifacts=True)
    assert sorted(result.artifacts) == ["ml/mlflow-model-net:v1", "ml/train:v1"]
    assert result.notes == [f"{ids['parent']}: dataset 'eval' not recorded: its source "
                            "'{\"uri\": \"s3://bucket/eval.csv\"}' is not a local path that exists"]
    doc = docs_by_name(root, "ml")["search"]
    assert [(i["name"], i["version"]) for i in doc["inputs"]] == [("train", 1)]
    assert [(o["name"], o["version"]) for o in doc["outputs"]] == [("mlflow-model-net", 1)]
    assert sorted(d["name"] for d in doc["source"]["datasets"]) == ["eval", "train"]
    train = nb.get_artifact("ml/train:v1", dir=root)
    assert train.type == "dataset" and train.producer is None
    assert importers.mlflow(folder, "ml", dir=root, artifacts=True).artifacts == []   # once
