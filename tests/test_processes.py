"""Processes, ranks, clocks and hostile input: rows 7, 8, 13 and 14 of shared/reliability.md.

Row 7: fork() after nb.init (a bare os.fork, multiprocessing "fork" workers).
Row 8: many writers (64 ranks, two sessions; runs claimed at the same moment).
Row 13: clock skew (ranks an hour apart, a clock stepping back; "lost" from the heartbeat).
Row 14: huge or malformed input (names, tags, NaN/Inf, bad UTF-8, deep configs, bad records).

Everything runs on real files; forks and ranks run in real child processes, with timeouts,
so a broken fork cannot hang pytest.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import QUIET, QUIET_ARGS, child_env

import nuboard as nb
from nuboard.eventlog import logfile
from nuboard.eventlog.logfile import LogReader
from nuboard.eventlog.reader import RunReader
from nuboard.recording import run as run_module

BAD_UTF8 = b"\xff".decode("utf-8", "surrogateescape")      # '\udcff': a lone surrogate


# -- helpers ------------------------------------------------------------------------------
def read_doc(path) -> dict:
    """run.json, parsed strictly: UTF-8, and no NaN or Infinity tokens."""
    def no_constants(token):
        raise AssertionError(f"run.json holds the non-JSON token {token}")
    return json.loads((Path(path) / "run.json").read_bytes().decode("utf-8"),
                      parse_constant=no_constants)


def points(path, name, rank=0) -> list[tuple[int, float, float]]:
    """(step, wall_time, value) of one scalar, via nb.read_scalars (data.parquet when current)."""
    s = nb.read_scalars(path, rank=rank)[name]
    return list(zip(s.steps.tolist(), s.wall_times.tolist(), s.values.tolist()))


def log_points(path, name, rank=0) -> list[tuple[int, float, float]]:
    """The same, read from the event logs only."""
    reader = RunReader(path, rank)
    reader.refresh()
    s = reader.scalars()[name]
    return list(zip(s.steps.tolist(), s.wall_times.tolist(), s.values.tolist()))


def run_script(code: str, root: Path, timeout: float = 60) -> tuple[dict, str]:
    """Run a child script that prints one JSON line last; return that object and its stderr."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          env=child_env(NUBOARD_DIR=str(root)), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


BARRIER = """
import json, os, sys, time
import nuboard as nb
open(os.path.join(os.environ["NB_SYNC"], "ready.%d" % os.getpid()), "w").close()
while not os.path.exists(os.path.join(os.environ["NB_SYNC"], "go")):
    time.sleep(0.02)
"""


