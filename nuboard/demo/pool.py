"""Running the demo's runs as child processes: several at once, each after the runs it needs.

Each run is a real process (`python -m nuboard.demo.job`), so the console copy, the system
sampler, the SIGTERM hook and a SIGKILL behave as they do for a training script. A run with
two ranks is two processes that share a launcher identity, as torchrun gives them. Each runs
on its replay clock (clock.py): on its day of the plan, its hours passing in about a second.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .clock import CLOCK_VAR, clock_value
from .errors import DemoFailedError
from .job import RESULT_VAR
from .plan import RunSpec, began, speed

RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID",
             "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid",
             "PMIX_NAMESPACE")
REPLAY = Path(__file__).with_name("replay.py")
SIGKILL_CODE, SIGTERM_CODE = -9, -15


@dataclass(frozen=True)
class Task:
    """One process (or one process per rank) to run: a run, or one session of a run."""
    key: str
    spec: RunSpec
    after: tuple
    session: int = 0

    @property
    def expected(self) -> tuple:
        """The exit statuses the run's story may end with."""
        spec = self.spec
        if spec.crash_at is not None:
            return (1,)
        if spec.kill_at is not None:
            return (SIGKILL_CODE,)
        if spec.preempt_at is not None and self.session == 0:
            return (SIGTERM_CODE, 128 - SIGTERM_CODE)
        return (0,)

    def outcome(self) -> str:
        """What happened, for the progress line."""
        spec = self.spec
        if spec.crash_at is not None:
            return f"crashed at step {spec.crash_at} (loss went to NaN)"
        if spec.kill_at is not None:
            return f"killed with SIGKILL at step {spec.kill_at}: shows as lost"
        if spec.preempt_at is not None:
            return (f"session 0 preempted (SIGTERM) at step {spec.preempt_at}" if self.session == 0
                    else f"session 1 resumed from step {spec.resume_from}, finished")
        if spec.fork_of is not None:
            return f"forked from {spec.fork_of.split('/')[-1]} at step {spec.fork_step}, finished"
        if spec.kind == "prepare":
            return "finished, made datasets/fineweb-edu:v2"
        if spec.saves_model:
            return "finished, saved model:v1"
        if spec.kind == "eval":
            return f"finished, scored {spec.uses[0]}"
        return f"finished, {spec.ranks} ranks" if spec.ranks > 1 else "finished"


def plan_tasks(specs: "tuple[RunSpec, ...]") -> list[Task]:
    """The tasks for these runs: a preempted run is two, its second after its first."""
    tasks = []
    for spec in specs:
        if spec.preempt_at is not None:
            tasks.append(Task(spec.key + "#0", spec, spec.after, 0))
            tasks.append(Task(spec.key, spec, (spec.key + "#0",), 1))
        else:
            tasks.append(Task(spec.key, spec, spec.after))
    return tasks


