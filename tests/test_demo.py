"""`nuboard demo`: the demo folder, written once per module by the real CLI and read back.

The demo's runs are real processes writing through the public API; these tests read what
they left with the real readers: run.json, the event logs, manifests, the catalog and
`nuboard ls --json`.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import child_env

import nuboard as nb
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
from nuboard.cli.projects import find_projects
from nuboard.demo import MARKER, DemoConflictError, DemoFailedError, read_demo, write_demo
from nuboard.demo.plan import LLM, RunSpec
from nuboard.demo.pool import Pool, Task

TRAINING = {"lr1e-4-s1", "lr3e-4-s1", "lr1e-3-s1", "lr3e-3-s1", "lr1e-2-s1", "lr3e-4-s2",
            "lr1e-3-s2", "ddp-lr1e-3-bs128", "ddp-lr2e-3-bs128", "lr6e-4-long",
            "lr1e-3-s1-halflr", "wide-d2048"}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `nuboard` as a child process, off any terminal."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", *args], env=child_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The demo, written once for the module by `nuboard demo DIR`."""
    root = tmp_path_factory.mktemp("demo") / "experiments"
    proc = cli("demo", str(root))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, proc


def runs(root: Path, project: str) -> dict[str, tuple[Path, dict]]:
    """Every run of a project by name: (its folder, its run.json)."""
    found = {}
    for folder in sorted((root / project / "runs").iterdir()):
        if (folder / "run.json").is_file():
            doc = json.loads((folder / "run.json").read_text())
            found[doc["name"]] = (folder, doc)
    return found


def inputs(doc: dict) -> list[tuple[str, str, int]]:
    return [(i["project"], i["name"], i["version"]) for i in doc.get("inputs", [])]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_demo_writes_three_projects_and_says_what_next(demo):
    root, proc = demo
    assert find_projects(root) == ["datasets", "llm-pretrain", "vit-ablations"]
    assert (root / MARKER).is_file() and (root / ".demo-data").is_dir()
    assert f"nuboard up {root}" in proc.stdout
    assert "crashed at step" in proc.stdout and "lost" in proc.stdout
    marked = read_demo(root).runs
    assert len(marked) == 18 and marked["llm-pretrain/lr1e-3-s1"] in {
        d["id"] for _, d in runs(root, LLM).values()}
    assert set(runs(root, "vit-ablations")) == {"vit-s16-baseline", "vit-s16-no-mixup",
                                                "vit-s16-droppath0.2", "vit-p8"}


def test_fineweb_versions_are_references_and_v2_was_prepared_by_a_run(demo):
    root, _ = demo
    v1 = nb.get_artifact("datasets/fineweb-edu:v1", dir=root)
    v2 = nb.get_artifact("datasets/fineweb-edu:v2", dir=root)
    prepare = runs(root, LLM)["prepare-data"][1]
    assert v1.reference and v2.reference and v1.type == v2.type == "dataset"
    assert v1.producer is None and v1.description
    assert v2.producer == {"project": LLM, "run_id": prepare["id"]}
    assert v2.metadata["tokens"] == "12B" and prepare["tags"] == ["data"]
    assert [(o["project"], o["name"], o["version"]) for o in prepare["outputs"]] == \
        [("datasets", "fineweb-edu", 2)]
    assert "train/shard-00000.bin" in v2 and v1.check() == [] and v2.check() == []
    assert (root / ".demo-data").resolve() in v2.files.resolve().parents
    images = nb.get_artifact("datasets/imagenet-100:v1", dir=root)
    assert images.reference and images.metadata["classes"] == 100
    assert any(path.endswith(".png") for path in images)
    assert images[next(p for p in images if p.endswith(".png"))].read_bytes().startswith(b"\x89PNG")