def launch_together(body: str, envs: list[dict], sync: Path, timeout: float = 60) -> list[dict]:
    """Start one child per env; once all have imported nuboard, release them at once.

    Each child prints one JSON line last; returns those objects in the order of envs.
    """
    sync.mkdir(parents=True, exist_ok=True)
    for stale in sync.iterdir():
        stale.unlink()
    code = BARRIER + textwrap.dedent(body)
    procs = []
    try:
        for env in envs:
            procs.append(subprocess.Popen(
                [sys.executable, "-c", code], env=child_env(NB_SYNC=str(sync), **env),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + timeout
        while len(list(sync.glob("ready.*"))) < len(procs):
            assert time.monotonic() < deadline, "children did not start in time"
            assert all(p.poll() is None for p in procs), "a child died before the start line"
            time.sleep(0.02)
        (sync / "go").touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{out}\n{err}"
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# -- row 7: fork() after nb.init ----------------------------------------------------------
FORK_SCRIPT = """
import json, os, sys
import nuboard as nb

run = nb.init("p", run_id="r", flush_interval=3600, heartbeat_interval=3600, compact=False,
              QUIET_ARGS)
for step in range(5):
    run.add_scalar("loss", float(step), step=step)          # buffered: not yet written
files = {n: os.path.join(run.path, n) for n in ("events.r0.s0.log", "run.json", "heartbeat")}
before = {n: open(f, "rb").read() for n, f in files.items()}

FORK_PART

changed = [n for n, f in files.items() if open(f, "rb").read() != before[n]]
for step in range(5, 10):
    run.add_scalar("loss", float(step), step=step)
run.finish()
print(json.dumps({"changed": changed, "parent": os.getpid(), "children": children}))
"""

BARE_FORK = """
pid = os.fork()
if pid == 0:
    for step in range(100, 105):
        run.add_scalar("loss", -1.0, step=step)
    run.log({"child/only": 1.0})
    CHILD_END
_, wait_status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(wait_status) == 0, wait_status
children = [pid]
"""

POOL_FORK = """
import multiprocessing as mp

def work(i):
    run.add_scalar("loss", -1.0, step=100 + i)
    run.log({"worker/only": float(i)})
    run.flush()
    run.finish()
    return os.getpid()

pool = mp.get_context("fork").Pool(2)
children = sorted(set(pool.map(work, range(8))))
POOL_END
pool.join()
"""


def fork_script(part: str) -> str:
    return FORK_SCRIPT.replace("QUIET_ARGS", QUIET_ARGS).replace("FORK_PART", part)


def check_only_the_parent_wrote(root: Path, out: dict, stderr: str) -> None:
    """The parent's ten points, each once, nothing of the children; run.json the parent's."""
    path = root / "p" / "runs" / "r"
    assert out["changed"] == [], f"a child wrote the parent's files: {out['changed']}"
    assert out["parent"] not in out["children"] and out["children"]
    scalars = nb.read_scalars(path)
    assert list(scalars) == ["loss"], f"a child's scalar reached the log: {list(scalars)}"
    assert scalars["loss"].steps.tolist() == list(range(10))
    assert scalars["loss"].values.tolist() == [float(s) for s in range(10)]
    reader = LogReader(path / "events.r0.s0.log")
    reader.read()
    stats = reader.stats
    assert (stats.corrupt_records, stats.bad_records, stats.torn_tail) == (0, 0, False)
    assert reader.meta["pid"] == out["parent"]
    assert sorted(p.name for p in path.glob("events.*")) == ["events.r0.s0.log"]
    doc = read_doc(path)
    assert doc["status"] == "finished" and doc["end_time"]
    assert [(s["session"], s["pid"]) for s in doc["sessions"]] == [(0, out["parent"])]
    assert json.loads((path / "heartbeat").read_text())["pid"] == out["parent"]
    assert not list(path.glob(".tmp-*"))
    assert "does not log to it" in stderr      # the child is told its points go nowhere


@pytest.mark.parametrize("child_end", ["sys.exit(0)", "run.flush(); run.finish(); os._exit(0)"],
                         ids=["sys.exit-runs-atexit", "flush-finish-os._exit"])
def test_bare_fork_child_never_writes_the_parents_run(root, child_end):
    """A child forked after nb.init neither flushes the inherited buffer nor marks the run."""
    part = BARE_FORK.replace("CHILD_END", child_end)
    out, stderr = run_script(fork_script(part), root)
    check_only_the_parent_wrote(root, out, stderr)


@pytest.mark.parametrize("pool_end", ["pool.close()", "pool.terminate()"])
def test_fork_pool_workers_never_write_the_parents_run(root, pool_end):
    """multiprocessing 'fork' workers (as DataLoader's) add nothing and duplicate nothing."""
    part = POOL_FORK.replace("POOL_END", pool_end)
    out, stderr = run_script(fork_script(part), root)
    check_only_the_parent_wrote(root, out, stderr)


FORK_KILLED_AT_ONCE = """
import os, signal, time
import nuboard as nb

run = nb.init("p", run_id="r", flush_interval=3600, compact=False, QUIET_ARGS)
codes = []
for _ in range(30):
    pid = os.fork()
    if pid == 0:
        time.sleep(20)          # a SIGTERM that was lost leaves the child here
        os._exit(7)
    os.kill(pid, signal.SIGTERM)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
run.finish()
print(json.dumps({"codes": codes}))
"""


def test_a_forked_child_terminated_at_once_ends_as_sigterm_would(root):
    """A child SIGTERMed before it ran any Python (Pool.terminate() of an idle worker) ends at
    once: the child gets the script's own SIGTERM handling, with the signal held until then.

    Before, the child inherited NuBoard's Python handler, and CPython drops a signal that comes
    before a child is ready for Python handlers: the worker lived on and terminate() hung."""
    code = "import json\n" + FORK_KILLED_AT_ONCE.replace("QUIET_ARGS", QUIET_ARGS)
    start = time.monotonic()
    out, _ = run_script(code, root, timeout=120)
    assert out["codes"] == [-signal.SIGTERM] * 30
    assert time.monotonic() - start < 15, "a child outlived its SIGTERM"
    assert read_doc(root / "p" / "runs" / "r")["status"] == "finished"   # the parent's run


THREAD_MASKS = """
import json, signal, threading
import nuboard as nb

run = nb.init("p", run_id="r", system_interval=0.05, capture_env=False)
run.add_scalar("a", 1.0)
blocked = {}
for thread in threading.enumerate():
    with open(f"/proc/self/task/{thread.native_id}/status") as f:
        mask = int(next(line for line in f if line.startswith("SigBlk:")).split()[1], 16)
    blocked[thread.name] = bool(mask & (1 << (signal.SIGTERM - 1)))
run.finish()
print(json.dumps(blocked))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc/self/task")
def test_nuboards_threads_leave_sigterm_to_the_main_thread(root):
    """The writer and the sampler block SIGTERM, so the kernel hands it to the main thread,
    which it wakes from a sleep: delivered to a thread that cannot run Python handlers, it
    waited for the main thread's time.sleep(60) to end (test_sigterm_marks_killed_and_exits
    timed out under load)."""
    out, _ = run_script(THREAD_MASKS, root)
    assert out == {"MainThread": False, "nuboard-writer": True, "nuboard-system": True}, out


SMI_RECORDING_ITS_MASK = """#!PYTHON
# A nvidia-smi (not a shell, which clears its mask) that records which signals it blocks.
with open("/proc/self/status") as f, open("MASKS", "a") as out:
    out.write(next(line for line in f if line.startswith("SigBlk:")).split()[1] + "\\n")
print("0, 37, 1024, 81559, 45, 120.50")
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_nvidia_smi_started_by_the_sampler_takes_signals(tmp_path, monkeypatch):
    """The sampler thread blocks signals, but the nvidia-smi it starts does not inherit that:
    it stays killable by Ctrl-C and SIGTERM."""
    from nuboard.recording.capture.system import SystemSampler
    folder = tmp_path / "bin"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(SMI_RECORDING_ITS_MASK.replace("PYTHON", sys.executable)
                   .replace("MASKS", str(tmp_path / "masks")))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    logged = []
    sampler = SystemSampler(logged.append, groups=("gpu",), gpus=[{"device": "cuda:0", "index": 0}],
                            devices=None, track_mps=False, track_cuda=True, interval=0.05,
                            prefix="system")
    sampler.start()
    deadline = time.monotonic() + 20
    while len(logged) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    sampler.stop()
    assert logged and logged[0]["system/gpu0/util"] == 37.0, logged
    masks = (tmp_path / "masks").read_text().split()
    taken = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
    assert masks and all(int(m, 16) & taken == 0 for m in masks), masks


SIGTERM_INSIDE = """
import os, signal, sys, threading, time
import nuboard as nb

run = nb.init("p", run_id="r", flush_interval=3600, system_interval=0.05, capture_env=False)
for i in range(1000):
    run.add_scalar("a", float(i), step=i)
WHERE = sys.argv[1]


def holding(frame):
    # The main thread is inside NuBoard's code holding the lock that finishing needs.
    me, name = frame.f_locals.get("self"), frame.f_code.co_name
    if WHERE == "flush":
        return name == "drain" and me._lock.locked()
    if WHERE == "print":
        return name == "_drain" and me._lock._is_owned()
    if WHERE == "new-scalar":
        return name == "_open_series" and me._open_lock.locked()
    if WHERE == "add-artifact":                 # run.json's lock, taken to list the output
        return name == "update_run" and "doc" in frame.f_locals
    return name in ("finish", "_end") and me._finished and me._finish_lock._is_owned()


def trace(frame, event, arg):
    if threading.current_thread() is not threading.main_thread():
        return None
    if event == "line" and holding(frame):
        sys.settrace(None)
        os.write(1, b"sent\\n")
        os.kill(os.getpid(), signal.SIGTERM)   # handled at the next bytecode, lock held
        return None
    return trace


sys.settrace(trace)
if WHERE == "flush":
    run.flush()
elif WHERE == "print":
    print("hello")
elif WHERE == "new-scalar":
    run.add_scalar("b", 1.0, step=0)
elif WHERE == "add-artifact":
    with open("model.bin", "wb") as f:
        f.write(b"weights")
    run.add_artifact("model", "model.bin")
else:
    run.finish()
sys.settrace(None)
os.write(1, b"survived\\n")
time.sleep(60)
"""


@pytest.mark.parametrize("where", ["flush", "print", "new-scalar", "add-artifact", "finish"])
def test_sigterm_while_nuboard_holds_a_lock_ends_the_process_with_the_status(root, where):
    """A SIGTERM handled while the main thread is inside NuBoard's own locks waits for them:
    the process ends as SIGTERM would, with every point and the status written.

    Before, inside run.flush() the handler's finish waited for the drain lock its own thread
    held, and inside run.add_artifact it waited for the run.json lock it held (the process hung
    either way); inside finish() it found the run finishing and ended the process before the
    status was written ('running')."""
    root.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_INSIDE, where],
                            env=child_env(NUBOARD_DIR=str(root)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=root)
    try:
        out, err = proc.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"SIGTERM inside {where} did not end the process:\n{out}\n{err}") from None
    printed = ["hello", "sent"] if where == "print" else ["sent"]
    assert (proc.returncode, out.split()) == (-signal.SIGTERM, printed), err
    path = root / "p" / "runs" / "r"
    assert read_doc(path)["status"] == ("finished" if where == "finish" else "killed")
    assert [(s, v) for s, _, v in log_points(path, "a")] == [(s, float(s)) for s in range(1000)]
    if where == "print":
        assert (path / "files" / "output.log").read_text() == "hello\n"
    if where == "add-artifact":
        assert [o["name"] for o in read_doc(path)["outputs"]] == ["model"]


