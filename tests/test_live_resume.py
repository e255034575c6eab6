"""A live run is never resumed by a stranger: resume='auto'/'must' of a run that another live
process writes raises RunExistsError naming that process; a finished, crashed, killed or lost
run is resumed, and the ranks of one launch still join one run. Real processes throughout."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest
from helpers import QUIET_ARGS, run_child, start_child

import nuboard as nb
from nuboard.files.status import hostname

HOLDER = """
import os, time, nuboard as nb
run = nb.init("p", run_id="job", resume="auto", config={"who": "first"}, flush_interval=0.05,
              QUIET_ARGS)
for step in range(10):
    run.add_scalar("loss", float(step), step=step)
run.flush()
print(run.session, flush=True)
while not os.path.exists(os.environ["NB_RELEASE"]):
    time.sleep(0.02)
run.finish()
""".replace("QUIET_ARGS", QUIET_ARGS)

STRANGER = """
import os, nuboard as nb
run = nb.init("p", run_id="job", resume=os.environ["NB_RESUME"], config={"who": "second"},
              QUIET_ARGS)
run.add_scalar("loss", -1.0, step=0)
run.finish()
print(run.session)
""".replace("QUIET_ARGS", QUIET_ARGS)


def hold(root, tmp_path, **env):
    """A child that starts (or resumes) run 'job', logs loss 0..9 and keeps it live until the
    release file exists: (process, release file, its session)."""
    release = tmp_path / f"release-{time.monotonic_ns()}"
    proc = start_child(HOLDER, NUBOARD_DIR=str(root), NB_RELEASE=str(release), **env)
    line = proc.stdout.readline()
    assert line.strip().isdigit(), line + proc.stderr.read()
    return proc, release, int(line)


def release(proc, path) -> None:
    path.touch()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def stranger(root, resume: str = "auto", **env):
    return run_child(STRANGER, check=False, NUBOARD_DIR=str(root), NB_RESUME=resume, **env)


def run_doc(root) -> dict:
    return json.loads((root / "p" / "runs" / "job" / "run.json").read_text())


@pytest.mark.parametrize("resume", ["auto", "must"])
def test_a_live_run_is_not_resumed_by_another_process_and_keeps_its_points(root, tmp_path, resume):
    proc, path, _ = hold(root, tmp_path)
    try:
        second = stranger(root, resume)
        assert second.returncode == 1, second.stdout + second.stderr
        error = second.stderr.strip().splitlines()[-1]
        assert error.startswith("nuboard.errors.RunExistsError: Run 'job' in project 'p'"), error
        assert f"pid {proc.pid} on host {hostname()!r}" in error, error
        doc = run_doc(root)                      # nothing of the stranger was written
        assert doc["config"] == {"who": "first"} and doc["status"] == "running"
        assert [(s["session"], s["pid"]) for s in doc["sessions"]] == [(0, proc.pid)]
        assert not (root / "p" / "runs" / "job" / "events.r0.s1.log").exists()
    finally:
        release(proc, path)
    folder = root / "p" / "runs" / "job"
    assert nb.read_scalars(folder)["loss"].values.tolist() == [float(s) for s in range(10)]
    again = stranger(root, resume)               # finished: now it can be resumed
    assert again.returncode == 0 and again.stdout.split() == ["1"], again.stderr
    assert run_doc(root)["config"] == {"who": "second"}


def test_a_run_whose_process_died_or_crashed_is_resumed_at_once(root, tmp_path):
    """SIGKILL leaves the run 'running' with a fresh heartbeat: its pid, dead on this host,
    says it is free. A crash marks it 'crashed'."""
    proc, _, _ = hold(root, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert run_doc(root)["status"] == "running"
    second = stranger(root)
    assert second.returncode == 0 and second.stdout.split() == ["1"], second.stderr
    crash = run_child('import nuboard as nb\nrun = nb.init("p", run_id="job", resume="must", '
                      + QUIET_ARGS + ')\nraise RuntimeError("boom")', check=False,
                      NUBOARD_DIR=str(root))
    assert crash.returncode == 1 and run_doc(root)["status"] == "crashed"
    third = stranger(root, "must")
    assert third.returncode == 0 and third.stdout.split() == ["3"], third.stderr


def test_a_run_on_another_host_is_live_while_its_heartbeat_is_fresh_then_lost(root, tmp_path):
    """The writer on another host cannot be asked: a fresh heartbeat says live, one older than
    the lost-after time says lost, and a lost run is resumed."""
    proc, _, _ = hold(root, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    folder = root / "p" / "runs" / "job"
    doc = run_doc(root)                          # as the writer on gpu-node-7 had left them
    doc["sessions"][-1]["host"] = doc["host"] = "gpu-node-7"
    (folder / "run.json").write_text(json.dumps(doc))
    beat = json.loads((folder / "heartbeat").read_text())
    beat["host"] = "gpu-node-7"
    (folder / "heartbeat").write_text(json.dumps(beat))
    second = stranger(root)
    assert second.returncode == 1, second.stdout + second.stderr
    assert f"pid {proc.pid} on host 'gpu-node-7'" in second.stderr and "heartbeat" in second.stderr
    old = time.time() - 600                      # silent for ten minutes: lost
    os.utime(folder / "heartbeat", (old, old))
    doc["sessions"][-1]["start_time"] = "2020-01-01T00:00:00.000Z"
    (folder / "run.json").write_text(json.dumps(doc))
    again = stranger(root)
    assert again.returncode == 0 and again.stdout.split() == ["1"], again.stderr


def test_a_live_rank_is_not_joined_by_a_stranger_of_that_rank_but_its_launch_joins(root, tmp_path):
    """Ranks other than 0 keep no heartbeat: their newest log's process answers, on this host."""
    ranks = dict(WORLD_SIZE="2", LOCAL_RANK="0")
    proc, path, _ = hold(root, tmp_path, RANK="1", **ranks)
    try:
        second = stranger(root, RANK="1", **ranks)
        assert second.returncode == 1, second.stdout + second.stderr
        assert f"pid {proc.pid} on host {hostname()!r}, rank 1" in second.stderr, second.stderr
        assert sorted(p.name for p in (root / "p" / "runs" / "job").glob("events.*")) == \
            ["events.r1.s0.log"]
        rank0 = stranger(root, RANK="0", **ranks)                 # its own launch's rank 0
        assert rank0.returncode == 0 and rank0.stdout.split() == ["0"], rank0.stderr
    finally:
        release(proc, path)
    assert nb.read_scalars(root / "p" / "runs" / "job", rank=1)["loss"].values.tolist() == \
        [float(s) for s in range(10)]
