"""`nuboard import` of hostile sources: each run that cannot be read exactly is skipped with one line
naming it and the reason, the others are imported exactly, and nothing hangs.

The cases are those that stopped a whole import with a Python error naming no run (a wall time of
1e300, a string tensor, a folder name that is not UTF-8, an MLflow step of 2**70, a malformed
metric line) or hung it (a FIFO named like an event file, a metric file or a meta.yaml). The
import runs as the real program, in a child process with a timeout: a hang fails the test in
bounded time instead of blocking the suite.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import cli
from hostile_sources import (
    EVENT_FILE,
    event_file,
    read_run_points,
    same_points,
    scalar_event,
    string_tensor_event,
    vector_event,
    version_event,
    write_events,
    write_experiment,
    write_mlflow_run,
)

NO_HANG = 240        # seconds: far above an import of these sources on a loaded 2-core machine
GOOD = [("loss", i, 1.7e9 + i, 0.5 * i) for i in range(5)]


def good_file():
    return event_file([(version_event(), [])] + [(scalar_event(t, s, w, v), [(t, s, w, v)])
                                                 for t, s, w, v in GOOD])


def imported(root: Path, project: str) -> dict[str, tuple[Path, dict]]:
    """{source key: (run folder, run.json)} of a project's runs."""
    out = {}
    runs = root / project / "runs"
    for folder in sorted(runs.iterdir()) if runs.is_dir() else []:
        doc = json.loads((folder / "run.json").read_text())
        out[doc["source"]["key"]] = (folder, doc)
    return out


@pytest.fixture
def tb_logdir(tmp_path) -> Path:
    """Two good runs and one of each hostile kind of run folder."""
    logs = tmp_path / "logs"
    good = good_file()
    write_events(logs / "good", good.data)
    write_events(logs / "also/good", good.data)
    write_events(logs / "wall1e300", event_file([(scalar_event("loss", 0, 1e300, 1.0), [])]).data)
    write_events(logs / "nanwall", event_file([(scalar_event("loss", 0, 1.7e9, 1.0), []),
                                               (scalar_event("loss", 1, float("nan"), 2.0), [])]).data)
    write_events(logs / "strings", event_file([(string_tensor_event("acc", 0, 1.7e9), [])]).data)
    write_events(logs / "vector", event_file([(vector_event("acc", 0, 1.7e9), [])]).data)
    write_events(logs / os.fsdecode(b"caf\xe9"), good.data)                  # Latin-1, not UTF-8
    (logs / "fifo").mkdir()
    os.mkfifo(logs / "fifo" / EVENT_FILE)
    write_events(logs / "notanevent", event_file([(b"\xff\x00 not a protobuf", [])]).data)
    torn = good_file()
    write_events(logs / "torn", torn.data[:-7])                            # a killed writer's tail
    damaged = bytearray(good.data)
    damaged[good.ranges[3][0] + 14] ^= 0x40                                # inside record 3's data
    write_events(logs / "damaged", bytes(damaged))
    return logs


TB_SKIPS = {
    "wall1e300": "its start time 1e+300 (seconds since 1970) is not a date from 1970 to 9999",
    "nanwall": "wall_time nan must be seconds since the epoch",
    "strings": "scalar 'acc' at step 0 is a string tensor, not a number",
    "vector": "scalar 'acc' at step 0 is a tensor of shape [2], not one number",
    "caf\\xe9": "its folder name is not UTF-8",
    "fifo": f"its event file '{EVENT_FILE}' is a FIFO, not a regular file",
    "notanevent": "record 0 is not a TensorBoard event",
}


def test_tensorboard_skips_each_bad_run_by_name_and_imports_the_rest(root, tb_logdir):
    done = cli(root, "import", "tensorboard", str(tb_logdir), "--project", "tb", timeout=NO_HANG)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.strip() == (f"Imported 4 runs (16 points) from TensorBoard {tb_logdir} into tb; "
                                   "0 already imported; 7 could not be read and were skipped.")
    lines = done.stderr.splitlines()
    skips = [line for line in lines if ": skipped run " in line]
    assert len(skips) == len(TB_SKIPS), done.stderr
    for key, why in TB_SKIPS.items():
        [line] = [s for s in skips if s.startswith(f"nuboard import tensorboard: skipped run '{key}': ")]
        assert why in line, line
    notes = [line for line in lines if ": note: " in line]
    assert len(notes) == 2 and any(n.startswith("nuboard import tensorboard: note: torn: ") for n in notes)
    assert any("damaged: " in n and "fails its checksum" in n for n in notes), notes

    runs = imported(root, "tb")
    assert sorted(runs) == ["also/good", "damaged", "good", "torn"]
    expected = {"loss": [(s, w, v) for _, s, w, v in GOOD]}
    for key in ("good", "also/good"):
        assert same_points(read_run_points(runs[key][0], {}), expected), key
    assert same_points(read_run_points(runs["torn"][0], {}), {"loss": expected["loss"][:4]})
    assert same_points(read_run_points(runs["damaged"][0], {}), {"loss": expected["loss"][:2]})
    assert not list((root / ".nuboard-import").glob("*-*")), "a staging folder was left"

    again = cli(root, "import", "tensorboard", str(tb_logdir), "--project", "tb", "--json",
                timeout=NO_HANG)
    report = json.loads(again.stdout)
    assert again.returncode == 0 and report["written"] == [] and len(report["skipped"]) == 4
    assert sorted(u["key"] for u in report["unreadable"]) == sorted(TB_SKIPS)