# -- row 8: many writers ------------------------------------------------------------------
RANK_BODY = """
rank, session = int(os.environ["RANK"]), int(os.environ["NB_SESSION"])
run = nb.init("p", run_id="job", resume=os.environ["NB_RESUME"], flush_interval=0.05,
              compact=False, QUIET_ARGS)
for step in range(5 * session, 5 * session + 5):
    run.add_scalar("x", rank * 1000.0 + step, step=step)
run.finish()
print(json.dumps({"rank": run.rank, "session": run.session, "pid": os.getpid()}))
""".replace("QUIET_ARGS", QUIET_ARGS)


def test_64_ranks_two_sessions_each_write_only_their_own_log(root, tmp_path):
    """64 ranks started together, twice: one log per rank and session, run.json by rank 0."""
    world = 64
    launches = []
    for session, resume in ((0, "auto"), (1, "must")):
        envs = [dict(NUBOARD_DIR=str(root), RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE=str(world),
                     NB_SESSION=str(session), NB_RESUME=resume) for i in range(world)]
        results = launch_together(RANK_BODY, envs, tmp_path / "sync", timeout=90)
        assert [(r["rank"], r["session"]) for r in results] == [(i, session) for i in range(world)]
        launches.append(results)

    path = root / "p" / "runs" / "job"
    expected = sorted(f"events.r{i}.s{k}.log" for i in range(world) for k in (0, 1))
    assert sorted(p.name for p in path.glob("events.*")) == expected
    for i in range(world):
        for k in (0, 1):
            reader = LogReader(path / f"events.r{i}.s{k}.log")
            chunks = reader.read()
            assert (reader.meta["rank"], reader.meta["session"]) == (i, k)
            assert reader.meta["pid"] == launches[k][i]["pid"]
            got = [(s, v) for c in chunks for s, v in zip(c.steps, c.values)]
            assert got == [(s, i * 1000.0 + s) for s in range(5 * k, 5 * k + 5)], (i, k)
            assert reader.stats.bad_records == reader.stats.corrupt_records == 0
        x = nb.read_scalars(path, rank=i)["x"]
        assert x.steps.tolist() == list(range(10))
        assert x.values.tolist() == [i * 1000.0 + s for s in range(10)]
    doc = read_doc(path)
    assert doc["status"] == "finished" and doc["world_size"] == world
    assert [(s["session"], s["pid"]) for s in doc["sessions"]] == \
        [(0, launches[0][0]["pid"]), (1, launches[1][0]["pid"])]
    assert json.loads((path / "heartbeat").read_text())["pid"] == launches[1][0]["pid"]
    assert not list(path.glob(".tmp-*"))


