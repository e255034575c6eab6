"""`nuboard sync push/pull` against a real S3 server (moto, through s3fs): the mirror layout,
only what changed, no write when nothing did, data before the records that name it on both
sides when the connection is cut mid-way, a server killed, damaged and deleted objects, wrong
credentials, and a run of the same id that is another run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET, child_env, cli, killed_run, one_line_error, run_cli
from helpers_s3 import CutProxy, S3Server

import nuboard as nb
from nuboard.errors import StorageError
from nuboard.files.colours import set_colour
from nuboard.files.status import run_status
from nuboard.sync import SyncConflictError, pull, push


def make_source(root: Path, runs: int = 4) -> list[str]:
    """Finished runs with scalars and an image, one of them with a checksummed artifact
    version, and a colour (colours.json); their ids."""
    ids = []
    data = root.parent / "data"
    data.mkdir(exist_ok=True)
    (data / "a.bin").write_bytes(os.urandom(3000))
    (data / "b.txt").write_text("hello\n")
    for i in range(runs):
        with nb.init("llm", dir=root, run_name=f"r{i}", **QUIET) as run:
            for step in range(20):
                run.add_scalar("train/loss", 1.0 / (step + 1 + i), step=step)
            run.log({"sample": nb.Image(np.full((8, 8, 3), i * 20 % 256, dtype="uint8"))}, step=5)
            if i == 0:
                run.add_artifact("ds", data, type="dataset", checksum=True)
        ids.append(run.id)
    set_colour(root, "llm", ids[0], "#ff0000")
    return ids


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root that travels (no catalog, lock, temp or sync state: none of these
    runs has a dot file of its own), by relative path."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out[rel] = path.read_bytes()
    return out


def bucket_tree(s3, url: str) -> dict[str, bytes]:
    bucket, _, prefix = url[len("s3://"):].partition("/")
    client = s3.client()
    return {key[len(prefix) + 1:] if prefix else key:
            client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in s3.keys(url)}


@pytest.fixture
def no_retries(monkeypatch):
    """A dropped connection fails its request at once, not after the client's own retries
    (botocore's backoff is seconds per request, and not what these tests are about)."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setattr("nuboard.sync.work.WORKERS", 2)     # most units still to go at the cut


def writes(requests) -> list[tuple[str, str]]:
    return [(m, p) for m, p in requests() if m not in ("GET", "HEAD")]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("node1") / "experiments"
    return root, make_source(root)


@pytest.fixture(scope="module")
def twelve(tmp_path_factory):
    """Twelve runs, a version and a document: 14 units, enough to cut a push mid-way."""
    root = tmp_path_factory.mktemp("twelve") / "experiments"
    make_source(root, runs=12)
    return root


def test_push_pull_mirror_and_nothing_written_when_unchanged(s3_env, source, tmp_path):
    """The bucket mirrors the folder without catalogs, locks or temps; a pull gives the same
    files; a second push and a second pull are one listing each, no write, no object read."""
    root, ids = source
    url = s3_env.bucket() + "/exp"
    done = run_cli(root, "sync", "push", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"pushed {len(ids)} runs, 1 artifact version, 1 project document, ")
    assert f"to {url} in " in done.stdout
    in_bucket = bucket_tree(s3_env, url)
    assert in_bucket == tree(root)
    assert f"llm/runs/{ids[0]}/media/sample/5-0.png" in in_bucket
    assert "llm/artifacts/ds/v1/files/a.bin" in in_bucket and "llm/colours.json" in in_bucket

    with s3_env.counting() as requests:
        again = run_cli(root, "sync", "push", url, "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert (summary["files"], summary["writes"], summary["skipped"]) == (0, 0, len(ids) + 2)
    assert writes(requests) == [] and all("list-type=2" in p for _, p in requests()), requests()

    node2 = tmp_path / "node2"
    pulled = run_cli(node2, "sync", "pull", url)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"pulled {len(ids)} runs, 1 artifact version")
    assert tree(node2) == tree(root)
    with s3_env.counting() as requests:
        again = run_cli(node2, "sync", "pull", url)
    assert again.returncode == 0 and again.stdout.startswith("nothing to pull from s3://")
    assert requests() and all(m == "GET" and "list-type=2" in p for m, p in requests()), requests()
    steps = nb.read_scalars(node2 / "llm" / "runs" / ids[1], "train/loss")["train/loss"].steps
    assert list(steps) == list(range(20))


def test_only_what_changed_travels(s3_env, tmp_path):
    """A resumed run: its grown log, the new session's log and run.json are sent, nothing of
    the other runs; a pull elsewhere fetches just those."""
    root = tmp_path / "node1"
    ids = [write_two(root, i) for i in range(3)]
    url = s3_env.bucket()
    push(url, root)
    node2 = tmp_path / "node2"
    pull(url, node2)
    with nb.init("llm", dir=root, run_id=ids[1], resume="must", **QUIET) as run:
        run.add_scalar("train/loss", 0.1, step=10)
    with s3_env.counting() as requests:
        summary = push(url, root)
    sent = sorted(p.split("?")[0].split("/", 1)[1] for _, p in writes(requests))
    assert summary.runs == 1 and summary.skipped == 2
    assert all(f"llm/runs/{ids[1]}/" in p for p in sent), sent
    assert f"llm/runs/{ids[1]}/events.r0.s1.log" in sent and sent[-1] == f"llm/runs/{ids[1]}/run.json"
    summary = pull(url, node2)
    assert (summary.runs, summary.skipped) == (1, 2)
    assert list(nb.read_scalars(node2 / "llm" / "runs" / ids[1], "train/loss")["train/loss"].steps) \
        == [0, 1, 10]


def test_a_run_resumed_elsewhere_is_not_pushed_back_over(s3_env, tmp_path):
    """Node 2 pulled a run, resumed it and pushed it; node 1, which knows nothing of that (its
    sync state lost), pushes again: the bucket keeps node 2's run.json with both sessions."""
    one, two = tmp_path / "node1", tmp_path / "node2"
    run_id = write_two(one, 0)
    url = s3_env.bucket()
    push(url, one)
    pull(url, two)
    with nb.init("llm", dir=two, run_id=run_id, resume="must", **QUIET) as run:
        run.add_scalar("train/loss", 0.1, step=2)
    push(url, two)
    shutil.rmtree(one / ".nuboard-sync")
    push(url, one)
    record = json.loads(bucket_tree(s3_env, url)[f"llm/runs/{run_id}/run.json"])
    assert len(record["sessions"]) == 2
    pull(url, one)
    assert list(nb.read_scalars(one / "llm" / "runs" / run_id, "train/loss")["train/loss"].steps) == [0, 1, 2]


def write_two(root: Path, i: int) -> str:
    with nb.init("llm", dir=root, run_name=f"r{i}", **QUIET) as run:
        run.add_scalar("train/loss", 1.0, step=0)
        run.add_scalar("train/loss", 0.5, step=1)
    return run.id


def complete_runs_have_their_data(files: dict[str, bytes], local: dict[str, bytes]) -> int:
    """Check that every run.json in `files` (the bucket's or a mirror's) comes with every file
    of that run, and every manifest with every file of its version, as in `local`; the number
    of run.json files seen."""
    heads = [k for k in files if k.endswith("/run.json") or k.endswith("/manifest.json")]
    for head in heads:
        unit = head.rsplit("/", 1)[0] + "/"
        for rel, data in local.items():
            if rel.startswith(unit):
                assert files.get(rel) == data, f"{head} is there before {rel}"
    return sum(k.endswith("/run.json") for k in heads)


def test_push_cut_midway_leaves_no_record_before_its_data(s3, twelve, monkeypatch, no_retries):
    """The connection dropped mid-push: StorageError, one line; every run.json that reached
    the bucket has all its logs and media beside it (and the manifest its files); the next
    push finishes the job and the one after writes nothing."""
    root = twelve
    url = s3.bucket()
    with CutProxy(s3.port) as proxy:
        for key, value in s3.env_via(proxy.port).items():
            monkeypatch.setenv(key, value)

        def cut_after_three(done, total, what):
            if done == 3:
                proxy.cut()

        with pytest.raises(StorageError) as caught:
            push(url, root, progress=cut_after_three)
        assert "cannot be reached" in str(caught.value) and "\n" not in str(caught.value)
        local = tree(root)
        seen = complete_runs_have_their_data(bucket_tree(s3, url), local)
        assert 0 < seen < 12
        proxy.restore()
        summary = push(url, root)
        assert summary.runs == 12 - seen
        assert bucket_tree(s3, url) == local
        assert push(url, root).files == 0


def test_pull_cut_midway_a_reader_never_sees_a_run_before_its_data(s3, twelve, tmp_path, monkeypatch,
                                                                   no_retries):
    """While a pull runs, a reader of the folder finds every run.json with all its files; cut
    mid-way it stops with one line, leaves no temp file, and the next pull completes."""
    source = twelve
    url = s3.bucket()
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    push(url, source)
    local = tree(source)
    mirror = tmp_path / "mirror"
    with CutProxy(s3.port) as proxy:
        for key, value in s3.env_via(proxy.port).items():
            monkeypatch.setenv(key, value)

        def read_and_cut(done, total, what):
            if mirror.exists():
                complete_runs_have_their_data(tree(mirror), local)
            if done == 4:
                proxy.cut()

        with pytest.raises(StorageError) as caught:
            pull(url, mirror, progress=read_and_cut)
        assert "\n" not in str(caught.value)
        assert 0 < complete_runs_have_their_data(tree(mirror), local) < 12
        assert not [p for p in mirror.rglob(".tmp-*")]
        for folder in (mirror / "llm" / "runs").iterdir():     # no folder of a run not pulled
            assert (folder / "run.json").is_file(), sorted(folder.rglob("*"))
        proxy.restore()
        pull(url, mirror)
    assert tree(mirror) == local


def kill_when(command: list[str], env: dict, done: "callable", what: str) -> None:
    """Start `nuboard COMMAND` and SIGKILL it as soon as done() holds (polled every 10 ms); fail
    when it ended first, since then nothing was killed mid-way."""
    child = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", *command], env=child_env(**env),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not done():
        assert child.poll() is None, f"the {what} ended before it could be killed: {child.stderr.read()!r}"
        assert time.monotonic() < deadline, f"the {what} made no progress"
        time.sleep(0.01)
    child.kill()
    child.wait()
    child.stderr.close()


def test_push_and_pull_sigkilled_midway_are_finished_by_the_next(s3, twelve, tmp_path):
    """`nuboard sync push` SIGKILLed with part of the folder sent (over a slow link, so the kill
    lands mid-way): every run.json in the bucket has its data, and the next push finishes the
    job; the same for `nuboard sync pull` into a mirror: no run.json there before its data, and
    the next pull completes it (the killed pull's hidden .tmp- files are the catalog's sweep's)."""
    root = twelve
    url = s3.bucket()
    local = tree(root)
    with CutProxy(s3.port, delay=0.02) as slow:
        env = s3.env_via(slow.port)
        kill_when(["sync", "push", url, "--dir", str(root)], env,
                  lambda: len(s3.keys(url)) >= 12, "push")
        seen = complete_runs_have_their_data(bucket_tree(s3, url), local)
        assert seen < 12 and len(s3.keys(url)) < len(local)
        again = cli(root, "sync", "push", url, env=s3.env)
        assert again.returncode == 0, again.stderr
        assert bucket_tree(s3, url) == local

        mirror = tmp_path / "mirror"
        runs = mirror / "llm" / "runs"
        kill_when(["sync", "pull", url, "--dir", str(mirror)], env,
                  lambda: runs.is_dir() and len(list(runs.glob("*/run.json"))) >= 2, "pull")
        assert complete_runs_have_their_data(tree(mirror), local) < 12
    again = cli(mirror, "sync", "pull", url, env=s3.env)
    assert again.returncode == 0, again.stderr
    assert tree(mirror) == local


def test_server_killed_mid_push_and_wrong_credentials_are_one_line(twelve, tmp_path, monkeypatch,
                                                                   no_retries):
    """A server that dies mid-push, a server that is gone, and wrong keys: one line each, exit
    1 from the CLI."""
    root = twelve
    with S3Server() as server:
        url = server.bucket()
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)

        def kill_after_two(done, total, what):
            if done == 2:
                server.stop()

        with pytest.raises(StorageError) as caught:
            push(url, root, progress=kill_after_two)
        assert "\n" not in str(caught.value)
        gone = run_cli(root, "sync", "push", url, env=server.env)
    assert gone.returncode == 1
    assert "cannot be reached" in one_line_error(gone)

    with S3Server(auth=True) as guarded:
        url = guarded.bucket()
        wrong = dict(guarded.env, AWS_SECRET_ACCESS_KEY="not-the-secret")
        for command in ("push", "pull"):
            refused = run_cli(root if command == "push" else tmp_path / "node2", "sync", command,
                              url, env=wrong)
            assert refused.returncode == 1
            assert "access denied" in one_line_error(refused)
        assert guarded.keys(url) == {}
    assert not (tmp_path / "node2" / "llm").exists()


