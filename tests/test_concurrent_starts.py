"""Processes that start one run id at once: none is lost silently, and no two write it at once.

Four real processes wait on a barrier file, then call nb.init(run_id=..., resume="auto")
together. The one that gets the run holds it (it is live) until every other one has answered;
each other one must be refused with RunExistsError naming the live pid, and leave no session
behind. So: each process either has its session in run.json or got the error, every time.
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
    barrier, run_id, answer = sys.argv[1], sys.argv[2], sys.argv[3]
    while not os.path.exists(barrier):
        time.sleep(0.0005)
    kw = dict(system_metrics=False, capture_console=False, capture_env=False)
    try:
        run = nb.init("p", run_id=run_id, resume="auto", **kw)
    except nb.RunExistsError as exc:
        with open(answer, "w") as fh:
            fh.write("refused " + str(exc))
        sys.exit(3)
    with open(answer + ".tmp", "w") as fh:
        fh.write(f"session {run.session} {os.getpid()}")
    os.replace(answer + ".tmp", answer)
    while not os.path.exists(barrier + ".release"):       # live until the others answered
        time.sleep(0.01)
    run.add_scalar("x", float(run.session), step=run.session)
    run.finish()
""")


def start_together(root, tmp_path, run_id: str) -> tuple[list[tuple[int, int]], list[str]]:
    """STARTERS children that call nb.init(run_id, resume='auto') at once.

    Returns the (session, pid) of each one that got the run and the error of each refused one.
    """
    barrier = tmp_path / f"go-{run_id}"
    barrier.unlink(missing_ok=True)
    (tmp_path / f"go-{run_id}.release").unlink(missing_ok=True)
    answers = [tmp_path / f"answer-{run_id}-{i}" for i in range(STARTERS)]
    for path in answers:
        path.unlink(missing_ok=True)
    env = child_env(NUBOARD_DIR=str(root))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(barrier), run_id, str(answer)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for answer in answers]
    try:
        time.sleep(1.5)                              # every child imported nuboard and waits
        barrier.touch()
        deadline = time.monotonic() + 120
        while not all(a.exists() for a in answers) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 3) for p in procs):
                break
            time.sleep(0.02)
        (tmp_path / f"go-{run_id}.release").touch()
        outcomes = []
        for proc, answer in zip(procs, answers):
            _, err = proc.communicate(timeout=120)
            assert proc.returncode in (0, 3), err
            outcomes.append(answer.read_text())
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    got = [tuple(int(x) for x in text.split()[1:]) for text in outcomes if text.startswith("session")]
    refused = [text for text in outcomes if text.startswith("refused")]
    assert len(got) + len(refused) == STARTERS, outcomes
    return got, refused


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_four_processes_starting_one_new_run_id_one_gets_it_the_others_are_refused(
        root, tmp_path, round_):
    run_id = f"shared-{round_}"
    got, refused = start_together(root, tmp_path, run_id)
    assert len(got) == 1 and len(refused) == STARTERS - 1, (got, refused)
    (session, pid), = got
    for error in refused:                        # each refusal names the live process
        assert f"pid {pid} on host" in error and repr(run_id) in error, error
    folder = root / "p" / "runs" / run_id
    assert sorted(p.name for p in folder.glob("events.r0.s*.log")) == [f"events.r0.s{session}.log"]
    doc = json.loads((folder / "run.json").read_text())
    assert [(s["session"], s["pid"]) for s in doc["sessions"]] == [(session, pid)]
    assert doc["status"] == "finished"


def test_four_processes_resuming_one_run_at_once_one_resumes_and_the_notes_stay(root, tmp_path):
    import nuboard as nb
    with nb.init("p", run_id="old", notes="keep me", system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        run.add_scalar("x", 0.0, step=0)
    recorded = [0]
    for round_ in range(3):
        got, refused = start_together(root, tmp_path, "old")
        assert len(got) == 1 and len(refused) == STARTERS - 1, (got, refused)
        (session, pid), = got
        assert session == round_ + 1 and all(f"pid {pid} on host" in e for e in refused)
        recorded.append(session)
        doc = json.loads((run.path / "run.json").read_text())
        assert [s["session"] for s in doc["sessions"]] == recorded
        assert doc["sessions"][-1]["pid"] == pid
        assert doc["notes"] == "keep me" and doc["status"] == "finished"
        assert sorted(p.name for p in run.path.glob("events.r0.s*.log")) == \
            [f"events.r0.s{k}.log" for k in recorded]
