"""How a run ends: at interpreter exit, on an uncaught exception, on SIGTERM; the heartbeat."""
from __future__ import annotations

import ast
import json
import signal
import time
from pathlib import Path

from helpers import run_child, start_child

import nuboard as nb

SCRIPT = """
import nuboard as nb
run = nb.init("p", run_id="r", flush_interval=60)
for i in range(100):
    run.add_scalar("a", float(i))
print("logged", flush=True)
{tail}
"""


def status_of(root: Path) -> dict:
    return json.loads((root / "p" / "runs" / "r" / "run.json").read_text())


def test_forgotten_finish_happens_at_exit(root):
    """A script that never calls finish() is finished at exit, with every point written."""
    run_child(SCRIPT.format(tail=""), NUBOARD_DIR=str(root))
    assert status_of(root)["status"] == "finished"
    assert nb.read_scalars(root / "p" / "runs" / "r")["a"].values.tolist() == [float(i) for i in range(100)]


def test_uncaught_exception_marks_crashed(root):
    """An exception that ends the script marks the run crashed; its points are kept."""
    proc = run_child(SCRIPT.format(tail="raise RuntimeError('diverged')"), check=False,
                     NUBOARD_DIR=str(root))
    assert proc.returncode == 1 and "diverged" in proc.stderr
    assert status_of(root)["status"] == "crashed"
    assert len(nb.read_scalars(root / "p" / "runs" / "r")["a"]) == 100


def test_sys_exit_zero_is_finished(root):
    """sys.exit(0) is a normal end."""
    run_child(SCRIPT.format(tail="import sys; sys.exit(0)"), NUBOARD_DIR=str(root))
    assert status_of(root)["status"] == "finished"


def test_sigterm_marks_killed_and_exits(root):
    """SIGTERM writes the buffered points, marks the run killed and ends the process."""
    proc = start_child(SCRIPT.format(tail="import time; time.sleep(60)"), NUBOARD_DIR=str(root))
    try:
        assert proc.stdout.readline().strip() == "logged"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert status_of(root)["status"] == "killed"
    assert len(nb.read_scalars(root / "p" / "runs" / "r")["a"]) == 100


def test_nuboards_threads_hold_sigterm_from_their_first_instruction(root):
    """NuBoard's threads are started with SIGTERM already blocked (inherited from the thread
    that starts them), so a SIGTERM sent right after nb.init can only go to the main thread:
    one that went to a thread not yet blocking it left the script asleep (60 s in CI)."""
    code = """
import signal, threading, time
import nuboard as nb
import nuboard.eventlog.writer as writer, nuboard.recording.capture.system as system
seen = {}
def first_line(own=writer.block_signals):      # what the thread holds when its loop begins
    seen[threading.current_thread().name] = signal.SIGTERM in signal.pthread_sigmask(
        signal.SIG_BLOCK, [])
    own()
writer.block_signals = system.block_signals = first_line
run = nb.init("p", run_id="r")          # the writer and the system sampler start here
while len(seen) < 2:
    time.sleep(0.01)
seen["MainThread"] = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
print(sorted(seen.items()))
run.finish()
"""
    out = run_child(code, NUBOARD_DIR=str(root), timeout=60).stdout
    masks = dict(ast.literal_eval(out.strip().splitlines()[-1]))
    assert masks["nuboard-writer"] and masks["nuboard-system"], masks
    assert not masks["MainThread"], masks                 # the main thread takes it


def test_users_sigterm_handler_still_runs(root):
    """A SIGTERM handler the script set before nb.init is called after the run is marked."""
    code = """
import signal, sys, time
def handler(signum, frame):
    print("user handler", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, handler)
""" + SCRIPT.format(tail="time.sleep(60)")
    proc = start_child(code, NUBOARD_DIR=str(root))
    try:
        assert proc.stdout.readline().strip() == "logged"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 3 and "user handler" in out
    assert status_of(root)["status"] == "killed"


def test_heartbeat_changes_while_running(root):
    """The heartbeat's counter moves every heartbeat_interval, even with rare flushes."""
    run = nb.init("p", heartbeat_interval=0.05, flush_interval=3600)
    first = json.loads((Path(run.path) / "heartbeat").read_text())
    deadline = time.time() + 10
    while time.time() < deadline:
        beat = json.loads((Path(run.path) / "heartbeat").read_text())
        if beat["seq"] > first["seq"] + 1:
            break
        time.sleep(0.02)
    assert beat["seq"] > first["seq"] + 1 and beat["pid"] == first["pid"]
    assert nb.run_status(run.path) == "running"
    run.finish()
    assert nb.run_status(run.path) == "finished"
