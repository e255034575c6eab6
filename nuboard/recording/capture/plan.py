"""Wiring the capture into nb.init: GPUs, environment, console copy and the system sampler.

Everything here runs once per process at init (or at finish), never on the logging path.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from nuboard.files import layout
from nuboard.recording.ranks import Ranks

from .environment import (
    Deadline,
    capture_git,
    command_line,
    default_code_dir,
    installed_packages,
    write_files,
)

ENV_BUDGET = 2.0        # seconds that git and nvidia-smi may hold nb.init, together


class Plan:
    """What this process captures, decided from nb.init's arguments and its rank."""

    def __init__(self, *, groups: tuple, devices: tuple | None, capture_env: bool,
                 capture_console: bool, ranks: Ranks):
        self.deadline = Deadline(ENV_BUDGET)
        self.ranks = ranks
        self.groups = groups if ranks.local_rank == 0 else ()
        self.capture_env = capture_env and ranks.rank == 0
        self.capture_console = capture_console and ranks.rank == 0
        names = devices
        self.track_cuda = names is None or any(n.startswith("cuda") for n in names)
        self.track_mps = names is None or "mps" in names
        cuda_names = None if names is None else tuple(n for n in names if n.startswith("cuda"))
        wants_gpus = self.capture_env or "gpu" in self.groups or bool(cuda_names)
        self.gpus = None
        if wants_gpus and shutil.which("nvidia-smi") is not None:
            from .gpus import query_gpus
            self.gpus = query_gpus(timeout=min(1.5, self.deadline.left()))
        self.cuda_indices = None
        if cuda_names:
            from .gpus import check_devices
            self.cuda_indices = check_devices(cuda_names, self.gpus)   # raises for a bad name


def record_environment(plan: Plan, doc: dict, code_dir: Any) -> dict[str, bytes]:
    """Put git, GPUs and the launcher into doc['env']; return the files to write under files/."""
    files: dict[str, bytes] = {}
    earlier = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    env: dict = {"executable": sys.executable, "rank": plan.ranks.rank,
                 "local_rank": plan.ranks.local_rank, "world_size": plan.ranks.world_size}
    launcher = _launcher()
    if launcher:
        env["launcher"] = launcher
    if plan.capture_env:
        places = [Path(os.fspath(code_dir)).resolve()] if code_dir is not None else default_code_dir()
        try:
            git, patch = capture_git(places, plan.deadline)
        except Exception:
            git, patch = None, None
        if git is not None:
            env["git"] = git
        if patch:
            files["git.patch"] = patch
        if plan.gpus is not None:
            env["gpus"] = plan.gpus
        try:
            files["requirements.txt"] = installed_packages().encode("utf-8")
        except Exception:
            pass
        files["command.txt"] = command_line().encode("utf-8", "replace")
    else:                        # a session that captures nothing keeps what an earlier one did
        env.update({k: earlier[k] for k in ("git", "gpus") if k in earlier})
    doc["env"] = env
    return files


def start_services(plan: Plan, run: Any, *, interval: float, prefix: str, folder: Path,
                   session: int) -> list:
    """Start the console copy and the sampler; return what finish() must stop, in order."""
    services = []
    if plan.groups:
        from .system import SystemSampler
        sampler = SystemSampler(run._log_own, groups=plan.groups, gpus=plan.gpus,
                                devices=plan.cuda_indices, track_mps=plan.track_mps,
                                track_cuda=plan.track_cuda, interval=interval, prefix=prefix)
        sampler.start()
        services.append(sampler)
    if plan.capture_console:
        from .console import ConsoleCapture
        console = ConsoleCapture(folder / layout.FILES / "output.log", session,
                                 quiet_if_run_gone=True)   # the run's writer warns of that
        console.start()
        services.append(console)
    return services


def write_environment_files(folder: Path, files: dict[str, bytes]) -> None:
    if files:
        write_files(folder / layout.FILES, files)


def _launcher() -> str | None:
    environ = os.environ
    if "TORCHELASTIC_RUN_ID" in environ or ("RANK" in environ and "MASTER_ADDR" in environ):
        return "torchrun"
    if "SLURM_PROCID" in environ:
        return "slurm"
    if "OMPI_COMM_WORLD_RANK" in environ:
        return "mpi"
    return None
