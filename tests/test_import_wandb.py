"""`nuboard import wandb` (issue 34, item 2): a run written by the real wandb package in offline
mode comes in point for point (every history row at its step), with its config, tags, notes,
group, status, summary and images; a second import writes nothing; a damaged run file loses
only the damaged records; the framing reader never raises on hostile bytes."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest
from helpers import child_env, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import nuboard as nb
from nuboard.importers.wandb_records import MAGIC, NotAWandbFile, split_records

needs_wandb = pytest.mark.skipif(importlib.util.find_spec("wandb") is None,
                                 reason="the wandb extra is not installed")

SCRIPT = """
import numpy as np, wandb
run = wandb.init(project="proj", name="first", config={"lr": 0.001, "model": {"w": 8}},
                 tags=["a", "b"], notes="hello", group="g1")
for i in range(5):
    run.log({"train/loss": 1.0 / (i + 1), "acc": i * 0.1})
run.log({"val/loss": 0.5, "samples": wandb.Image(np.full((6, 4, 3), 200, np.uint8))}, step=10)
run.log({"weights": wandb.Histogram(np.arange(100.0))}, step=11)
run.log({"val": {"top1": 0.7}}, step=12)
run.summary["best"] = 0.9
run.summary["diverged"] = float("nan")
run.finish()
print(run.id)
"""


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    base = tmp_path_factory.mktemp("wandb-offline")
    env = child_env(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(base),
                    WANDB_DISABLE_GIT="true", WANDB_CONSOLE="off",
                    WANDB_CONFIG_DIR=str(base / ".config"), WANDB_CACHE_DIR=str(base / ".cache"))
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=180, cwd=base)
    assert done.returncode == 0, done.stderr[-2000:]
    return base / "wandb", done.stdout.strip().splitlines()[-1]


@needs_wandb
def test_an_offline_run_comes_in_point_for_point(offline, tmp_path):
    folder, wandb_id = offline
    root = tmp_path / "experiments"
    done = run_cli(root, "import", "wandb", str(folder), "--project", "llm")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Imported 1 run")
    (run,) = nb.runs("llm", dir=root)
    assert (run.name, run.status, run.tags, run.group, run.notes) == (
        "first", "finished", ["a", "b"], "g1", "hello")
    assert run.config == {"lr": 0.001, "model.w": 8}
    history = nb.history("llm", dir=root).to_pylist()
    points = {(p["key"], p["step"]): p["value"] for p in history}
    assert {k: v for k, v in points.items() if k[0] == "train/loss"} == {
        ("train/loss", i): 1.0 / (i + 1) for i in range(5)}
    assert points[("val/loss", 10)] == 0.5 and points[("acc", 4)] == pytest.approx(0.4)
    assert points[("val/top1", 12)] == 0.7                  # a nested dict, flattened
    doc = json.loads((run.path / "run.json").read_text())
    assert doc["source"]["tool"] == "wandb" and doc["source"]["run_id"] == wandb_id
    assert doc["summary"]["best"] == 0.9 and doc["summary"]["train/loss"] == 0.2
    assert doc["summary"]["diverged"] is None              # NaN: run.json holds no NaN
    media = {(m["key"], m["step"], m["kind"]) for m in nb.media("llm", dir=root).to_pylist()}
    assert ("samples", 10, "image") in media and ("weights", 11, "histogram") in media
    again = run_cli(root, "import", "wandb", str(folder), "--project", "llm")
    assert again.returncode == 0 and "its 1 run is already imported" in again.stdout
    assert len(nb.runs("llm", dir=root)) == 1


@needs_wandb
def test_a_damaged_run_file_loses_only_its_damaged_records(offline, tmp_path):
    folder, _ = offline
    (source,) = list(folder.rglob("run-*.wandb"))
    copy = tmp_path / "wandb" / "offline-run-x" / source.name
    copy.parent.mkdir(parents=True)
    data = bytearray(source.read_bytes())
    data[len(data) // 2] ^= 0xFF                      # one flipped bit in a record's middle
    copy.write_bytes(bytes(data))
    root = tmp_path / "experiments"
    done = run_cli(root, "import", "wandb", str(tmp_path / "wandb"), "--project", "llm")
    assert done.returncode == 0, done.stderr
    assert "damaged or cut record" in done.stderr
    assert len(nb.history("llm", dir=root).to_pylist()) >= 5


def test_no_wandb_file_is_one_line(tmp_path):
    done = run_cli(tmp_path / "experiments", "import", "wandb", str(tmp_path), "--project", "llm")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "run-<id>.wandb" in done.stderr


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.binary(max_size=3000))
def test_the_framing_reader_never_raises_on_hostile_bytes(tail):
    found = split_records(MAGIC + b"\x00" + tail)
    assert all(isinstance(r, bytes) for r in found.records)
    with pytest.raises(NotAWandbFile):
        split_records(tail[:5])
    assert os.sep                       # the reader touched no file


@needs_wandb
def test_a_run_imported_while_running_is_imported_again_in_place(offline, tmp_path):
    """The file as it was mid-run (no exit record): imported as running; once it has ended
    (the whole file), the next import updates that run, keeping its id."""
    folder, _ = offline
    (source,) = list(folder.rglob("run-*.wandb"))
    live = tmp_path / "wandb" / source.parent.name / source.name
    live.parent.mkdir(parents=True)
    data = source.read_bytes()
    live.write_bytes(data[:len(data) * 2 // 3])             # cut before the exit record
    root = tmp_path / "experiments"
    assert run_cli(root, "import", "wandb", str(tmp_path / "wandb"), "-p", "llm").returncode == 0
    (first,) = nb.runs("llm", dir=root)
    assert first.status in ("running", "lost")
    live.write_bytes(data)
    done = run_cli(root, "import", "wandb", str(tmp_path / "wandb"), "-p", "llm")
    assert done.returncode == 0, done.stderr
    (again,) = nb.runs("llm", dir=root)
    assert (again.id, again.status) == (first.id, "finished")
