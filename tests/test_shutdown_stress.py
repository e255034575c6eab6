"""Shutdown never hangs: 200 training processes, each sent SIGTERM at a random moment.

Each child starts a run, logs and flushes, sleeps while the sampler runs, and finishes; the
test sends SIGTERM during one of those phases, chosen at random, while two busy loops keep
both cores taken. Every child must end as SIGTERM would within 10 s, with its status in
run.json and every point it had flushed readable. A child that does not end is dumped with
py-spy (the test extra installs it) before it is killed, and the dump is in the failure.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import child_env

import nuboard as nb
from nuboard.eventlog.logfile import LogReader

PROCESSES = 200
AT_ONCE = 8            # children alive together
EXIT_WITHIN = 10.0     # seconds from SIGTERM to exit
PHASES = ("init", "logging", "sampling", "finish")

CHILD = """
import sys, time
import nuboard as nb

print("init", flush=True)
run = nb.init("p", run_id=sys.argv[1], flush_interval=0.05, heartbeat_interval=0.2,
              system_interval=0.05, capture_env=False)
print("logging", flush=True)
step = 0
until = time.monotonic() + 1.0
while time.monotonic() < until:
    run.add_scalar("a", float(step), step=step)
    run.log({"b": -float(step)}, step=step)
    step += 1
    if step % 200 == 0:
        run.flush()
        print(f"flushed {step}", flush=True)
        sys.stderr.write(f"step {step}\\n")
print("sampling", flush=True)
time.sleep(0.5)
print("finish", flush=True)
run.finish()
print("finished", flush=True)
time.sleep(60)
"""


@dataclass
class Child:
    run_id: str
    phase: str
    delay: float
    proc: subprocess.Popen
    lines: list = field(default_factory=list)     # (monotonic time, line) as read
    sent_at: float | None = None
    ended_at: float | None = None
    dump: str = ""

    def seen(self, word: str) -> float | None:
        return next((t for t, line in list(self.lines) if line == word), None)


def read_lines(child: Child) -> None:
    for line in child.proc.stdout:
        child.lines.append((time.monotonic(), line.strip()))


def py_spy_dump(pid: int) -> str:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    try:
        done = subprocess.run([exe, "dump", "--locals", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no py-spy dump: {exc})"
    return done.stdout + done.stderr


def start(root: Path, n: int, rng: random.Random) -> Child:
    phase = rng.choice(PHASES)
    delay = {"init": 0.3, "logging": 1.0, "sampling": 0.5, "finish": 0.2}[phase] * rng.random()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, f"r{n:03d}"],
                            env=child_env(NUBOARD_DIR=str(root)), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    child = Child(f"r{n:03d}", phase, delay, proc)
    threading.Thread(target=read_lines, args=(child,), daemon=True).start()
    return child


def drive(child: Child, now: float) -> bool:
    """Send the SIGTERM when its moment has come; True once the child has ended (or hung)."""
    if child.sent_at is None:
        began = child.seen(child.phase)
        if began is not None and now >= began + child.delay:
            child.proc.send_signal(signal.SIGTERM)
            child.sent_at = time.monotonic()
        elif child.proc.poll() is not None:
            child.sent_at = now          # it ended on its own: check() says so
        return False
    if child.proc.poll() is not None:
        child.ended_at = now
        return True
    if now - child.sent_at > EXIT_WITHIN:
        child.dump = py_spy_dump(child.proc.pid)
        child.proc.kill()
        child.proc.wait()
        return True
    return False


def check(root: Path, child: Child) -> str | None:
    """What is wrong with how this child ended, or None."""
    said = [line for _, line in child.lines]
    where = f"{child.run_id} (SIGTERM {child.delay:.2f} s into {child.phase}; it said {said[-3:]})"
    if child.dump:
        return f"{where} did not exit within {EXIT_WITHIN:g} s of SIGTERM:\n{child.dump}"
    if child.proc.returncode != -signal.SIGTERM:
        return f"{where} exited with {child.proc.returncode}, not as SIGTERM would"
    path = root / "p" / "runs" / child.run_id
    if not path.exists():        # the signal came before nb.init had begun
        return None if "logging" not in said else f"{where}: its run folder is gone"
    try:
        status = json.loads((path / "run.json").read_text())["status"]
    except (OSError, ValueError, KeyError) as exc:
        return f"{where}: no status in run.json ({exc})"
    allowed = ("killed", "finished") if "finish" in said else ("killed",)
    if status not in allowed or nb.run_status(path) != status:
        return f"{where}: status {status!r} (run_status {nb.run_status(path)!r}), not {allowed}"
    flushed = max((int(line.split()[1]) for line in said if line.startswith("flushed ")), default=0)
    reader = LogReader(path / "events.r0.s0.log")
    reader.read()
    if reader.stats.corrupt_records or reader.stats.torn_tail or reader.stats.bad_records:
        return f"{where}: a damaged event log: {reader.stats.problems[:3]}"
    scalars = nb.read_scalars(path)
    for name, sign in (("a", 1.0), ("b", -1.0)):
        got = scalars.get(name)
        steps, values = (got.steps.tolist(), got.values.tolist()) if got is not None else ([], [])
        if steps != list(range(len(steps))) or values != [sign * s for s in steps]:
            return f"{where}: {name!r} is not the points logged, in order, once each"
        if len(steps) < flushed:
            return f"{where}: {name!r} has {len(steps)} points, {flushed} were flushed"
    return None


@pytest.mark.slow
def test_200_processes_sigtermed_at_random_moments_end_within_10_s(root):
    """Every child ends as SIGTERM would, within 10 s, its status written, its points kept."""
    seed = int(os.environ.get("NB_STRESS_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    started, running, ended = 0, [], []
    try:
        while started < PROCESSES or running:
            while started < PROCESSES and len(running) < AT_ONCE:
                running.append(start(root, started, rng))
                started += 1
            now = time.monotonic()
            for child in list(running):
                if drive(child, now):
                    running.remove(child)
                    ended.append(child)
            time.sleep(0.005)
    finally:
        for proc in busy + [c.proc for c in running]:
            proc.kill()
            proc.wait()
    problems = [p for p in (check(root, c) for c in ended) if p]
    by_phase = {phase: sum(c.phase == phase for c in ended) for phase in PHASES}
    waits = sorted(c.ended_at - c.sent_at for c in ended if c.ended_at is not None)
    print(f"SIGTERM to exit: median {waits[len(waits) // 2]:.2f} s, slowest {waits[-1]:.2f} s; "
          f"by phase {by_phase}")
    assert not problems, (f"seed {seed} (NB_STRESS_SEED), {len(problems)} of {len(ended)} "
                          f"children: " + "\n\n".join(problems[:5]))
    assert len(ended) == PROCESSES and min(by_phase.values()) >= PROCESSES // 8, by_phase
