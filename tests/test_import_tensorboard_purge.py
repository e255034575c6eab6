"""`nuboard import tensorboard` of restarted jobs: the points TensorBoard shows, no more.

A job restarted with torch's `purge_step`, a job resumed in a new event file without it, a
step that goes back inside one file (tensorboardX), and a script logging every point at step 0:
each imported through the CLI, and nb.history / nb.media compared point for point with what
TensorBoard's own data server (the loader `tensorboard --logdir` uses) serves for the same
folder; a second import adds nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers import run_child, run_cli

import nuboard as nb

pytest.importorskip("tensorboard")
pytest.importorskip("tensorboardX")
pytest.importorskip("torch")
data_server = pytest.importorskip("tensorboard_data_server")

WRITE_LOGS = """
    import time
    import numpy as np
    import tensorboardX
    from torch.utils.tensorboard import SummaryWriter
    logdir = {logdir!r}
    w = SummaryWriter(logdir + "/purged")                 # 150 steps, then a crash
    for step in range(150):
        w.add_scalar("train/loss", 1.0 / (step + 1), step)
        if step % 10 == 0:
            w.add_scalar("eval/acc", step / 200, step)
    w.add_image("samples", np.zeros((3, 4, 4)), 20)
    w.add_image("samples", np.zeros((3, 4, 4)), 120)
    w.close()
    time.sleep(1.1)                                       # a new file name (its second)
    w = SummaryWriter(logdir + "/purged", purge_step=100)  # restarted from the step-100 checkpoint
    for step in range(100, 150):
        w.add_scalar("train/loss", 2.0 + step, step)       # 200 points written, 150 shown
    w.add_image("samples", np.ones((3, 8, 8)), 120)
    w.close()
    w = SummaryWriter(logdir + "/resumed")                 # resumed without purge_step
    for step in range(100):
        w.add_scalar("train/loss", step * 0.5, step)
    w.close()
    time.sleep(1.1)
    w = SummaryWriter(logdir + "/resumed")
    for step in range(80, 120):
        w.add_scalar("train/loss", -step * 0.5, step)
    w.close()
    x = tensorboardX.SummaryWriter(logdir + "/backward")   # one file, a step that goes back
    for step in range(100):
        x.add_scalar("train/loss", step * 0.25, step, walltime=1.7e9 + step)
        x.add_scalar("train/lr", 0.1, step, walltime=1.7e9 + step)
    for step in range(60, 80):
        x.add_scalar("train/loss", 100.0 + step, step, walltime=1.7e9 + 100 + step)
    x.close()
    w = SummaryWriter(logdir + "/step0")                   # no global_step: every point at 0
    for i in range(150):
        w.add_scalar("loss", float(i))
    w.close()
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tb") / "logs"
    run_child(WRITE_LOGS.format(logdir=str(folder)))
    return folder


@pytest.fixture(scope="module")
def shown(logdir) -> dict:
    """{(folder, tag): [(step, wall time, value)]} of the scalars, and
    {(folder, tag, "image"): [(step, wall time, width)]} of the images, as TensorBoard's data
    server serves them."""
    return served(logdir)


@pytest.fixture(scope="module")
def imported(tmp_path_factory, logdir) -> tuple[Path, object, object]:
    """The root the log dir was imported into once, and the CLI's two answers (import, again)."""
    root = tmp_path_factory.mktemp("root")
    first = run_cli(root, "import", "tensorboard", str(logdir), "--project", "tb")
    again = run_cli(root, "import", "tensorboard", str(logdir), "--project", "tb")
    return root, first, again


def served(logdir: Path) -> dict:
    """What TensorBoard's data server (tensorboard_data_server, run by `tensorboard --logdir`)
    serves for logdir, read through TensorBoard's own gRPC data provider."""
    import grpc
    from tensorboard import context
    from tensorboard.data import grpc_provider
    from tensorboard.data.proto import data_provider_pb2_grpc
    port_file = logdir.parent / "port"
    server = subprocess.Popen(
        [data_server.server_binary(), f"--logdir={logdir}", "--reload=once",
         "--samples-per-plugin=scalars=all,images=all", "--port=0", f"--port-file={port_file}",
         "--die-after-stdin"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().endswith("\n")):
            assert time.monotonic() < deadline and server.poll() is None, "no data server"
            time.sleep(0.02)
        address = f"localhost:{int(port_file.read_text())}"
        stub = data_provider_pb2_grpc.TensorBoardDataProviderStub(grpc.insecure_channel(address))
        provider = grpc_provider.GrpcDataProvider(address, stub)
        ctx = context.RequestContext()
        before = None
        while True:                 # until two reads agree: the server loads as it serves
            now = _read(provider, ctx)
            if now and now == before:
                return now
            assert time.monotonic() < deadline, "the data server never settled"
            before = now
            time.sleep(0.1)
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def _read(provider, ctx) -> dict:
    scalars = provider.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=10**6)
    out = {(run, tag): [(d.step, d.wall_time, d.value) for d in points]
           for run, tags in scalars.items() for tag, points in tags.items()}
    images = provider.read_blob_sequences(ctx, experiment_id="", plugin_name="images",
                                          downsample=10**6)
    for run, tags in images.items():
        for tag, points in tags.items():
            out[(run, tag, "image")] = [
                (d.step, d.wall_time, int(provider.read_blob(ctx, blob_key=d.values[0].blob_key)))
                for d in points]
    return out


