"""Checks of nb.init's arguments: check_init_args checks them all, in order, before anything
is written; the checks of flags, intervals, groups, devices and resume are here too."""
from __future__ import annotations

import math
import os
import stat
import sys
from pathlib import Path
from typing import Any, NamedTuple

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.eventlog.points import MAX_STEP, show
from nuboard.files import layout
from nuboard.files.names import (
    MAX_NOTES,
    check_folder_name,
    check_label,
    check_prefix,
    check_project,
    check_tags,
)

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


def check_shown_label(value: Any, what: str) -> str:
    """A run_name or group: a label, and one with something to show (None leaves it unset)."""
    value = check_label(value, what)
    if not value.strip():
        raise InvalidArgumentError(
            f"{what} {value!r} has nothing to show: give it at least one visible character, "
            f"or leave {what} out (None).")
    return value


def check_resume(value: Any, what: str = "resume") -> str | None:
    if value is None or value in RESUME_MODES:
        return value
    raise InvalidArgumentError(
        f"{what} {value!r:.80} is not one of None, 'must' or 'auto': 'must' continues an existing "
        "run and fails when it is missing; 'auto' creates it when it is missing.")


RUN_ID_VAR = "NUBOARD_RUN_ID"
RESUME_VAR = "NUBOARD_RESUME"


def env_run_id_resume(run_id: Any, resume: Any, fork_from: Any) -> tuple[Any, Any]:
    """run_id and resume, each taken from $NUBOARD_RUN_ID / $NUBOARD_RESUME when not given
    (None), so that a restarted job rejoins its run without a change of code; an argument
    given wins, and a fork (fork_from) starts a new run whatever they say. A variable set
    to a bad value raises the argument's error, naming the variable; an empty one is unset."""
    if fork_from is not None:
        return run_id, resume
    if run_id is None:
        value = os.environ.get(RUN_ID_VAR) or None
        if value is not None:
            run_id = check_folder_name(value, RUN_ID_VAR)
    if resume is None:
        value = os.environ.get(RESUME_VAR) or None
        if value is not None:
            resume = check_resume(value, RESUME_VAR)
            if resume == "must" and run_id is None:
                raise InvalidArgumentError(
                    f"{RESUME_VAR}='must' needs the id of the run to continue: set "
                    f"{RUN_ID_VAR} too, or pass run_id to nb.init.")
    return run_id, resume


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
    if not 0 <= step <= MAX_STEP:
        raise InvalidArgumentError(f"fork_from's step {show(step)} must be between 0 and "
                                   "2**63-1 (9223372036854775807), the range of an int64.")
    return run_id, step


def check_root(root: Path, project: str) -> None:
    """Check that the project's runs folder can be made under root: the nearest part of
    <root>/<project>/runs that exists is a folder (a file there makes mkdir fail).

    Raises:
        InvalidArgumentError: a file stands where a folder must be; names it and dir.
    """
    runs = layout.runs_dir(root, project)
    for place in (runs, *runs.parents):
        try:
            is_folder = stat.S_ISDIR(place.stat().st_mode)
        except (FileNotFoundError, NotADirectoryError):
            continue                 # not there yet (or under a file): look one level up
        except OSError:
            return                   # unreadable: creating the folder will say why
        if is_folder:
            return
        rule = "Pass dir= a folder, or a path whose existing part is folders (the rest is created)."
        if place == root:
            raise InvalidArgumentError(f"dir {str(root)!r} is a file, not a folder. {rule}")
        if place in root.parents:
            raise InvalidArgumentError(
                f"dir {str(root)!r} cannot be a folder: {str(place)!r} is a file. {rule}")
        raise InvalidArgumentError(
            f"project {project!r} cannot be made under dir {str(root)!r}: {str(place)!r} is a "
            "file, not a folder. Move that file, or pick another project name.")


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
    if not items:
        raise InvalidArgumentError(
            f"system_devices {value!r} names no device: to sample no GPU, leave 'gpu' out of "
            "system_metrics (system_metrics=['cpu', 'memory']); None tracks every GPU.")
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


class InitOptions(NamedTuple):
    """nb.init's arguments, checked and normalized (check_init_args).

    A NamedTuple, not a dataclass: `import nuboard` stays free of dataclasses (and inspect).
    """
    project: str
    name_given: str | None       # run_name as given (None: keep a resumed run's)
    run_name: str                # the new run's name: name_given or 'run'
    config_doc: dict | None
    root: Path
    tags: list | None
    notes: str | None
    group: str | None
    run_id: str | None
    resume: str | None
    fork: tuple[str, int] | None
    capture_env: bool
    code_dir: Any
    compact: bool
    flush_interval: float
    heartbeat_interval: float
    system_interval: float
    groups: tuple
    devices: tuple | None
    capture_console: bool
    system_prefix: str | None
    timing_prefix: str | None
    timing_all_ranks: bool
    sync_to: str | None = None
    sync_interval: float = 30.0


