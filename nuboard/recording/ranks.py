"""Rank, local rank and world size of this process, from torchrun, SLURM or MPI variables."""
from __future__ import annotations

import os
from typing import NamedTuple

_SOURCES = (
    ("RANK", "LOCAL_RANK", "WORLD_SIZE"),                                   # torchrun
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI
    ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"),                     # SLURM
)


class Ranks(NamedTuple):
    rank: int
    local_rank: int
    world_size: int


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def detect_ranks(env: "dict[str, str] | None" = None) -> Ranks:
    """The first launcher whose rank variable is set wins; a single process is rank 0 of 1."""
    env = os.environ if env is None else env
    for rank_var, local_var, size_var in _SOURCES:
        rank = _int(env.get(rank_var))
        if rank is not None and rank >= 0:
            local = _int(env.get(local_var))
            size = _int(env.get(size_var))
            return Ranks(rank, local if local is not None and local >= 0 else rank,
                         size if size is not None and size > rank else rank + 1)
    return Ranks(0, 0, 1)


def launch_key(env: "dict[str, str] | None" = None) -> str | None:
    """An identity that every rank of one launch shares, or None outside a known launcher.

    SLURM: the job and step ids; torchrun: the rendezvous id with the master's address and
    port; Open MPI: the job id. A restarted torchrun agent keeps the key (same port and id),
    and so does the next launch of the same command (a static rendezvous is always id 'none'
    on one port): the launch file tells launches apart by time (launch.py).
    """
    env = os.environ if env is None else env
    if env.get("SLURM_JOB_ID") and env.get("SLURM_PROCID") is not None:
        return f"slurm:{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '')}"
    if env.get("RANK") is not None and env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        return (f"torch:{env.get('TORCHELASTIC_RUN_ID', '')}:{env['MASTER_ADDR']}:"
                f"{env['MASTER_PORT']}")
    for var in ("OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"):
        if env.get(var) and env.get("OMPI_COMM_WORLD_RANK") is not None:
            return f"mpi:{env[var]}"
    return None


def launch_restart(env: "dict[str, str] | None" = None) -> tuple[int, bool]:
    """How many times the launcher restarted this launch's workers (0 for the first ones), and
    whether a torchrun agent did (True) or SLURM requeued the job (False).

    torchrun: TORCHELASTIC_RESTART_COUNT; SLURM: SLURM_RESTART_COUNT; Open MPI never restarts.
    """
    env = os.environ if env is None else env
    count = _int(env.get("TORCHELASTIC_RESTART_COUNT"))
    if count is not None and count > 0:
        return count, True
    count = _int(env.get("SLURM_RESTART_COUNT")) if env.get("SLURM_JOB_ID") else None
    return (count, False) if count is not None and count > 0 else (0, True)