NAMED_BODY = """
run = nb.init("p", run_name="same-name", flush_interval=0.05, compact=False, QUIET_ARGS)
run.add_scalar("pid", float(os.getpid()), step=0)
run.finish()
print(json.dumps({"id": run.id, "pid": os.getpid()}))
""".replace("QUIET_ARGS", QUIET_ARGS)


def test_runs_with_one_name_started_together_get_their_own_folders(root, tmp_path):
    """Eight runs named alike, started in the same instant, each get a folder of their own."""
    results = launch_together(NAMED_BODY, [dict(NUBOARD_DIR=str(root))] * 8, tmp_path / "sync")
    ids = [r["id"] for r in results]
    assert len(set(ids)) == 8
    assert sorted(p.name for p in (root / "p" / "runs").iterdir()) == sorted(ids)
    for r in results:
        path = root / "p" / "runs" / r["id"]
        doc = read_doc(path)
        assert doc["name"] == "same-name" and doc["status"] == "finished"
        assert [s["pid"] for s in doc["sessions"]] == [r["pid"]]
        assert points(path, "pid")[0][2] == float(r["pid"])


def test_a_colliding_new_run_id_is_claimed_once_and_retried(root, monkeypatch):
    """When two new runs draw the same id, the second takes a fresh one, not the first's folder."""
    drawn = iter(["20260101T0000-aaaaaaaa", "20260101T0000-aaaaaaaa", "20260101T0000-bbbbbbbb"])
    monkeypatch.setattr("nuboard.recording.start.new_run_id", lambda: next(drawn))
    first = nb.init("p", run_name="same-name", compact=False, **QUIET)
    second = nb.init("p", run_name="same-name", compact=False, **QUIET)
    first.add_scalar("who", 1.0, step=0)
    second.add_scalar("who", 2.0, step=0)
    first.finish()
    second.finish()
    assert (first.id, second.id) == ("20260101T0000-aaaaaaaa", "20260101T0000-bbbbbbbb")
    assert points(first.path, "who")[0][2] == 1.0 and points(second.path, "who")[0][2] == 2.0
    assert len(read_doc(first.path)["sessions"]) == len(read_doc(second.path)["sessions"]) == 1


SAME_ID_BODY = """
try:
    run = nb.init("p", run_id="same", flush_interval=0.05, compact=False, QUIET_ARGS)
except Exception as exc:
    print(json.dumps({"ok": False, "type": type(exc).__name__,
                      "value_error": isinstance(exc, ValueError), "message": str(exc)}))
else:
    run.add_scalar("pid", float(os.getpid()), step=0)
    run.finish()
    print(json.dumps({"ok": True, "pid": os.getpid()}))
""".replace("QUIET_ARGS", QUIET_ARGS)


def test_one_run_id_claimed_together_exactly_one_wins(root, tmp_path):
    """Eight processes creating run_id='same' at once: one run, seven clear RunExistsErrors."""
    results = launch_together(SAME_ID_BODY, [dict(NUBOARD_DIR=str(root))] * 8, tmp_path / "sync")
    winners = [r for r in results if r["ok"]]
    losers = [r for r in results if not r["ok"]]
    assert len(winners) == 1, results
    for r in losers:
        assert r["type"] == "RunExistsError" and r["value_error"], r
        assert "\n" not in r["message"] and "'same'" in r["message"], r["message"]
    path = root / "p" / "runs" / "same"
    assert sorted(p.name for p in path.iterdir() if p.name != ".run.json.lock") == [
        "events.r0.s0.log", "heartbeat", "run.json"]
    doc = read_doc(path)
    assert [(s["session"], s["pid"]) for s in doc["sessions"]] == [(0, winners[0]["pid"])]
    assert points(path, "pid")[0][2] == float(winners[0]["pid"])