def test_damaged_objects_are_named_and_deleted_ones_fetched_again(s3_env, source, tmp_path):
    """A run.json, an event log and an artifact file damaged in the bucket: the pull names
    each, writes nothing of those, and pulls the rest; a file deleted here is fetched again and
    an object deleted in the bucket is sent again."""
    root, ids = source
    url = s3_env.bucket()
    push(url, root)
    bucket = url[len("s3://"):]
    client = s3_env.client()
    client.put_object(Bucket=bucket, Key=f"llm/runs/{ids[1]}/run.json", Body=b"{not json")
    client.put_object(Bucket=bucket, Key=f"llm/runs/{ids[2]}/events.r0.s0.log", Body=b"NBEV" + bytes(60))
    a_bin = client.get_object(Bucket=bucket, Key="llm/artifacts/ds/v1/files/a.bin")["Body"].read()
    client.put_object(Bucket=bucket, Key="llm/artifacts/ds/v1/files/a.bin", Body=bytes(len(a_bin)))
    for hostile in ("llm/runs/../../escape/run.json", "llm/.nuboard/llm.db", "llm/runs/.trash/x/run.json"):
        client.put_object(Bucket=bucket, Key=hostile, Body=b"{}")
    node2 = tmp_path / "node2"
    done = cli(node2, "sync", "pull", url)
    assert done.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node2"]
    assert not (node2 / "llm" / ".nuboard").exists() and not (node2 / "llm" / "runs" / ".trash").exists()
    err = one_line_error(done)
    for named in (f"run llm/{ids[1]}: its run.json", f"run llm/{ids[2]}: events.r0.s0.log",
                  "artifact llm/ds:v1: files/a.bin"):
        assert named in err, err
    runs = node2 / "llm" / "runs"
    assert not (runs / ids[1]).exists() and not (runs / ids[2]).exists()
    assert not (node2 / "llm" / "artifacts" / "ds").exists()
    assert (runs / ids[3] / "run.json").read_bytes() == (root / "llm/runs" / ids[3] / "run.json").read_bytes()

    image = f"llm/runs/{ids[3]}/media/sample/5-0.png"
    (node2 / image).unlink()
    client.delete_object(Bucket=bucket, Key=f"llm/runs/{ids[0]}/media/sample/5-0.png")
    again = cli(node2, "sync", "pull", url)
    assert again.returncode == 1 and (node2 / image).read_bytes() == (root / image).read_bytes()
    assert push(url, root).files >= 1
    assert f"llm/runs/{ids[0]}/media/sample/5-0.png" in s3_env.keys(url)


