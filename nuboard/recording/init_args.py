"""Checks of nb.init's options that are not names: flags, intervals, groups, devices, resume."""
from __future__ import annotations

import math
import sys
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError

SYSTEM_GROUPS = ("cpu", "memory", "gpu")
RESUME_MODES = ("must", "auto")


def check_flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{what} must be True or False, not {value!r:.80}.")
    return value


def check_interval(value: Any, what: str) -> float:
    """A positive, finite number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"{what} must be a number of seconds, not {type(value).__name__} "
                               f"({value!r:.80}).")
    if not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{what} {value!r} must be a positive, finite number of seconds.")
    return float(value)


def check_resume(value: Any) -> str | None:
    if value is None or value in RESUME_MODES:
        return value
    raise InvalidArgumentError(
        f"resume {value!r:.80} is not one of None, 'must' or 'auto': 'must' continues an existing "
        "run and fails when it is missing; 'auto' creates it when it is missing.")


def check_fork_from(value: Any) -> tuple[str, int] | None:
    if value is None:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidTypeError(
            f"fork_from must be a (run_id, step) pair, such as ('20261017T0930-c589c96e', 5000); "
            f"got {value!r:.80}.")
    run_id, step = value
    if not isinstance(run_id, str):
        raise InvalidTypeError(f"fork_from's run id must be a str, not {type(run_id).__name__}.")
    if isinstance(step, bool) or not hasattr(step, "__index__"):
        raise InvalidTypeError(f"fork_from's step {step!r:.80} must be an int.")
    step = step.__index__()
    if step < 0:
        raise InvalidArgumentError(f"fork_from's step {step} must be 0 or more.")
    return run_id, step


def check_system_metrics(value: Any) -> tuple[str, ...]:
    """True: every group; False: none; a list picks groups out of cpu, memory, gpu."""
    if value is True:
        return SYSTEM_GROUPS
    if value is False:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidTypeError(
            f"system_metrics must be True, False or a list of groups such as ['gpu'], "
            f"not {value!r:.80}.")
    groups = []
    for group in value:
        if group not in SYSTEM_GROUPS:
            raise InvalidArgumentError(
                f"system_metrics group {group!r:.80} is not one of 'cpu', 'memory', 'gpu'.")
        if group not in groups:
            groups.append(group)
    return tuple(g for g in SYSTEM_GROUPS if g in groups)


def check_system_devices(value: Any) -> tuple[str, ...] | None:
    """Device names as the script uses them: 'cuda', 'cuda:i', 'mps', 'all', or a torch.device.

    Returns None for every GPU the process can use, else the normalised names.
    Whether a cuda:i exists on this machine is checked against nvidia-smi (gpus.check_devices).
    """
    if value is None:
        return None
    items = [value] if isinstance(value, str) or hasattr(value, "type") else value
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise InvalidTypeError(
            f"system_devices must be a device name, a list of names or a torch.device, "
            f"not {value!r:.80}.")
    names: list[str] = []
    for item in items:
        name = _device_name(item)
        if name == "all":
            return None
        if name not in names:
            names.append(name)
    for name in names:
        if name == "mps" and sys.platform != "darwin":
            raise InvalidArgumentError(
                f"system_devices {name!r}: MPS exists only on macOS (Apple silicon).")
    return tuple(names)


def _device_name(item: Any) -> str:
    if hasattr(item, "type") and not isinstance(item, str):      # torch.device
        kind, index = str(item.type), getattr(item, "index", None)
        item = kind if index is None else f"{kind}:{index}"
    if not isinstance(item, str):
        raise InvalidTypeError(f"system_devices entry {item!r:.80} must be a str or a torch.device.")
    name = item.strip().lower()
    if name in ("all", "mps"):
        return name
    if name == "cuda":
        return "cuda:0"
    if name.startswith("cuda:") and name[5:].isdigit():
        return f"cuda:{int(name[5:])}"
    choices = "'cuda', 'cuda:<i>', 'mps' or 'all'" if sys.platform == "darwin" else \
        "'cuda', 'cuda:<i>' or 'all'"
    raise InvalidArgumentError(
        f"system_devices {item!r:.80} cannot be tracked: use {choices} "
        "(CPU use is in the cpu group).")
