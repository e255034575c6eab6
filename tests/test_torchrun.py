"""A real torchrun launch: two ranks train with gloo and land in one run, each in its own log."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from helpers import child_env

import nuboard as nb

torch = pytest.importorskip("torch")

TRAIN = """
import torch, torch.distributed as dist
import nuboard as nb

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 4), torch.randn(64, 1)
with nb.init("ddp", run_name="gloo", config={"lr": 0.1}, flush_interval=0.1,
             system_interval=0.2) as run:
    for step in range(20):
        with run.timer("step", all_ranks=True):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        run.add_scalar("train/loss", loss, step=step)
        run.add_scalar("rank", float(dist.get_rank()), step=step)
    with open(f"rank{dist.get_rank()}.id", "w") as fh:    # torchrun interleaves the ranks' stdout
        fh.write(run.id)
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_two_ranks_one_run(root, tmp_path):
    """torchrun --nproc_per_node=2: one run, both ranks' scalars, rank 0 owns run.json."""
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = child_env(NUBOARD_DIR=str(root), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          "--master_addr=127.0.0.1", f"--master_port={free_port()}", str(script)],
                         env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    ids = {(tmp_path / f"rank{rank}.id").read_text() for rank in (0, 1)}
    assert len(ids) == 1, ids
    folder = root / "ddp" / "runs" / ids.pop()
    assert sorted(p.name for p in folder.glob("events.*")) == ["events.r0.s0.log", "events.r1.s0.log"]
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "finished" and doc["world_size"] == 2
    assert doc["env"]["launcher"] == "torchrun"
    for rank in (0, 1):
        scalars = nb.read_scalars(folder, rank=rank)
        assert scalars["train/loss"].steps.tolist() == list(range(20))
        assert set(scalars["rank"].values.tolist()) == {float(rank)}
        assert len(scalars["timing/step"]) == 20
    # DDP keeps the ranks' models equal, so both ranks log the same losses.
    losses = [nb.read_scalars(folder, rank=r)["train/loss"].values.tolist() for r in (0, 1)]
    assert losses[0] == losses[1]
    assert (folder / "files" / "output.log").is_file()