def test_a_run_of_the_same_id_that_is_another_run_is_refused(s3_env, tmp_path):
    """Two nodes made run 'exp1' each: a pull of the other's refuses it by name and leaves the
    local one as it was; a push of it over the other's is refused too."""
    url = s3_env.bucket()
    one, two = tmp_path / "node1", tmp_path / "node2"
    write_run_named(one, "exp1", 1.0)
    write_run_named(two, "exp1", 2.0)
    push(url, one)
    before = tree(two)
    done = cli(two, "sync", "pull", url)
    assert done.returncode == 1
    assert "run llm/exp1: the local run of this id is another run" in one_line_error(done)
    assert tree(two) == before
    with pytest.raises(SyncConflictError, match="run llm/exp1: the bucket holds another run"):
        push(url, two)


def write_run_named(root: Path, run_id: str, value: float) -> None:
    with nb.init("llm", dir=root, run_id=run_id, resume="auto", **QUIET) as run:
        run.add_scalar("train/loss", value, step=0)


def test_a_pulled_run_is_judged_lost_by_its_heartbeat_time(s3_env, tmp_path):
    """A run left 'running' (its process SIGKILLed) whose heartbeat last beat an hour ago is
    lost in the mirror at once, whatever the time it was fetched."""
    root = tmp_path / "node1"
    run_id = killed_run(root)
    heartbeat = root / "llm" / "runs" / run_id / "heartbeat"
    beat = json.loads(heartbeat.read_text())
    beat["time"] -= 3600
    heartbeat.write_text(json.dumps(beat))
    url = s3_env.bucket()
    push(url, root)
    node2 = tmp_path / "node2"
    pull(url, node2)
    assert run_status(node2 / "llm" / "runs" / run_id) == "lost"
    listed = run_cli(node2, "ls", "llm", "--json")
    assert json.loads(listed.stdout)[0]["status"] == "lost"