# -- row 13: clock skew -------------------------------------------------------------------
def test_ranks_an_hour_apart_keep_every_point_in_step_order(root, monkeypatch):
    """Rank 1's clock an hour behind rank 0's: both ranks keep all their points, by step."""
    t0 = time.time()
    rank0 = nb.init("p", run_id="skew", **QUIET)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    rank1 = nb.init("p", run_id="skew", resume="auto", **QUIET)
    for step in range(10):
        rank0.add_scalar("loss", float(step), step=step, wall_time=t0 + step)
        rank1.add_scalar("loss", -float(step), step=step, wall_time=t0 - 3600 + step)
    rank1.finish()
    rank0.finish()
    want0 = [(s, t0 + s, float(s)) for s in range(10)]
    want1 = [(s, t0 - 3600 + s, -float(s)) for s in range(10)]
    assert points(rank0.path, "loss") == log_points(rank0.path, "loss") == want0
    assert points(rank0.path, "loss", rank=1) == log_points(rank0.path, "loss", rank=1) == want1


def test_a_clock_stepping_back_loses_nothing(root, monkeypatch):
    """Wall times that jump an hour back, mid-run and across a resume: every point stays, by step."""
    t0 = time.time()
    run = nb.init("p", run_id="back", **QUIET)
    walls = [t0 + s if s < 5 else t0 - 3600 + s for s in range(10)]
    for step, wall in enumerate(walls):
        run.add_scalar("loss", float(step), step=step, wall_time=wall)
    clock = iter([t0, t0 + 1, t0 - 3600, t0 - 3599])                # the clock run.log reads
    with monkeypatch.context() as patch:
        patch.setattr(run_module, "_time", lambda: next(clock))
        for step in range(4):
            run.log({"acc": float(step)}, step=step)
    run.finish()
    run = nb.init("p", run_id="back", resume="must", **QUIET)        # a later session, earlier clock
    for step in range(10, 15):
        run.add_scalar("loss", float(step), step=step, wall_time=t0 - 7200 + step)
    run.finish()
    want = [(s, w, float(s)) for s, w in enumerate(walls)] + \
        [(s, t0 - 7200 + s, float(s)) for s in range(10, 15)]
    assert points(run.path, "loss") == log_points(run.path, "loss") == want
    assert points(run.path, "acc") == [(0, t0, 0.0), (1, t0 + 1, 1.0), (2, t0 - 3600, 2.0),
                                       (3, t0 - 3599, 3.0)]


def write_heartbeat(path: Path, **fields) -> None:
    """A heartbeat as another host's writer leaves it (its own clock in 'time')."""
    doc = {"seq": 1, "time": time.time(), "host": "other-host", "pid": 1, "session": 0,
           "interval": 10.0}
    doc.update(fields)
    (path / "heartbeat").write_text(json.dumps(doc))


