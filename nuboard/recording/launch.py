"""All ranks of one launch in one run, without a run_id: agreed through a file in the project.

Rank 0 starts the run (or, when the launcher restarts the launch's workers, resumes the run it
started) and writes runs/.launches/<hash of the launch key>.json naming it; the other ranks wait
for that file and join the run it names. The launch key comes from the launcher
(ranks.launch_key) and is the same for every launch of one command (a static torchrun
rendezvous is always 'none' on port 29500), so the file also says when it was written: no rank
takes a file older than its own launch (processes.launcher_start), and rank 0 takes one only in
a restart (TORCHELASTIC_RESTART_COUNT or SLURM_RESTART_COUNT above 0).
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import NamedTuple

from nuboard.errors import InvalidArgumentError, NuBoardError
from nuboard.files import layout
from nuboard.files.jsonfile import read_json, write_json_atomic

LAUNCHES = ".launches"
WAIT_SECONDS = 300.0


class Launch(NamedTuple):
    """This process's launch: its key, its file, its restart count and when it began."""
    key: str
    path: Path
    restart: int              # 0 for a launch's first workers
    began: float | None       # the launcher's start on this host's clock; None where unknown
    by_agent: bool            # restarted by a torchrun agent (else a requeued SLURM job)


def find_launch(runs: Path, rank: int, world_size: int) -> Launch:
    """The launch of this process; InvalidArgumentError where no launcher names it."""
    from .processes import launcher_start
    from .ranks import launch_key, launch_restart
    key = launch_key()
    if key is None:
        raise no_launch_key(rank, world_size)
    restart, by_agent = launch_restart()
    return Launch(key, launch_file(runs, key), restart, launcher_start(), by_agent)


def launch_file(runs: Path, key: str) -> Path:
    return runs / LAUNCHES / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".json")


def started_run(path: Path, since: float | None = None) -> str | None:
    """The run id a launch file names, when that run exists (and the file is from `since` on)."""
    try:
        doc = read_json(path)
        run_id = doc["run_id"]
        written = doc.get("time")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if since is not None and (isinstance(written, bool) or not isinstance(written, (int, float))
                              or written < since):
        return None                   # an earlier launch's file: not this launch's run
    if isinstance(run_id, str) and (path.parent.parent / run_id / layout.RUN_JSON).is_file():
        return run_id
    return None


def restarted_run(launch: Launch) -> str | None:
    """For rank 0: the run this launch started before its workers were restarted, or None.

    A launch's first workers always start a new run. A torchrun agent that restarts its
    workers is the process they started from, so its file is from that start on; a requeued
    SLURM job keeps its job and step ids but starts from a new step daemon, so it takes the
    file whatever its age.
    """
    if launch.restart <= 0:
        return None
    return started_run(launch.path, launch.began if launch.by_agent else None)


def record_launch(path: Path, key: str, run_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"key": key, "run_id": run_id, "time": time.time()})


def wait_for_launch(launch: Launch, rank: int, timeout: float = WAIT_SECONDS) -> str:
    """The run id rank 0 recorded for this launch; waits for it, then gives up with a clear error.

    A file written before this launch began (an earlier launch of the same command) is not
    this launch's: the rank waits for rank 0 to write it again.
    """
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        run_id = started_run(launch.path, launch.began)
        if run_id is not None:
            return run_id
        if time.monotonic() > deadline:
            raise NuBoardError(
                f"rank {rank}: rank 0 of launch {launch.key!r} did not start a run within "
                f"{timeout:.0f} s (no {str(launch.path)!r} written since this launch began); "
                "pass run_id to nb.init on every rank.")
        time.sleep(pause)
        pause = min(0.2, pause * 1.5)


def no_launch_key(rank: int, world_size: int) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"rank {rank} of {world_size}: no launcher identity (torchrun, SLURM or Open MPI "
        "variables) tells which run the ranks share; pass the same run_id to nb.init on every rank.")
