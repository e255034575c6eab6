"""Artifacts from runs: producers, inputs and outputs in run.json, and the spec's examples as written."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from helpers import make_tree, run_child

import nuboard as nb


def run_json(run) -> dict:
    return json.loads((Path(run.path) / "run.json").read_text())


def quiet_init(project, **kw):
    return nb.init(project, system_metrics=False, capture_env=False, **kw)


def test_run_add_and_use_record_outputs_inputs_and_producer(root, tmp_path):
    data = make_tree(tmp_path / "data", {"a.bin": b"aa", "sub/b.bin": b"b"})
    with quiet_init("datasets-prep") as prep:
        made = prep.add_artifact("datasets/fineweb-edu", data, type="dataset", reference=True)
    assert made.spec == "datasets/fineweb-edu:v1"
    assert made.producer == {"project": "datasets-prep", "run_id": prep.id}
    assert [(o["project"], o["name"], o["version"]) for o in run_json(prep)["outputs"]] == \
        [("datasets", "fineweb-edu", 1)]

    with quiet_init("llm") as run:
        used = run.use_artifact("datasets/fineweb-edu:latest")
        run.use_artifact("datasets/fineweb-edu:v1")          # the same version: listed once
        ckpt = make_tree(tmp_path / "ckpt", {"final.safetensors": b"w" * 10}) / "final.safetensors"
        model = run.add_artifact("model", ckpt, type="checkpoint", metadata={"step": 25000})
        assert run.use_artifact("model:v1").metadata == {"step": 25000}    # own project
    doc = run_json(run)
    assert [(i["project"], i["name"], i["version"]) for i in doc["inputs"]] == \
        [("datasets", "fineweb-edu", 1), ("llm", "model", 1)]
    assert [(o["project"], o["name"]) for o in doc["outputs"]] == [("llm", "model")]
    assert used["sub/b.bin"].read_bytes() == b"b"
    assert model.storage == "copy" and model.producer["run_id"] == run.id
    assert doc["status"] == "finished"          # finish() kept what add/use wrote
    uses = list((root / "datasets" / "artifacts" / ".uses" / "fineweb-edu" / "v1").iterdir())
    assert [json.loads(u.read_text())["run_id"] for u in uses] == [run.id]


def test_nb_add_artifact_is_logged_outside_a_run(root, tmp_path):
    src = make_tree(tmp_path / "imagenet-100", {"x.jpg": b"x"})
    art = nb.add_artifact("datasets", "imagenet-100", str(src), type="dataset",
                          metadata={"classes": 100}, reference=True)
    assert art.producer is None
    got = nb.get_artifact("datasets/imagenet-100:v1")
    assert got.metadata == {"classes": 100} and list(got) == ["x.jpg"]
    assert not (root / "datasets" / "artifacts" / ".uses").exists()     # get records nothing


def test_use_warns_once_naming_the_missing_file(root, tmp_path):
    data = make_tree(tmp_path / "d", {"a": b"1", "b": b"2"})
    nb.add_artifact("datasets", "d", data, reference=True)
    (data / "b").unlink()
    with quiet_init("llm") as run, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.use_artifact("datasets/d:v1")
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "1 file missing: b" in messages[0]
    assert caught[0].filename == __file__          # pointed at the caller's line


def test_bad_specs_and_a_finished_run_raise_clearly(root, tmp_path):
    with quiet_init("llm") as run:
        with pytest.raises(ValueError, match="not valid"):
            run.add_artifact("bad name", tmp_path)
        with pytest.raises(nb.NuBoardError, match="has no versions|not found"):
            run.use_artifact("model:v1")
        with pytest.raises(ValueError, match="version 'x'"):
            run.use_artifact("datasets/fineweb-edu:x")
    with pytest.raises(nb.RunFinishedError, match="finished"):
        run.use_artifact("model:v1")
    assert "inputs" not in run_json(run) and "outputs" not in run_json(run)


def test_a_killed_use_leaves_run_json_whole(root, tmp_path):
    """Inputs are written through the same temp + rename as every run.json write."""
    data = make_tree(tmp_path / "d", {"a": b"1"})
    nb.add_artifact("datasets", "d", data, reference=True)
    code = f"""