def wait_for_new_beat(path: Path, seq: int, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = json.loads((path / "heartbeat").read_text())["seq"]
        if now != seq:
            return now
        time.sleep(0.02)
    raise AssertionError(f"the heartbeat of {path} did not change in {timeout} s")


def test_a_skewed_hosts_fresh_heartbeat_is_running(root):
    """A heartbeat stamped an hour ago by another host's clock, but just written: 'running'."""
    run = nb.init("p", run_id="r", flush_interval=3600, heartbeat_interval=3600, **QUIET)
    write_heartbeat(Path(run.path), seq=7, time=time.time() - 3600)
    assert nb.run_status(run.path) == "running"
    assert nb.run_status(run.path, now=time.time()) == "running"
    assert nb.run_status(run.path, watch=nb.HeartbeatWatch()) == "running"
    write_heartbeat(Path(run.path), seq=8, time=time.time() + 3600)   # a clock an hour ahead
    assert nb.run_status(run.path) == "running"
    run.finish()


def test_lost_is_judged_by_the_heartbeat_changing_on_the_readers_clock(root):
    """With a HeartbeatWatch, a counter standing still past 120 s and three of its intervals (30 s)
    of the reader's clock is 'lost'."""
    stalled = nb.init("p", run_id="stalled", flush_interval=3600, heartbeat_interval=30, **QUIET)
    alive = nb.init("p", run_id="alive", flush_interval=0.02, heartbeat_interval=0.02, **QUIET)
    reader_clock = [1000.0]
    watch = nb.HeartbeatWatch(clock=lambda: reader_clock[0])
    assert nb.run_status(stalled.path, watch=watch) == "running"
    assert nb.run_status(alive.path, watch=watch) == "running"
    seq = json.loads((Path(alive.path) / "heartbeat").read_text())["seq"]
    for _ in range(3):
        wait_for_new_beat(Path(alive.path), seq)
        reader_clock[0] += 200.0
        assert nb.run_status(alive.path, watch=watch) == "running"
        # the next beat must be newer than any the watch has seen: read after it looked
        seq = json.loads((Path(alive.path) / "heartbeat").read_text())["seq"]
    assert nb.run_status(stalled.path, watch=watch) == "lost"
    assert nb.run_status(stalled.path) == "running"     # its file is fresh: only the watch can tell
    reader_clock[0] += 100.0
    write_heartbeat(Path(stalled.path), seq=99)          # it beats again
    assert nb.run_status(stalled.path, watch=watch) == "running"
    stalled.finish()
    alive.finish()


def test_a_heartbeat_file_three_minutes_old_is_lost(root):
    """A running run whose heartbeat file was last written 3 minutes ago is 'lost'; 1 minute is not."""
    run = nb.init("p", run_id="r", flush_interval=3600, heartbeat_interval=3600, **QUIET)
    beat = Path(run.path) / "heartbeat"
    write_heartbeat(Path(run.path), time=time.time() + 3600)          # its own clock says "now"
    old = time.time() - 60
    os.utime(beat, (old, old))
    assert nb.run_status(run.path) == "running"
    old = time.time() - 180
    os.utime(beat, (old, old))
    assert nb.run_status(run.path) == "lost"
    assert nb.run_status(run.path, watch=nb.HeartbeatWatch()) == "lost"
    run.finish()


def test_a_finished_run_is_finished_whatever_its_heartbeat(root):
    """Once finished, a run is 'finished' with a stale, garbled or missing heartbeat."""
    run = nb.init("p", run_id="r", **QUIET)
    run.finish()
    beat = Path(run.path) / "heartbeat"
    old = time.time() - 86400
    os.utime(beat, (old, old))
    assert nb.run_status(run.path) == "finished"
    assert nb.run_status(run.path, watch=nb.HeartbeatWatch(clock=lambda: 1e9)) == "finished"
    beat.write_text("{not json")
    assert nb.run_status(run.path, watch=nb.HeartbeatWatch()) == "finished"
    beat.unlink()
    assert nb.run_status(run.path, now=time.time() + 86400) == "finished"


# -- row 14: huge or malformed input ------------------------------------------------------
@pytest.fixture(scope="module")
def huge() -> str:
    """A 100 MB string."""
    return "a" * 100_000_000


def refused_quickly(call, what: str, rule: str) -> str:
    """Call; it must raise ValueError within a second, with a short message naming the rule."""
    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        call()
    elapsed = time.perf_counter() - start
    message = str(info.value)
    assert elapsed < 1.0, f"{what}: refused after {elapsed:.2f} s"
    assert len(message) < 300, f"{what}: a {len(message)}-character message"
    assert what in message and rule in message, message
    return message


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
@pytest.mark.parametrize("what, make, rule", [
    ("run_name", lambda big: {"run_name": big}, "at most 256"),
    ("tag", lambda big: {"tags": ["ok", big]}, "at most 128 characters"),
    ("run_id", lambda big: {"run_id": big}, "at most 128"),
    ("project", lambda big: {"project": big}, "at most 512"),
    ("group", lambda big: {"group": big}, "at most 256"),
    ("notes", lambda big: {"notes": big}, "at most 1000000"),
    ("tags", lambda big: {"tags": [f"t{i}" for i in range(10 ** 6)]}, "at most 1000"),
], ids=["run_name", "tag", "run_id", "project", "group", "notes", "1e6-tags"])
def test_huge_init_arguments_are_refused_at_once(root, huge, what, make, rule):
    """A 100 MB name or a million tags: a quick, short ValueError, and nothing on disk."""
    kwargs = {"project": "p", **make(huge)}
    refused_quickly(lambda: nb.init(**kwargs), what, rule)
    assert not root.exists()


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_huge_scalar_names_are_refused_at_once(root, huge):
    """A 100 MB scalar name in add_scalar or log: a quick, short ValueError; the run goes on."""
    run = nb.init("p", **QUIET)
    refused_quickly(lambda: run.add_scalar(huge, 1.0), "scalar name", "at most 256")
    refused_quickly(lambda: run.log({"ok": 1.0, huge: 1.0}), "scalar name", "at most 256")
    run.add_scalar("ok", 2.0, step=0)
    run.finish()
    assert [p[2] for p in points(run.path, "ok")] == [2.0]
    assert list(nb.read_scalars(run.path)) == ["ok"]


def test_nan_and_infinities_are_kept(root):
    """NaN, +inf and -inf are logged and read back as such, from the logs and data.parquet."""
    import numpy as np
    run = nb.init("p", **QUIET)
    odd = [math.nan, math.inf, -math.inf, 1.5, np.float64("nan"), np.inf, -np.float32("inf")]
    for step, value in enumerate(odd):
        run.add_scalar("v", value, step=step)
    run.log({"a": math.nan, "b": math.inf, "c": -math.inf}, step=0)
    run.finish()
    assert (Path(run.path) / "data.parquet").exists() == _has_pyarrow()

    def shape(values):
        return [("nan" if math.isnan(v) else v) for v in values]
    want = ["nan", math.inf, -math.inf, 1.5, "nan", math.inf, -math.inf]
    for read in (points, log_points):
        assert shape(v for _, _, v in read(run.path, "v")) == want
        assert [shape(v for _, _, v in read(run.path, k)) for k in "abc"] == \
            [["nan"], [math.inf], [-math.inf]]


def _has_pyarrow() -> bool:
    import importlib.util
    return importlib.util.find_spec("pyarrow") is not None


@pytest.mark.parametrize("what, kwargs", [
    ("tag", {"tags": ["ok", BAD_UTF8]}),
    ("run_id", {"run_id": "id-" + BAD_UTF8}),
    ("run_name", {"run_name": "name " + BAD_UTF8}),
    ("project", {"project": "team/" + BAD_UTF8}),
    ("group", {"group": BAD_UTF8}),
    ("notes", {"notes": "notes " + BAD_UTF8}),
    ("system_prefix", {"system_prefix": BAD_UTF8}),
], ids=["tag", "run_id", "run_name", "project", "group", "notes", "system_prefix"])
def test_bad_utf8_in_init_is_refused_and_says_why(root, what, kwargs):
    """A name with a lone surrogate (bad UTF-8): ValueError saying so, printable; nothing on disk."""
    with pytest.raises(ValueError) as info:
        nb.init(**{"project": "p", **kwargs})
    message = str(info.value)
    message.encode("utf-8")                      # the message itself can be printed and logged
    assert what in message and "UTF-8" in message, message
    assert not root.exists()


def test_bad_utf8_scalar_names_are_refused(root):
    """A scalar name with a lone surrogate raises ValueError in add_scalar and log; the run goes on."""
    run = nb.init("p", **QUIET)
    for call in (lambda: run.add_scalar("train/" + BAD_UTF8, 1.0),
                 lambda: run.log({"ok": 1.0, BAD_UTF8: 2.0})):
        with pytest.raises(ValueError, match="UTF-8") as info:
            call()
        str(info.value).encode("utf-8")
    run.add_scalar("ok", 3.0, step=0)
    run.finish()
    assert list(nb.read_scalars(run.path)) == ["ok"]


def nested(depth: int, leaf=1, as_list: bool = False):
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"k": value}
    return value


