"""Processes that start the same new run id at once each get a session, and run.json lists every one.

Four real processes wait on a barrier file, then call nb.init(run_id=..., resume="auto")
together: one creates the run, the others join it. Each must own its own session log, and
run.json's `sessions` must list all four (none lost to a stale rewrite), every time.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import child_env

STARTERS = 4
ROUNDS = 6

CHILD = textwrap.dedent("""
    import os, sys, time
    import nuboard as nb
    barrier, run_id = sys.argv[1], sys.argv[2]
    while not os.path.exists(barrier):
        time.sleep(0.0005)
    kw = dict(system_metrics=False, capture_console=False, capture_env=False)
    run = nb.init("p", run_id=run_id, resume="auto", **kw)
    run.add_scalar("x", float(run.session), step=run.session)
    print(run.session, flush=True)
    run.finish()
""")


def start_together(root, tmp_path, run_id: str) -> tuple[list[int], list[int]]:
    """STARTERS children that call nb.init(run_id, resume='auto') at once: (sessions, pids)."""
    barrier = tmp_path / f"go-{run_id}"
    env = child_env(NUBOARD_DIR=str(root))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(barrier), run_id], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(STARTERS)]
    time.sleep(1.5)                              # every child imported nuboard and waits
    barrier.touch()
    sessions = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        sessions.append(int(out.strip().splitlines()[-1]))
    return sessions, [p.pid for p in procs]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_four_processes_starting_one_new_run_id_each_get_a_recorded_session(root, tmp_path, round_):
    run_id = f"shared-{round_}"
    sessions, pids = start_together(root, tmp_path, run_id)
    assert sorted(sessions) == list(range(STARTERS))               # one session log each
    folder = root / "p" / "runs" / run_id
    logs = sorted(p.name for p in folder.glob("events.r0.s*.log"))
    assert logs == [f"events.r0.s{i}.log" for i in range(STARTERS)]
    doc = json.loads((folder / "run.json").read_text())
    recorded = sorted(s["session"] for s in doc["sessions"])
    assert recorded == list(range(STARTERS)), doc["sessions"]
    assert sorted(s["pid"] for s in doc["sessions"]) == sorted(pids)
    assert doc["status"] == "finished"


def test_four_processes_resuming_one_run_at_once_keep_every_session_and_the_notes(root, tmp_path):
    import nuboard as nb
    with nb.init("p", run_id="old", notes="keep me", system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        run.add_scalar("x", 0.0, step=0)
    for round_ in range(3):
        sessions, pids = start_together(root, tmp_path, "old")
        first = 1 + round_ * STARTERS
        assert sorted(sessions) == list(range(first, first + STARTERS))
        doc = json.loads((run.path / "run.json").read_text())
        assert sorted(s["session"] for s in doc["sessions"]) == list(range(first + STARTERS))
        assert doc["notes"] == "keep me" and doc["status"] == "finished"