def test_twelve_training_runs_use_fineweb_v2_as_the_catalog_records(demo):
    root, _ = demo
    users = {name for name, (_, doc) in runs(root, LLM).items()
             if ("datasets", "fineweb-edu", 2) in inputs(doc)}
    assert users == TRAINING
    catalog = Catalog(root, "datasets")
    try:
        sync(catalog)
    finally:
        catalog.close()
    con = sqlite3.connect(catalog.path)
    try:
        edges = con.execute("SELECT kind, run_id FROM lineage WHERE artifact_name = 'fineweb-edu' "
                            "AND version = 2").fetchall()
    finally:
        con.close()
    ids = {name: doc["id"] for name, (_, doc) in runs(root, LLM).items()}
    assert sorted(r for k, r in edges if k == "used") == sorted(ids[n] for n in TRAINING)
    assert [r for k, r in edges if k == "produced"] == [ids["prepare-data"]]


def test_statuses_include_finished_crashed_and_lost(demo):
    root, _ = demo
    proc = cli("ls", LLM, "--json", "--dir", str(root))
    assert proc.returncode == 0, proc.stderr
    status = {r["name"]: r["status"] for r in json.loads(proc.stdout)}
    assert status["lr1e-2-s1"] == "crashed"
    assert status["wide-d2048"] == "lost"
    finished = {n for n, s in status.items() if s == "finished"}
    assert finished == TRAINING - {"lr1e-2-s1", "wide-d2048"} | {"prepare-data", "eval-mmlu"}
    groups = {r["name"]: r["group"] for r in json.loads(proc.stdout)}
    assert groups["lr1e-3-s1"] == "lr-sweep"


def test_the_crash_and_the_kill_left_what_a_real_one_leaves(demo):
    root, _ = demo
    crashed, _ = runs(root, LLM)["lr1e-2-s1"]
    console = (crashed / "files" / "output.log").read_text()
    assert "Traceback (most recent call last)" in console and "FloatingPointError" in console
    assert max(nb.read_scalars(crashed)["train/loss"].steps) == 1099
    lost, doc = runs(root, LLM)["wide-d2048"]
    assert doc["status"] == "running"
    assert time.time() - (lost / "heartbeat").stat().st_mtime > 120
    assert 0 < max(nb.read_scalars(lost)["train/loss"].steps) <= 1400