@dataclasses.dataclass
class Holder:
    inner: object


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
@pytest.mark.parametrize("config", [
    nested(10 ** 4),
    {"layers": nested(10 ** 4, as_list=True)},
    Holder(nested(10 ** 4)),
    "cycle",
], ids=["dict-1e4", "list-1e4", "dataclass-1e4", "cycle"])
def test_a_config_nested_too_deep_is_a_value_error(root, config):
    """A config nested 10^4 deep (or cyclic): a short ValueError, not a RecursionError."""
    if config == "cycle":
        config = {"a": {}}
        config["a"]["self"] = config
    start = time.perf_counter()
    with pytest.raises(ValueError, match="64") as info:
        nb.init("p", config=config)
    assert time.perf_counter() - start < 1.0
    assert len(str(info.value)) < 400 and "nested" in str(info.value)
    assert not root.exists()


class Color(enum.Enum):
    RED = 1


def test_odd_config_values_are_stored_readably(root):
    """Bad UTF-8, NaN, Path, Enum, tuple, datetime, numpy and 50-deep values land in valid run.json."""
    import numpy as np
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    config = {
        "text": "bad " + BAD_UTF8, "key " + BAD_UTF8: 1,
        "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "np_nan": np.float64("nan"),
        "path": Path("/data/set"), "color": Color.RED, "tuple": (1, (2, 3)),
        "when": when, "day": when.date(), "np": np.int64(7), "arr": np.array([1.0, math.nan]),
        "deep": nested(50),
    }
    run = nb.init("p", run_id="cfg", config=config, **QUIET)
    run.finish()
    stored = read_doc(run.path)["config"]
    assert stored == run.config
    text = stored.pop("text")
    (bad_key,) = [k for k in stored if k.startswith("key ")]
    assert stored.pop(bad_key) == 1
    for s in (text, bad_key):
        s.encode("utf-8")
        assert s.startswith(("bad ", "key ")) and len(s) == 5
    assert stored == {
        "nan": "nan", "inf": "inf", "-inf": "-inf", "np_nan": "nan", "path": "/data/set",
        "color": "Color.RED", "tuple": [1, [2, 3]], "when": "2026-01-02T03:04:05+00:00",
        "day": "2026-01-02", "np": 7, "arr": [1.0, "nan"], "deep": nested(50)}
    resumed = nb.init("p", run_id="cfg", resume="must", **QUIET)       # nuboard reads it back
    assert resumed.config["deep"] == nested(50)
    resumed.finish()


# -- row 14: readers skip, count and cap bad records --------------------------------------
def points_payload(key_id: int, steps, walls, values, count: int | None = None,
                   mode: int = 0) -> bytes:
    """A POINTS payload with every step stored (mode 0); count may disagree with the data."""
    n = len(values) if count is None else count
    head = struct.pack("<BIIB", logfile.POINTS, key_id, n, mode)
    body = b"".join(struct.pack(f"<{len(a)}{c}", *a) for a, c in ((steps, "q"), (walls, "d"),
                                                                   (values, "d")))
    return head + body


