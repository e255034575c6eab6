"""All ranks of one launch in one run, without a run_id: agreed through a file in the project.

Rank 0 starts the run (or, when its launch restarts, resumes the run it started) and writes
runs/.launches/<hash of the launch key>.json naming it; the other ranks wait for that file and
join the run it names. The launch key comes from the launcher (ranks.launch_key).
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from nuboard.errors import InvalidArgumentError, NuBoardError
from nuboard.files import layout
from nuboard.files.jsonfile import read_json, write_json_atomic

LAUNCHES = ".launches"
WAIT_SECONDS = 300.0


def launch_file(runs: Path, key: str) -> Path:
    return runs / LAUNCHES / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".json")


def started_run(path: Path) -> str | None:
    """The run id a launch file names, when that run exists."""
    try:
        doc = read_json(path)
        run_id = doc["run_id"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(run_id, str) and (path.parent.parent / run_id / layout.RUN_JSON).is_file():
        return run_id
    return None


def record_launch(path: Path, key: str, run_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"key": key, "run_id": run_id, "time": time.time()})


def wait_for_launch(path: Path, rank: int, key: str, timeout: float = WAIT_SECONDS) -> str:
    """The run id rank 0 recorded for this launch; waits for it, then gives up with a clear error."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        run_id = started_run(path)
        if run_id is not None:
            return run_id
        if time.monotonic() > deadline:
            raise NuBoardError(
                f"rank {rank}: rank 0 of launch {key!r} did not start a run within {timeout:.0f} s "
                f"(no {str(path)!r}); pass run_id to nb.init on every rank.")
        time.sleep(pause)
        pause = min(0.2, pause * 1.5)


def no_launch_key(rank: int, world_size: int) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"rank {rank} of {world_size}: no launcher identity (torchrun, SLURM or Open MPI "
        "variables) tells which run the ranks share; pass the same run_id to nb.init on every rank.")
