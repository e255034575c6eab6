"""Processes on this host: whether one is alive, when it started, and what launched this one.

On Linux from /proc (no import); elsewhere through psutil where it imports, else unknown (None).
"""
from __future__ import annotations

import os
import sys
import time

ANCESTORS = 8                 # how far up launcher_start looks past torchrun workers' wrappers
WORKER_VAR = "TORCHELASTIC_RESTART_COUNT"     # set by a torchrun agent on its workers only


def process_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a zombie does not; another user's does)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    stat = _proc_stat(pid)
    return stat is None or stat[0] not in ("Z", "X")


def process_start(pid: int) -> float | None:
    """When the process started, on this host's wall clock (time.time()), or None."""
    if sys.platform.startswith("linux"):
        stat = _proc_stat(pid)
        try:
            ticks = int(stat[19]) / os.sysconf("SC_CLK_TCK")
            return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - ticks)
        except (TypeError, IndexError, ValueError, OSError, AttributeError):
            return None
    try:
        import psutil
        return float(psutil.Process(pid).create_time())
    except Exception:                  # no psutil, no such process, no permission
        return None


def launcher_start() -> float | None:
    """When the launch of this process began: the start of the process that launched it.

    That is the parent (a torchrun agent, srun's step daemon, mpirun's daemon, Lightning's
    rank 0), or, past a wrapper script that a torchrun agent started (a process whose own
    environment has torchrun's worker variables), the agent above it. A torchrun agent that
    restarts its workers stays the same process, so its restarts share one start.
    """
    pid = os.getppid()
    for _ in range(ANCESTORS):
        if pid <= 1 or not sys.platform.startswith("linux") or not _is_worker(pid):
            break
        stat = _proc_stat(pid)
        try:
            pid = int(stat[1])
        except (TypeError, IndexError, ValueError):
            break
    return process_start(pid) if pid > 0 else None


def _is_worker(pid: int) -> bool:
    """Whether the process started with torchrun's worker variables (unreadable: no)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            names = {item.split(b"=", 1)[0] for item in fh.read().split(b"\0")}
    except OSError:
        return False
    return WORKER_VAR.encode() in names


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()