def good(key_id: int, steps) -> bytes:
    from array import array
    return logfile.points_record(key_id, array("q", steps), array("d", [1.0] * len(steps)),
                                array("d", [float(s) for s in steps]))


def write_log(folder: Path, *records: bytes, session: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"events.r0.s{session}.log"
    path.write_bytes(logfile.FILE_HEADER + logfile.meta_record({"rank": 0, "session": session})
                     + b"".join(records))
    return path


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_reader_skips_and_counts_bad_records(tmp_path):
    """Unknown kinds, unknown keys, wrong counts, a 10 kB key name: skipped, counted, the rest read."""
    bad = [
        logfile.frame(bytes([99]) + b"a record of a later format"),          # unknown kind
        good(7, [0, 1]),                                                     # key 7 never named
        logfile.frame(points_payload(0, [20, 21], [1.0, 1.0], [1.0, 1.0], count=3)),   # count > size
        logfile.frame(points_payload(0, [22, 23, 24], [1.0] * 3, [1.0] * 3, count=1)),  # count < size
        logfile.frame(struct.pack("<BIIBqq", logfile.POINTS, 0, 2 ** 32 - 1, 1, 0, 1)),  # huge count
        logfile.frame(struct.pack("<BI", logfile.KEY, 3) + b"n" * 10_000),    # 10 kB key name
        good(3, [0]),                                                        # ... so key 3 is unknown
        logfile.frame(struct.pack("<BI", logfile.KEY, 4) + b"\xff\xfe"),      # key name not UTF-8
        logfile.frame(bytes([logfile.META]) + b"{not json"),                   # meta not JSON
        logfile.frame(struct.pack("<BI", logfile.POINTS, 0)),                 # points cut short
        logfile.frame(points_payload(0, [30], [1.0], [1.0], mode=5)),       # unknown step mode
    ]
    folder = tmp_path / "run"
    log = write_log(folder, logfile.key_record(0, "loss"), good(0, range(0, 10)), *bad,
                    good(0, range(10, 20)), logfile.key_record(1, "acc"), good(1, [5]))
    reader = RunReader(folder, 0)
    start = time.perf_counter()
    assert reader.refresh()
    assert time.perf_counter() - start < 1.0
    stats = reader.stats
    assert stats.bad_records == len(bad), stats.problems
    assert (stats.corrupt_records, stats.torn_tail) == (0, False)
    assert len(stats.problems) == len(bad)
    scalars = reader.scalars()
    assert list(scalars) == ["loss", "acc"]
    assert scalars["loss"].steps.tolist() == list(range(20))
    assert scalars["loss"].values.tolist() == [float(s) for s in range(20)]
    assert scalars["acc"].steps.tolist() == [5]

    assert not reader.refresh() and reader.stats.bad_records == len(bad)   # not counted twice
    with open(log, "ab") as fh:                                             # the log grows
        fh.write(good(9, [1]) + good(1, [6]))
    assert reader.refresh()
    assert reader.stats.bad_records == len(bad) + 1
    assert reader.scalars()["acc"].steps.tolist() == [5, 6]
    assert nb.read_scalars(folder)["loss"].steps.tolist() == list(range(20))


def test_reader_caps_its_problem_list(tmp_path):
    """Thousands of bad records are all counted, but the list of problems stays bounded."""
    junk = logfile.frame(bytes([99]) + b"x")
    write_log(tmp_path / "run", logfile.key_record(0, "loss"), junk * 5000, good(0, [1, 2]))
    reader = RunReader(tmp_path / "run", 0)
    reader.refresh()
    assert reader.stats.bad_records == 5000
    assert 0 < len(reader.stats.problems) <= 100
    assert reader.scalars()["loss"].steps.tolist() == [1, 2]


@pytest.mark.parametrize("record", [
    logfile.frame(struct.pack("<BIIBqq", logfile.POINTS, 0, 2, 1, 2 ** 63 - 1, 1)
                 + struct.pack("<4d", 1.0, 1.0, 1.0, 1.0)),      # steps past 2**63 - 1
    logfile.frame(struct.pack("<BIIBqq", logfile.POINTS, 0, 3, 1, 0, 2 ** 62)
                 + struct.pack("<6d", *[1.0] * 6)),              # a stride that overflows
    logfile.frame(bytes([logfile.META]) + b"[" * 100_000 + b"]" * 100_000),   # meta nested 1e5 deep
], ids=["step-overflow", "stride-overflow", "deep-meta"])
def test_reader_skips_records_that_overflow_or_nest_deeply(tmp_path, record):
    """A well-framed record whose steps overflow int64, or deep JSON, is a bad record, not a crash."""
    write_log(tmp_path / "run", logfile.key_record(0, "loss"), good(0, [1]), record, good(0, [2]))
    reader = RunReader(tmp_path / "run", 0)
    reader.refresh()
    assert reader.stats.bad_records == 1
    assert reader.scalars()["loss"].steps.tolist() == [1, 2]