class Pool:
    """Starts tasks when the runs they need are done, at most `limit` processes at a time."""

    def __init__(self, root: Path, workdir: Path, *, limit: int,
                 progress: Callable[[str], None]):
        self.root = root
        self.workdir = workdir
        self.limit = limit
        self.progress = progress
        self.run_ids: dict[str, str] = {}          # task key -> run id
        self._launch = uuid.uuid4().hex[:12]
        self.midnight = midnight()

    def run(self, tasks: list[Task]) -> dict[str, str]:
        """Run every task; return the run id of each run by its key. DemoFailedError when a
        process ends other than as its story says (the others are stopped first)."""
        pending = list(tasks)
        running: dict[str, tuple[Task, list]] = {}
        try:
            while pending or running:
                busy = sum(len(procs) for _, procs in running.values())
                for task in list(pending):
                    ready = all(dep in self.run_ids for dep in task.after)
                    if ready and (not running or busy + task.spec.ranks <= self.limit):
                        pending.remove(task)
                        running[task.key] = (task, self._start(task))
                        busy += task.spec.ranks
                if not running:
                    raise DemoFailedError("the demo's runs wait on each other: "
                                          + ", ".join(t.key for t in pending))
                time.sleep(0.02)
                for key, (task, procs) in list(running.items()):
                    codes = [p.poll() for p in procs]
                    if any(c is not None and c not in task.expected for c in codes):
                        self._fail(task, procs)
                    if all(c is not None for c in codes):
                        del running[key]
                        self._done(task)
        finally:
            for _, procs in running.values():
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                    proc.wait()
        return {key: rid for key, rid in self.run_ids.items() if "#" not in key}

    def _start(self, task: Task) -> list:
        spec = task.spec
        argv = [sys.executable, str(REPLAY), spec.key, "--dir", str(self.root)]
        if task.session:
            argv += ["--resume", self.run_ids[spec.key + "#0"]]
        if spec.fork_of is not None:
            argv += ["--fork-from", self.run_ids[spec.fork_of]]
        procs = []
        for rank in range(spec.ranks):
            env = child_env(self.root)
            env[RESULT_VAR] = str(self._path(task, "json"))
            env[CLOCK_VAR] = clock_value(began(spec, self.midnight, task.session), speed(spec))
            if spec.ranks > 1:
                env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(spec.ranks),
                           LOCAL_WORLD_SIZE=str(spec.ranks), MASTER_ADDR="127.0.0.1",
                           MASTER_PORT="29500",
                           TORCHELASTIC_RUN_ID=f"demo-{self._launch}-{spec.name}")
            with open(self._path(task, f"r{rank}.out"), "wb") as out:
                procs.append(subprocess.Popen(argv, env=env, cwd=self.workdir, stdout=out,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        return procs

    def _path(self, task: Task, suffix: str) -> Path:
        return self.workdir / (task.key.replace("/", "_").replace("#", "_s") + "." + suffix)

    def _done(self, task: Task) -> None:
        try:
            run_id = json.loads(self._path(task, "json").read_text(encoding="utf-8"))["run_id"]
        except (OSError, ValueError, KeyError, TypeError):
            raise DemoFailedError(f"demo run {task.key!r} did not say which run it wrote: "
                                  + self._tail(task)) from None
        self.run_ids[task.key] = run_id
        if task.spec.kill_at is not None:
            last_seen(self.root / task.spec.project / "runs" / run_id)
        self.progress(f"  {task.spec.key:<40s} {task.outcome()}")

    def _fail(self, task: Task, procs: list) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        codes = ", ".join(str(p.returncode) for p in procs)
        raise DemoFailedError(f"demo run {task.key!r} exited with {codes}, not "
                              f"{' or '.join(map(str, task.expected))}: {self._tail(task)}")

    def _tail(self, task: Task) -> str:
        lines = []
        for rank in range(task.spec.ranks):
            try:
                text = self._path(task, f"r{rank}.out").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            lines += [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
        return lines[-1].strip() if lines else "(it printed nothing)"


def child_env(root: Path) -> dict:
    """The environment of a run's process: no launcher variables, this nuboard importable."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_VARS}
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env["NUBOARD_DIR"] = str(root)
    return env


def midnight() -> float:
    """The start of today, local time: the demo's days are counted back from it."""
    now = time.localtime()
    return time.mktime((now.tm_year, now.tm_mon, now.tm_mday, 0, 0, 0, 0, 0, -1))


def last_seen(folder: Path) -> None:
    """Date a killed run's heartbeat, run.json and logs to its last point, on its replayed
    day, as a run that died then would have left them (its heartbeat is days old: lost)."""
    import nuboard as nb
    walls = [max(s.wall_times) for s in nb.read_scalars(folder).values() if len(s.wall_times)]
    if not walls:
        return
    when = max(walls)
    for path in folder.iterdir():
        if path.name in ("heartbeat", "run.json") or path.name.startswith("events."):
            try:
                os.utime(path, (when, when))
            except OSError:
                pass