SYNC_TO_VAR = "NUBOARD_SYNC_TO"


def check_sync_to(value: Any) -> str | None:
    """sync_to: None (then $NUBOARD_SYNC_TO, where set and not empty) or an object-store URL
    such as s3://bucket/experiments."""
    what = "sync_to"
    if value is None:
        value = os.environ.get(SYNC_TO_VAR) or None
        what = SYNC_TO_VAR
        if value is None:
            return None
    if not isinstance(value, str):
        raise InvalidTypeError(f"sync_to must be a URL such as 's3://bucket/experiments', "
                               f"not {type(value).__name__} ({value!r:.80}).")
    from nuboard.remote.urls import is_url
    if not is_url(value) or not value.split("://", 1)[1].strip("/"):
        raise InvalidArgumentError(
            f"{what} {value!r:.200} is not an object-store URL: give one such as "
            "'s3://bucket/experiments' (gs://, az:// or any fsspec URL; a folder is not one: "
            "runs go to dir=).")
    return value.rstrip("/")


def check_init_args(*, project, run_name, config, dir, tags, notes, group, run_id, resume,
                    fork_from, capture_env, code_dir, compact, flush_interval,
                    heartbeat_interval, system_metrics, system_devices, system_interval,
                    capture_console, system_prefix, timing_prefix, timing_all_ranks,
                    sync_to=None, sync_interval=30.0) -> InitOptions:
    """Every argument of nb.init checked, in this order; raises the first error found."""
    project = check_project("default" if project is None else project)
    name_given = check_shown_label(run_name, "run_name") if run_name is not None else None
    config_doc = None
    if config is not None:
        from .run_config import to_config  # dataclasses and datetime only when needed
        config_doc = to_config(config)
    root = layout.resolve_root(dir)
    check_root(root, project)
    tags = check_tags(tags) if tags is not None else None
    notes = check_label(notes, "notes", MAX_NOTES) if notes is not None else None
    group = check_shown_label(group, "group") if group is not None else None
    if run_id is not None:
        check_folder_name(run_id, "run_id")
    resume = check_resume(resume)
    fork = check_fork_from(fork_from)
    for flag, what in ((capture_env, "capture_env"), (compact, "compact"),
                       (capture_console, "capture_console"), (timing_all_ranks, "timing_all_ranks")):
        check_flag(flag, what)
    if code_dir is not None:
        if not isinstance(code_dir, (str, os.PathLike)):
            raise InvalidTypeError(f"code_dir must be a str or a path, not {type(code_dir).__name__}.")
        if not Path(code_dir).is_dir():
            raise InvalidArgumentError(f"code_dir {os.fspath(code_dir)!r} is not a folder.")
    flush_interval = check_interval(flush_interval, "flush_interval")
    heartbeat_interval = check_interval(heartbeat_interval, "heartbeat_interval")
    system_interval = check_interval(system_interval, "system_interval")
    groups = check_system_metrics(system_metrics)
    devices = check_system_devices(system_devices)
    if system_prefix is not None:
        check_prefix(system_prefix, "system_prefix")
    if timing_prefix is not None:
        check_prefix(timing_prefix, "timing_prefix")
    if fork and resume:
        raise InvalidArgumentError("fork_from starts a new run: it cannot be combined with resume.")
    if resume == "must" and run_id is None:
        raise InvalidArgumentError("resume='must' needs the run_id of the run to continue.")
    if fork:
        check_folder_name(fork[0], "fork_from run id")
    sync_to = check_sync_to(sync_to)
    sync_interval = check_interval(sync_interval, "sync_interval")
    return InitOptions(
        project=project, name_given=name_given, run_name=name_given or "run",
        config_doc=config_doc, root=root, tags=tags, notes=notes, group=group, run_id=run_id,
        resume=resume, fork=fork, capture_env=capture_env, code_dir=code_dir, compact=compact,
        flush_interval=flush_interval, heartbeat_interval=heartbeat_interval,
        system_interval=system_interval, groups=groups, devices=devices,
        capture_console=capture_console, system_prefix=system_prefix,
        timing_prefix=timing_prefix, timing_all_ranks=timing_all_ranks, sync_to=sync_to,
        sync_interval=sync_interval)