def test_tensorboard_dry_run_names_what_it_can_tell_without_reading(root, tb_logdir):
    done = cli(root, "import", "tensorboard", str(tb_logdir), "--project", "tb", "--dry-run",
               "--json", timeout=NO_HANG)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {u["key"] for u in report["unreadable"]} == {"caf\\xe9", "fifo"}
    assert "fifo" not in report["pending"] and "good" in report["pending"]
    assert not (root / "tb").exists()


@pytest.fixture
def mlruns(tmp_path) -> tuple[Path, dict]:
    """An mlruns folder: good runs in two experiments, and one of each hostile kind."""
    store = tmp_path / "mlruns"
    sweep = write_experiment(store, "1", "sweep")
    lines = ["1700000000000 0.5 0", "1700000001000 0.25 1", "1700000002000 -1.5 2"]
    ids = {}

    def run(tag: str, metrics: dict, **kw) -> Path:
        ids[tag] = f"{tag:a<8.8}{len(ids):024x}"
        return write_mlflow_run(kw.pop("experiment", sweep), ids[tag], metrics, **kw)

    run("good", {"loss": lines, "eval/acc": ["1700000000000 1.0 3"]}, params={"lr": "0.1"})
    run("fields", {"loss": lines + ["1700000003000 0.1 4 extra"]})          # 4 fields
    run("notnum", {"loss": ["1700000000000 abc 0"]})
    run("huge", {"loss": [f"1700000000000 0.5 {2 ** 70}"]})                 # an MLflow step of 2**70
    run("latin", {"loss": lines}).joinpath("metrics", "loss").write_bytes(b"17 0.5 0 caf\xe9\n")
    os.mkfifo(run("fifo", {}) / "metrics" / "loss")
    run("future", {"loss": lines}, start=10 ** 30)
    run("badname", {"loss": lines}, folder_name=b"badname" + b"\xff" * 3)
    other = write_experiment(store, "2", "other")
    run("other", {"loss": lines[:1]}, experiment=other)
    stuck = store / "3"
    stuck.mkdir()
    os.mkfifo(stuck / "meta.yaml")                                          # a whole experiment
    return store, ids


ML_SKIPS = {
    "fields": "MLflow cannot read it: MlflowException: Metric 'loss' is malformed",
    "notnum": "MLflow cannot read it: ValueError: could not convert string to float: 'abc'",
    "huge": "metric 'loss': step 1180591620717411303424 is past 2**63-1",
    "latin": "MLflow cannot read it: UnicodeDecodeError: 'utf-8' codec can't decode",
    "fifo": "'metrics/loss' is a FIFO, not a regular file",
    "future": "its start time 1e+27 (seconds since 1970) is not a date",
}


def test_mlflow_skips_each_bad_run_by_name_and_imports_the_rest(root, mlruns):
    store, ids = mlruns
    done = cli(root, "import", "mlflow", str(store), "--project", "ml", timeout=NO_HANG)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.strip() == (f"Imported 2 runs (5 points) from MLflow {store} into ml; "
                                   "0 already imported; 8 could not be read and were skipped.")
    skips = [line for line in done.stderr.splitlines() if ": skipped " in line]
    assert len(skips) == 8, done.stderr
    for tag, why in ML_SKIPS.items():
        [line] = [s for s in skips if f"skipped run '{ids[tag]}': " in s]
        assert why in line, line
    assert any(s.startswith("nuboard import mlflow: skipped run 'badname\\xff\\xff\\xff': its folder "
                            "name is not UTF-8") for s in skips), skips
    assert "nuboard import mlflow: skipped experiment folder '3': 'meta.yaml' is a FIFO, not a " \
           "regular file" in skips

    runs = imported(root, "ml")
    assert sorted(runs) == sorted([ids["good"], ids["other"]])
    good = read_run_points(runs[ids["good"]][0], {})
    assert same_points(good, {"loss": [(0, 1.7e9, 0.5), (1, 1.7e9 + 1, 0.25), (2, 1.7e9 + 2, -1.5)],
                              "eval/acc": [(3, 1.7e9, 1.0)]})
    assert runs[ids["good"]][1]["config"] == {"lr": 0.1}
    assert same_points(read_run_points(runs[ids["other"]][0], {}), {"loss": [(0, 1.7e9, 0.5)]})
