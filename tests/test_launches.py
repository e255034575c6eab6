"""One run per launch under a plain torchrun, without run_id: real torchrun, gloo, two ranks.

A static rendezvous names every launch of a command alike (id 'none', the same master port),
so the launch file of an earlier launch is there when the next one starts. The next launch
makes a new run; only the agent's restart of a launch's workers resumes the launch's run.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys

import pytest
from helpers import child_env, run_child

import nuboard as nb

pytest.importorskip("torch")

# Each rank logs `loss` = 100 * launch number + 10 * attempt + rank at steps 0..4, and writes
# '<label>.r<rank>.a<attempt>' holding its run id and session. Launch 'dies' loses rank 1 in
# its first attempt, after both ranks logged: the agent restarts both.
TRAIN = """
import datetime, os, sys
import torch.distributed as dist
import nuboard as nb

label, number = sys.argv[1], int(sys.argv[2])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])
# The agent's store outlives a restart with the first attempt's gloo addresses in it: each
# attempt keeps its keys apart.
hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" and rank == 0
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), 2, hosts,
                      timeout=datetime.timedelta(seconds=120))
dist.init_process_group("gloo", store=dist.PrefixStore(f"attempt{attempt}", store), rank=rank,
                        world_size=2)
run = nb.init("ddp", run_name=label, config={"launch": label}, flush_interval=0.05,
              system_metrics=False, capture_console=False, capture_env=False)
for step in range(5):
    run.add_scalar("loss", 100.0 * number + 10.0 * attempt + rank, step=step)
run.flush()
dist.barrier()
if label == "dies" and attempt == 0:
    if rank == 1:
        os._exit(1)
    dist.barrier()                      # rank 1 is gone: gloo fails or the agent stops rank 0
run.finish()
with open(f"{label}.r{rank}.a{attempt}", "w") as fh:
    fh.write(f"{run.id} {run.session}")
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(tmp_path, root, port: int, label: str, number: int, *extra: str) -> None:
    """One `torchrun --nproc_per_node=2 --master_port=port train.py label number` to its end."""
    env = child_env(NUBOARD_DIR=str(root), OMP_NUM_THREADS="1")
    agent = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
         "--master_addr=127.0.0.1", f"--master_port={port}", *extra,
         str(tmp_path / "train.py"), label, str(number)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        start_new_session=True)            # the agent and its workers: one group to kill
    try:
        stdout, stderr = agent.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(agent.pid, signal.SIGKILL)     # never leave workers waiting in gloo
        stdout, stderr = agent.communicate()
        pytest.fail(f"torchrun {label} did not end within 240 s: {stdout[-2000:]}{stderr[-2000:]}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent.pid, signal.SIGKILL)   # a worker the agent left behind
    assert agent.returncode == 0, stdout[-3000:] + stderr[-3000:]


def outcome(tmp_path, label: str, attempt: int) -> tuple[str, int]:
    """(run id, session) that both ranks of one attempt of a launch wrote; they must agree."""
    seen = {(tmp_path / f"{label}.r{rank}.a{attempt}").read_text() for rank in (0, 1)}
    assert len(seen) == 1, seen
    run_id, session = seen.pop().split()
    return run_id, int(session)


def logs(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("events.*"))


def test_two_launches_on_one_port_make_two_runs_and_a_restart_resumes_its_own(root, tmp_path):
    """torchrun twice on the same port: two runs, the first one untouched; the second launch
    loses a worker once, and its agent's restart continues the second run as session 1."""
    (tmp_path / "train.py").write_text(TRAIN)
    port = free_port()
    torchrun(tmp_path, root, port, "first", 1)
    torchrun(tmp_path, root, port, "dies", 2, "--max-restarts=1", "--monitor-interval=0.1")

    first_id, first_session = outcome(tmp_path, "first", 0)
    second_id, second_session = outcome(tmp_path, "dies", 1)
    assert first_id != second_id and (first_session, second_session) == (0, 1)

    first = root / "ddp" / "runs" / first_id
    doc = json.loads((first / "run.json").read_text())
    assert (doc["name"], doc["config"], doc["status"]) == ("first", {"launch": "first"}, "finished")
    assert [s["session"] for s in doc["sessions"]] == [0]
    assert logs(first) == ["events.r0.s0.log", "events.r1.s0.log"]
    for rank in (0, 1):                       # nothing of the second launch hides its points
        loss = nb.read_scalars(first, rank=rank)["loss"]
        assert loss.steps.tolist() == list(range(5))
        assert loss.values.tolist() == [100.0 + rank] * 5

    second = root / "ddp" / "runs" / second_id
    doc = json.loads((second / "run.json").read_text())
    assert (doc["name"], doc["config"], doc["status"]) == ("dies", {"launch": "dies"}, "finished")
    assert [s["session"] for s in doc["sessions"]] == [0, 1]
    assert logs(second) == ["events.r0.s0.log", "events.r0.s1.log",
                            "events.r1.s0.log", "events.r1.s1.log"]
    for rank in (0, 1):                       # the restart's points hide its first attempt's
        loss = nb.read_scalars(second, rank=rank)["loss"]
        assert loss.values.tolist() == [200.0 + 10.0 + rank] * 5
    assert sorted(p.name for p in (root / "ddp" / "runs").iterdir()
                  if not p.name.startswith(".")) == sorted([first_id, second_id])


RANK0 = """
import nuboard as nb
run = nb.init("slurm", system_metrics=False, capture_console=False, capture_env=False)
run.finish()
print(run.id, run.session)
"""


def test_a_slurm_job_id_seen_again_starts_a_new_run_and_a_requeue_resumes(root):
    """SLURM ids come back (a counter that wraps, a reinstalled cluster): a job's rank 0 starts
    a new run unless SLURM says the job was requeued (SLURM_RESTART_COUNT above 0)."""
    env = dict(NUBOARD_DIR=str(root), SLURM_JOB_ID="77", SLURM_STEP_ID="0", SLURM_PROCID="0",
               SLURM_LOCALID="0", SLURM_NTASKS="2")
    first = run_child(RANK0, **env).stdout.split()
    second = run_child(RANK0, **env).stdout.split()
    assert first[0] != second[0] and first[1] == second[1] == "0"
    requeued = run_child(RANK0, SLURM_RESTART_COUNT="1", **env).stdout.split()
    assert requeued == [second[0], "1"]