def epoch(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_runs_spread_over_days_and_last_minutes_to_hours(demo):
    root, _ = demo
    now = time.time()
    docs = [doc for project in (LLM, "vit-ablations") for _, doc in runs(root, project).values()]
    starts = [epoch(d["start_time"]) for d in docs]
    assert max(starts) - min(starts) > 2 * 86400
    assert now - 12 * 86400 < min(starts) and max(starts) < now - 86400 / 2
    hours = {d["name"]: (epoch(d["end_time"]) - epoch(d["start_time"])) / 3600
             for d in docs if d.get("end_time")}
    assert hours["eval-mmlu"] < 1 and hours["vit-s16-baseline"] < 1 and hours["prepare-data"] < 2
    assert all(hours[n] > 1 for n in TRAINING - {"wide-d2048"})
    assert max(e for d in docs if d.get("end_time") for e in [epoch(d["end_time"])]) < now
    # the versions the runs made are dated on their day too; v1 of the datasets before them
    v2 = nb.get_artifact("datasets/fineweb-edu:v2", dir=root).manifest["created_at"]
    v1 = nb.get_artifact("datasets/fineweb-edu:v1", dir=root).manifest["created_at"]
    prepare = runs(root, LLM)["prepare-data"][1]
    assert epoch(v1) < epoch(prepare["start_time"]) <= epoch(v2) <= epoch(prepare["end_time"]) + 1


def test_every_points_wall_time_lies_in_its_runs_span(demo):
    root, _ = demo
    for project in (LLM, "vit-ablations"):
        for name, (folder, doc) in runs(root, project).items():
            start = epoch(doc["start_time"])
            end = (epoch(doc["end_time"]) if doc.get("end_time")
                   else (folder / "heartbeat").stat().st_mtime)
            first_own = doc["parent"]["step"] + 1 if doc.get("parent") else 0
            for key, scalar in nb.read_scalars(folder).items():
                walls = [w for s, w in zip(scalar.steps, scalar.wall_times) if s >= first_own]
                if not walls:          # a fork's eval or system scalar copied whole
                    continue
                assert start - 1 <= min(walls) and max(walls) <= end + 1, (name, key)
            if name == "lr6e-4-long":          # session 1 logs from its own start on
                second = epoch(doc["sessions"][1]["start_time"])
                assert second - epoch(doc["sessions"][0]["start_time"]) > 6 * 3600
                loss = nb.read_scalars(folder)["train/loss"]
                assert all(w >= second - 1 for s, w in zip(loss.steps, loss.wall_times)
                           if s >= 1500)
    lost, _ = runs(root, LLM)["wide-d2048"]
    last = max(nb.read_scalars(lost)["train/loss"].wall_times)
    assert 0 <= (lost / "heartbeat").stat().st_mtime - last < 600


def test_the_resumed_run_has_two_sessions_and_restarts_from_an_earlier_step(demo):
    root, _ = demo
    folder, doc = runs(root, LLM)["lr6e-4-long"]
    assert [s["session"] for s in doc["sessions"]] == [0, 1]
    assert (folder / "events.r0.s0.log").is_file() and (folder / "events.r0.s1.log").is_file()
    assert "[nuboard: session 1, " in (folder / "files" / "output.log").read_text()
    steps = list(nb.read_scalars(folder)["train/loss"].steps)
    assert steps == list(range(3000))      # session 0's steps 1500-1800 hidden by session 1


def test_the_fork_has_its_parent_and_a_lower_learning_rate(demo):
    root, _ = demo
    by_name = runs(root, LLM)
    folder, doc = by_name["lr1e-3-s1-halflr"]
    parent_folder, parent = by_name["lr1e-3-s1"]
    assert doc["parent"]["run_id"] == parent["id"] and doc["parent"]["step"] == 1500
    mine = nb.read_scalars(folder, ["train/lr"])["train/lr"]
    theirs = nb.read_scalars(parent_folder, ["train/lr"])["train/lr"]
    assert list(mine.steps) == list(range(3000))
    assert mine.values[1000] == theirs.values[1000]
    assert mine.values[2000] == pytest.approx(theirs.values[2000] / 2)


def test_runs_with_two_ranks_have_each_ranks_own_log(demo):
    root, _ = demo
    for name in ("ddp-lr1e-3-bs128", "ddp-lr2e-3-bs128"):
        folder, doc = runs(root, LLM)[name]
        assert doc["world_size"] == 2 and doc["status"] == "finished"
        assert sorted(p.name for p in folder.glob("events.*")) == ["events.r0.s0.log",
                                                                   "events.r1.s0.log"]
        rank1 = nb.read_scalars(folder, rank=1)
        assert len(rank1["train/loss"]) == 3000
        assert not [k for k in rank1 if k.startswith("system/")]   # only LOCAL_RANK 0 samples


def test_training_runs_have_curves_system_metrics_timers_and_a_console(demo):
    root, _ = demo
    finals = {}
    for name in ("lr1e-4-s1", "lr1e-3-s1"):
        folder, _ = runs(root, LLM)[name]
        scalars = nb.read_scalars(folder)
        loss = scalars["train/loss"]
        assert len(loss) == 3000 and loss.values[0] > 10 and loss.values[-1] < 5
        assert len(scalars["eval/accuracy"]) >= 10 and len(scalars["train/tokens_per_s"]) == 3000
        assert len(scalars["system/cpu/percent"]) >= 3 and "system/memory/used_gb" in scalars
        assert len(scalars["timing/eval"]) >= 10
        finals[name] = scalars["eval/loss"].values[-1]
        console = (folder / "files" / "output.log").read_bytes()
        assert b"\r" in console and b"\x1b[" in console and b"config:" in console
        assert b"done" in console
    assert finals["lr1e-3-s1"] < finals["lr1e-4-s1"] - 0.3


def test_model_v1_is_a_checkpoint_and_the_eval_run_uses_it(demo):
    root, _ = demo
    by_name = runs(root, LLM)
    model = nb.get_artifact("llm-pretrain/model:v1", dir=root)
    assert model.type == "checkpoint" and model.storage == "copy"
    assert model.metadata["step"] == 3000
    assert model.producer == {"project": LLM, "run_id": by_name["lr1e-3-s1"][1]["id"]}
    folder, doc = by_name["eval-mmlu"]
    assert inputs(doc) == [(LLM, "model", 1)]
    assert 0.2 < nb.read_scalars(folder)["eval/mmlu/average"].values[-1] < 0.5


def test_vit_runs_use_imagenet_v1(demo):
    root, _ = demo
    vit = runs(root, "vit-ablations")
    assert {n: inputs(d) for n, (_, d) in vit.items()} == {
        n: [("datasets", "imagenet-100", 1)] for n in vit}
    assert all(d["status"] == "finished" for _, d in vit.values())


def test_a_second_demo_changes_nothing(demo):
    root, _ = demo
    before = snapshot(root)
    proc = cli("demo", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "already" in proc.stdout and f"nuboard up {root}" in proc.stdout
    again = write_demo(root, progress=lambda line: None)
    assert not again.written and again.runs == read_demo(root).runs
    assert snapshot(root) == before


def test_a_folder_with_a_project_of_the_demo_is_refused(tmp_path):
    root = tmp_path / "experiments"
    (root / "llm-pretrain" / "runs").mkdir(parents=True)
    before = snapshot(root), sorted(p.name for p in root.iterdir())
    proc = cli("demo", str(root))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "llm-pretrain" in lines[0] and "Traceback" not in proc.stderr
    assert (snapshot(root), sorted(p.name for p in root.iterdir())) == before


@pytest.mark.parametrize("taken", ["datasets", "vit-ablations", ".demo-data"])
def test_every_folder_of_the_demo_is_checked_first(tmp_path, taken):
    (tmp_path / taken).mkdir()
    with pytest.raises(DemoConflictError, match=re.escape(str(tmp_path / taken))):
        write_demo(tmp_path, progress=lambda line: None)
    assert [p.name for p in tmp_path.iterdir()] == [taken]


def test_a_run_that_fails_unexpectedly_is_named_in_one_error(tmp_path):
    spec = RunSpec(LLM, "no-such-run", "train", {})
    pool = Pool(tmp_path / "experiments", tmp_path, limit=2, progress=lambda line: None)
    with pytest.raises(DemoFailedError, match="no-such-run.*exited with 1"):
        pool.run([Task(spec.key, spec, ())])


def test_live_logs_until_sigint_then_finishes(demo, tmp_path):
    root = tmp_path / "experiments"
    shutil.copytree(demo[0], root, symlinks=True)
    out = tmp_path / "live.out"
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "demo", str(root),
                                 "--live"], env=child_env(), stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT)
    try:
        run_id = None
        deadline = time.monotonic() + 60
        while run_id is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"Live run live-lr3e-4 \((\S+)\)", out.read_text())
            run_id = found.group(1) if found else None
            time.sleep(0.1)
        assert run_id, out.read_text()[-2000:]
        folder = root / LLM / "runs" / run_id
        counts = []
        while len(counts) < 2 or counts[-1] <= counts[0]:
            assert time.monotonic() < deadline, out.read_text()[-2000:]
            time.sleep(0.6)
            scalars = nb.read_scalars(folder)
            counts.append(len(scalars["train/loss"]) if "train/loss" in scalars else 0)
        assert nb.run_status(folder) == "running"
        assert json.loads((folder / "run.json").read_text())["tags"] == ["live"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, out.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert nb.run_status(folder) == "finished"
    assert len(nb.read_scalars(folder)["train/loss"]) >= counts[-1]
    assert "already" in out.read_text()
    assert b"\r" in (folder / "files" / "output.log").read_bytes()
