"""nb.init(sync_to=URL): a training process that pushes its run to a real S3 server (moto) from
a background thread, SIGKILLed mid-training; what reached the bucket, pulled on another "node",
read there and resumed there; and a store that is down, which never fails the training."""
from __future__ import annotations

import csv
import io
import json
import signal
import time
import warnings

import pytest
from helpers import QUIET, QUIET_ARGS, run_child, run_cli, start_child, wait_for
from helpers_http import AppViewer
from helpers_s3 import closed_port

import nuboard as nb
from nuboard.eventlog.complete import complete_length

TRAIN = """
    import time, nuboard as nb
    run = nb.init("llm", sync_to={url!r}, sync_interval=0.2, flush_interval=0.05, {quiet})
    print(run.id, flush=True)
    step = 0
    while True:
        run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
        step += 1
        time.sleep(0.002)
"""


def test_killed_run_in_the_bucket_is_a_prefix_read_and_resumed_elsewhere(s3_env, tmp_path):
    node1, node2, node3 = (tmp_path / name for name in ("node1", "node2", "node3"))
    url = s3_env.bucket() + "/exp"
    bucket, prefix = url[len("s3://"):].split("/", 1)
    child = start_child(TRAIN.format(url=url, quiet=QUIET_ARGS), NUBOARD_DIR=str(node1))
    try:
        run_id = child.stdout.readline().strip()
        assert run_id, child.stderr.read()
        log_key = f"{prefix}/llm/runs/{run_id}/events.r0.s0.log"
        # two pushes of a growing log have reached the bucket: the run is mid-training
        first = wait_for(lambda: s3_env.keys(url).get(log_key, 0) > 100 and s3_env.keys(url)[log_key],
                         "a first push")
        wait_for(lambda: s3_env.keys(url).get(log_key, 0) > first, "a later push")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()

    in_bucket = s3_env.client().get_object(Bucket=bucket, Key=log_key)["Body"].read()
    flushed = (node1 / "llm" / "runs" / run_id / "events.r0.s0.log").read_bytes()
    assert flushed.startswith(in_bucket) and len(in_bucket) > 100
    assert complete_length(in_bucket) == len(in_bucket)          # ends on a record boundary

    pulled = run_cli(node2, "sync", "pull", url)
    assert pulled.returncode == 0, pulled.stderr
    folder = node2 / "llm" / "runs" / run_id
    assert (folder / "events.r0.s0.log").read_bytes() == in_bucket
    steps = list(nb.read_scalars(folder, "train/loss")["train/loss"].steps)
    assert steps == list(range(len(steps))) and len(steps) > 1
    listed = json.loads(run_cli(node2, "ls", "llm", "--json").stdout)
    assert [row["id"] for row in listed] == [run_id]
    with AppViewer(node2) as viewer:
        reply = viewer.get(f"/p/llm/.chart.csv?name=train/loss&runs={run_id}")
        assert reply.status == 200
        rows = list(csv.DictReader(io.StringIO(reply.text)))
        assert [int(row["step"]) for row in rows] == steps

    with nb.init("llm", dir=node2, run_id=run_id, resume="must", sync_to=url, **QUIET) as run:
        for step in range(steps[-1] + 1, steps[-1] + 11):
            run.add_scalar("train/loss", 0.0, step=step)
    keys = s3_env.keys(url)
    assert f"{prefix}/llm/runs/{run_id}/events.r0.s1.log" in keys
    record = json.loads(s3_env.client().get_object(
        Bucket=bucket, Key=f"{prefix}/llm/runs/{run_id}/run.json")["Body"].read())
    assert record["status"] == "finished" and len(record["sessions"]) == 2
    assert run_cli(node3, "sync", "pull", url).returncode == 0
    both = list(nb.read_scalars(node3 / "llm" / "runs" / run_id, "train/loss")["train/loss"].steps)
    assert both == list(range(steps[-1] + 11))


def test_a_run_left_open_reaches_the_bucket_finished_at_exit(s3_env, tmp_path):
    """A script that never calls finish: the last push, made while the interpreter shuts down
    (when thread pools refuse work), still sends the finished run."""
    url = s3_env.bucket() + "/exp"
    done = run_child(f"""
        import nuboard as nb
        run = nb.init("llm", sync_to={url!r}, sync_interval=60, {QUIET_ARGS})
        for step in range(5):
            run.add_scalar("train/loss", 1.0, step=step)
        print(run.id)
    """, NUBOARD_DIR=str(tmp_path))
    run_id = done.stdout.strip()
    assert "cannot push" not in done.stderr, done.stderr
    bucket, prefix = url[len("s3://"):].split("/", 1)
    record = json.loads(s3_env.client().get_object(
        Bucket=bucket, Key=f"{prefix}/llm/runs/{run_id}/run.json")["Body"].read())
    assert record["status"] == "finished"
    assert f"{prefix}/llm/runs/{run_id}/events.r0.s0.log" in s3_env.keys(url)


def test_a_store_that_is_down_is_one_warning_and_the_run_finishes(tmp_path, monkeypatch, s3):
    """Nothing listens at the endpoint: one RuntimeWarning naming the run and the URL, the
    pushes retried at each interval, and the run finishes as usual."""
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    with closed_port() as port:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("NUBOARD_SYNC_TO", "s3://nowhere/exp")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with nb.init("llm", dir=tmp_path, sync_interval=0.05, **QUIET) as run:
                sync = run._sync
                for step in range(30):
                    run.add_scalar("train/loss", 1.0, step=step)
                    time.sleep(0.01)
                wait_for(lambda: sync.failing and sync.pushes == 0, "a few failed pushes")
    said = [str(w.message) for w in caught if "cannot push" in str(w.message)]
    assert len(said) == 1, said
    assert f"run llm/{run.id} to s3://nowhere/exp" in said[0] and "cannot be reached" in said[0]
    assert nb.read_scalars(run.folder)["train/loss"].steps[-1] == 29
    assert json.loads((run.folder / "run.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("value, error", [("runs/elsewhere", ValueError), (3, TypeError)])
def test_sync_to_that_is_no_url_is_refused_before_anything_is_written(tmp_path, value, error):
    with pytest.raises(error, match="sync_to"):
        nb.init("llm", dir=tmp_path, sync_to=value, **QUIET)
    assert not (tmp_path / "llm").exists()