import nuboard as nb
run = nb.init("llm", system_metrics=False, capture_env=False, dir={str(root)!r})
for _ in range(50):
    run.use_artifact("datasets/d:v1")
print(run.path, flush=True)
import os, signal
os.kill(os.getpid(), signal.SIGKILL)
"""
    out = run_child(code, check=False)
    folder = Path(out.stdout.strip())
    doc = json.loads((folder / "run.json").read_text())
    assert [i["name"] for i in doc["inputs"]] == ["d"]


def test_spec_examples_as_written(root, tmp_path, monkeypatch):
    """The examples of spec/artifacts.md, with /data made to exist under tmp."""
    data = tmp_path / "data"
    make_tree(data / "imagenet-100", {"train/n01440764/0.jpg": b"jpg"})
    make_tree(data / "fineweb-edu" / "2026-10", {"train/shard-000.bin": b"s0", "val/s.bin": b"v"})
    monkeypatch.chdir(tmp_path)
    make_tree(tmp_path / "ckpt", {"final.safetensors": b"weights"})

    nb.add_artifact("datasets", "imagenet-100", f"{data}/imagenet-100", type="dataset",
                    metadata={"classes": 100}, reference=True)

    with nb.init("llm-pretrain", run_name="prepare-data", tags=["data"]) as run:
        run.add_artifact("datasets/fineweb-edu", f"{data}/fineweb-edu/2026-10",
                         type="dataset", metadata={"tokens": "12B"}, reference=True)
    with nb.init("llm-pretrain", run_name="prepare-data-2", tags=["data"]) as run:
        run.add_artifact("datasets/fineweb-edu", f"{data}/fineweb-edu/2026-10",
                         type="dataset", metadata={"tokens": "12B"}, reference=True)
    preparer = run.id

    seen = {}
    with nb.init("llm-pretrain", run_name="lr1e-3-s1") as run:
        data_v2 = run.use_artifact("datasets/fineweb-edu:v2")  # or ":latest"
        seen["train"] = sorted(p.name for p in (data_v2.files / "train").iterdir())
        run.add_artifact("model", "ckpt/final.safetensors", type="checkpoint",
                         metadata={"step": 25000})
        model = run.use_artifact("model:latest")
        seen["list"] = list(model)
        seen["in"] = "final.safetensors" in model
        seen["path"] = model["final.safetensors"]
        seen["len"] = len(model)
        seen["shard"] = data_v2["train/shard-000.bin"]
        with pytest.raises(KeyError, match="final.safetensors"):
            model["other.pt"]
    assert seen["train"] == ["shard-000.bin"]
    assert seen["list"] == ["final.safetensors"] and seen["in"] and seen["len"] == 1
    assert seen["path"].read_bytes() == b"weights" and seen["shard"].read_bytes() == b"s0"
    assert nb.get_artifact("datasets/fineweb-edu:v2").producer == \
        {"project": "llm-pretrain", "run_id": preparer}

    monkeypatch.setenv("NUBOARD_DATA_DIR", str(data))
    nb.add_artifact("datasets", "fineweb-edu", f"{data}/fineweb-edu/2026-10", reference=True)
    assert nb.get_artifact("datasets/fineweb-edu:v3").manifest["location"] == \
        "${NUBOARD_DATA_DIR}/fineweb-edu/2026-10"
    monkeypatch.setenv("IMAGENET", str(data / "imagenet-100"))
    nb.add_artifact("datasets", "imagenet-100", "${IMAGENET}/train", reference=True)
    monkeypatch.delenv("IMAGENET")
    with nb.init("vit-ablations") as run, pytest.warns(RuntimeWarning, match=r"\$IMAGENET"):
        run.use_artifact("datasets/imagenet-100:v2")