def history(root: Path) -> dict:
    """{(source folder, key): [(step, wall time, value)]} of the project, by nb.history."""
    runs = {}
    for folder in (root / "tb" / "runs").iterdir():
        runs[folder.name] = json.loads((folder / "run.json").read_text())["source"]["key"]
    out: dict = {}
    for row in nb.history("tb", dir=root).to_pylist():
        out.setdefault((runs[row["run_id"]], row["key"]), []).append(
            (row["step"], row["wall_time"], row["value"]))
    for row in nb.media("tb", dir=root).to_pylist():
        out.setdefault((runs[row["run_id"]], row["key"], "image"), []).append(
            (row["step"], row["wall_time"], row["width"]))
    return {key: sorted(points) for key, points in out.items()}


def test_tensorboard_shows_what_restarts_left(logdir, shown):
    """The logs purge as the issue says: 200 loss points written, TensorBoard shows 150."""
    assert [p[2] for p in shown[("purged", "train/loss")][99:101]] == [0.009999999776482582, 102.0]
    assert len(shown[("purged", "train/loss")]) == 150
    assert len(shown[("purged", "eval/acc")]) == 15            # not logged again: all kept
    assert [(s, w) for s, _, w in shown[("purged", "samples", "image")]] == [(20, 4), (120, 8)]
    assert len(shown[("resumed", "train/loss")]) == 120
    assert len(shown[("backward", "train/loss")]) == 80 and len(shown[("backward", "train/lr")]) == 100
    assert [p[2] for p in shown[("step0", "loss")]] == [149.0]
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator
    legacy = EventAccumulator(str(logdir / "purged"), size_guidance={SCALARS: 0})  # purge_step:
    legacy.Reload()                                 # its Python loader agrees on the loss
    assert [(e.step, e.wall_time, e.value) for e in legacy.Scalars("train/loss")] == \
        shown[("purged", "train/loss")]


def test_import_gives_tensorboards_points(imported, shown):
    root, first, _ = imported
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Imported 4 runs (")
    assert history(root) == {key: sorted(points) for key, points in shown.items()}
    notes = first.stderr
    assert ("purged: 51 points TensorBoard does not show (logged again at a step, or after a "
            "step that went back, as by a restart) kept in 1 earlier session") in notes
    assert "backward: 40 points TensorBoard does not show" in notes
    assert ("step0: 149 points TensorBoard does not show left out: its files and steps that "
            "went back or repeated make 150 sessions, more than the 100") in notes


def test_each_restart_is_a_session(imported, logdir):
    """The run of a restarted job is a resumed run: one session per event file (their start
    times), one more where a step went back; the hidden points are still in their logs."""
    root, _, _ = imported
    docs = {}
    for folder in (root / "tb" / "runs").iterdir():
        doc = json.loads((folder / "run.json").read_text())
        docs[doc["source"]["key"]] = (folder, doc)
    folder, doc = docs["purged"]
    files = sorted(os.listdir(logdir / "purged"))
    assert doc["source"]["files"] == files and len(files) == 2
    assert [s["session"] for s in doc["sessions"]] == [0, 1]
    assert doc["sessions"][1]["start_time"] > doc["sessions"][0]["start_time"] == doc["start_time"]
    assert doc["status"] == "finished"
    every = nb.RunReader(folder)
    every.refresh()
    assert [p.first_wall is not None for p in every.sessions()] == [True, True]
    assert len(nb.read_scalars(folder)["train/loss"]) == 150
    assert [s["session"] for s in docs["backward"][1]["sessions"]] == [0, 1]
    assert [s["session"] for s in docs["step0"][1]["sessions"]] == [0]


def test_a_second_import_adds_nothing(imported):
    root, first, again = imported
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Nothing to import ") and "its 4 runs are already imported" in again.stdout
    assert len(list((root / "tb" / "runs").iterdir())) == 4
