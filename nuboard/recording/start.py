"""nb.init: check every argument, then start, resume or fork a run on disk."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from nuboard.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    NuBoardError,
    RunExistsError,
    RunNotFoundError,
)
from nuboard.eventlog.writer import Heartbeat
from nuboard.files import layout, runjson
from nuboard.files.jsonfile import clean_stray_temps
from nuboard.files.names import (
    MAX_NOTES,
    RESERVED_DEFAULTS,
    check_folder_name,
    check_label,
    check_prefix,
    check_project,
    check_tags,
    new_run_id,
)
from nuboard.files.status import hostname

from .init_args import (
    check_flag,
    check_fork_from,
    check_interval,
    check_resume,
    check_system_devices,
    check_system_metrics,
)
from .ranks import detect_ranks
from .run import Run, defers_sigterm

RUN_FORMAT = 1


@defers_sigterm
def init(
    project: str | None = None,
    *,
    run_name: str | None = None,
    config: Any = None,
    dir: "str | os.PathLike[str] | None" = None,
    tags: "list[str] | None" = None,
    notes: str | None = None,
    group: str | None = None,
    run_id: str | None = None,
    resume: str | None = None,
    fork_from: "tuple[str, int] | None" = None,
    capture_env: bool = True,
    code_dir: "str | os.PathLike[str] | None" = None,
    compact: bool = True,
    flush_interval: float = 1.0,
    heartbeat_interval: float = 10.0,
    system_metrics: "bool | list[str]" = True,
    system_devices: Any = None,
    system_interval: float = 30.0,
    capture_console: bool = True,
    system_prefix: str | None = None,
    timing_prefix: str | None = None,
    timing_all_ranks: bool = False,
) -> Run:
    """Start a run, or resume one, in <dir>/<project>/runs/<run_id>/.

    The contract is the user documentation of nb.init (spec/init.md); in short:

    Args:
        project: the project folder; '/' nests ('team/llm'). Defaults to 'default'.
        run_name: a label shown in the viewer, not part of the id. Defaults to 'run'.
        config: a dict, dataclass, argparse.Namespace, OmegaConf config or object with
            to_dict(); kept nested in run.json.
        dir: the root folder; defaults to $NUBOARD_DIR, else ./experiments.
        tags, notes, group: labels for the Runs table and the query language.
        run_id: the run's id and folder name; defaults to <YYYYMMDDTHHMM>-<8 hex> (UTC).
        resume: 'must' continues run_id and fails when it is missing; 'auto' creates it
            when missing. A resumed run writes the next session file. Values given on resume
            (run_name, config, tags, notes, group) replace the stored ones.
        fork_from: (run_id, step): a new run starting from a copy of that run's points up
            to step, for every rank.
        capture_env: record git (commit, branch, remote, dirty, files/git.patch), installed
            packages (files/requirements.txt), the command line and GPUs; best effort.
        code_dir: the folder of the training code whose git repository is recorded;
            defaults to the running script's folder, then the working directory.
        compact: write data.parquet at finish when pyarrow is installed.
        flush_interval: seconds between background writes of the event log.
        heartbeat_interval: seconds between liveness updates of the heartbeat file. A run
            is lost when its heartbeat is over two minutes and three intervals old.
        system_metrics: log CPU, memory and GPU use as system/ scalars: True for all, False
            for none, or a list of groups out of 'cpu', 'memory', 'gpu'.
        system_devices: the devices the gpu group tracks ('cuda:0', a list, 'mps' on macOS,
            'all' or a torch.device); None tracks every GPU the process can use.
        system_interval: seconds between system samples.
        capture_console: copy stdout and stderr into files/output.log.
        timing_all_ranks: the default of run.timer's all_ranks (log timers on every rank).
        system_prefix, timing_prefix: the first segment of the run's own scalar names;
            defaults to what a resumed run used, else 'system' and 'timing'.

    Returns:
        The Run; also a context manager that finishes it.

    Raises:
        ValueError: a name that is not a safe folder name (or a project segment such as
            'runs' that NuBoard uses inside a project), resume='must' for a missing run,
            a new run whose id exists, a missing fork parent, an untrackable device.
        TypeError: an argument or config of a type NuBoard cannot take.
    """
    project = check_project("default" if project is None else project)
    name_given = check_label(run_name, "run_name") if run_name is not None else None
    run_name = name_given or "run"
    config_doc = None
    if config is not None:
        from .run_config import to_config  # dataclasses and datetime only when needed
        config_doc = to_config(config)
    root = layout.resolve_root(dir)
    tags = check_tags(tags) if tags is not None else None
    notes = check_label(notes, "notes", MAX_NOTES) if notes is not None else None
    group = check_label(group, "group") if group is not None else None
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

    ranks = detect_ranks()
    from nuboard.recording.capture.plan import (
        Plan,
        record_environment,
        start_services,
        write_environment_files,
    )
    plan = Plan(groups=groups, devices=devices, capture_env=capture_env,
                capture_console=capture_console, ranks=ranks)
    runs = layout.runs_dir(root, project)
    launch = None
    if run_id is None and ranks.world_size > 1 and not fork:
        from . import launch as launches
        from .ranks import launch_key
        key = launch_key()
        if key is None:
            raise launches.no_launch_key(ranks.rank, ranks.world_size)
        launch = (launches.launch_file(runs, key), key)
        if ranks.rank == 0:
            run_id = launches.started_run(launch[0])          # a restarted launch resumes
        else:
            run_id = launches.wait_for_launch(launch[0], ranks.rank, key)
        if run_id is not None:
            resume = "auto"
    parent_dir = runs / fork[0] if fork else None
    if parent_dir is not None and not (parent_dir / layout.RUN_JSON).is_file():
        raise RunNotFoundError(
            f"fork_from: run {fork[0]!r} not found in project {project!r} under {str(root)!r}. "
            f"Run 'nuboard ls {project}' to list runs.")

    now_iso = runjson.now_iso()
    host = hostname()
    existing = None
    if run_id is not None:
        folder = runs / run_id
        existing = _read_run_json(folder, project) if (folder / layout.RUN_JSON).exists() else None
        if existing is None and resume == "must" and ranks.rank == 0:
            raise RunNotFoundError(
                f"Run {run_id!r} not found in project {project!r} under {str(root)!r}, and "
                f"resume='must' continues only an existing run. Use resume='auto' to create it, "
                f"or run 'nuboard ls {project}' to list runs.")
        if existing is not None and resume is None and ranks.rank == 0:
            raise RunExistsError(
                f"Run {run_id!r} already exists in project {project!r}: pass resume='must' to "
                "continue it, or leave run_id out to start a new run.")
    prefixes = _prefixes(existing, system_prefix, timing_prefix, parent_dir)
    if run_id is None:
        run_id, folder = _claim_new_folder(runs)     # the last check is done: now write
    doc = {
        "format": RUN_FORMAT,
        "id": run_id,
        "project": project,
        "name": run_name,
        "config": config_doc if config_doc is not None else {},
        "tags": tags or [],
        "notes": notes,
        "group": group,
        "host": host,
        "python": sys.version.split()[0],
        "platform": _platform(),
        "start_time": now_iso,
        "end_time": None,
        "status": "running",
        "prefixes": prefixes,
        "parent": {"run_id": fork[0], "step": fork[1], "project": project} if fork else None,
        "world_size": ranks.world_size,
        "sessions": [],
        "options": {"flush_interval": flush_interval, "heartbeat_interval": heartbeat_interval,
                    "compact": compact, "capture_env": capture_env,
                    "capture_console": capture_console, "system_metrics": list(groups),
                    "system_devices": list(devices) if devices is not None else None,
                    "system_interval": system_interval, "timing_all_ranks": timing_all_ranks},
    }
    if existing is not None:
        doc = _resumed_doc(existing, run_name=name_given, config=config_doc, tags=tags, notes=notes, group=group,
                           prefixes=prefixes, world_size=ranks.world_size)
    env_files = record_environment(plan, doc, code_dir) if ranks.rank == 0 else {}
    folder.mkdir(parents=True, exist_ok=True)
    if ranks.rank == 0:
        if existing is None:
            # Claim the run by creating run.json (atomic link) before anything else is written.
            expected = 1 if fork else _next_session(folder, 0)
            doc["sessions"].append(_session_entry(expected, now_iso, host))
            try:
                runjson.create_run(folder, doc)
            except FileExistsError:
                if resume != "auto":
                    raise RunExistsError(
                        f"Run {run_id!r} was just created by another process in project "
                        f"{project!r}: pass resume='auto' to join it.") from None
                existing = _read_run_json(folder, project)
                env = doc["env"]
                doc = _resumed_doc(existing, run_name=None, config=None, tags=None, notes=None,
                                   group=None, prefixes=prefixes, world_size=ranks.world_size)
                doc["env"] = env
            else:
                if fork:
                    from .fork import copy_history
                    copy_history(parent_dir, folder, fork[1])
                session = _claim_session(folder, 0)
                if session != expected:       # another process took that log: say which we got
                    provisional = doc["sessions"][-1]
                    doc = _record_session(folder, project, doc, doc,
                                          dict(provisional, session=session), provisional)
        if existing is not None:
            clean_stray_temps(folder)
            session = _claim_session(folder, 0)
            doc = _record_session(folder, project, existing, doc,
                                  _session_entry(session, now_iso, host))
    else:
        session = _claim_session(folder, ranks.rank)
        if existing is not None:
            doc = existing
    write_environment_files(folder, env_files)
    if launch is not None and ranks.rank == 0:
        from .launch import record_launch
        record_launch(launch[0], launch[1], run_id)
    reserved = (prefixes["system"], prefixes["timing"])
    heartbeat = None
    if ranks.rank == 0:
        heartbeat = Heartbeat(folder / layout.HEARTBEAT, heartbeat_interval, host, session)
        heartbeat.beat()
    meta = {"format": 1, "run_id": run_id, "project": project, "rank": ranks.rank,
            "local_rank": ranks.local_rank, "world_size": ranks.world_size, "session": session,
            "pid": os.getpid(), "host": host, "start_time": time.time()}
    run = Run(path=folder, doc=doc, rank=ranks.rank, session=session, reserved=reserved,
              last_steps=None if session > 0 else {}, flush_interval=flush_interval,
              heartbeat=heartbeat, compact=compact, meta=meta, timing_all_ranks=timing_all_ranks,
              start_step=fork[1] if fork else None)
    run._services = start_services(plan, run, interval=system_interval,
                                   prefix=prefixes["system"], folder=folder, session=session)
    return run


def _claim_new_folder(runs: Path) -> tuple[str, Path]:
    """A fresh run id whose folder this process created (mkdir is the atomic claim)."""
    runs.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        run_id = new_run_id()
        folder = runs / run_id
        try:
            folder.mkdir()
            return run_id, folder
        except FileExistsError:
            continue
    raise NuBoardError(f"could not claim a new run folder under {str(runs)!r}")


def _next_session(folder: Path, rank: int) -> int:
    taken = [s for _, s, _ in layout.list_logs(folder, rank)]
    return max(taken) + 1 if taken else 0


def _claim_session(folder: Path, rank: int) -> int:
    """Create this rank's next session log (O_EXCL, so two processes never share one)."""
    session = _next_session(folder, rank)
    while True:
        try:
            fd = os.open(folder / layout.log_name(rank, session),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            session += 1
            continue
        os.close(fd)
        return session


def _record_session(folder: Path, project: str, base: dict, mine: dict, entry: dict,
                    replaces: dict | None = None) -> dict:
    """Add this process's session to run.json under the run's lock; return what was written.

    The file is read again under the lock, so the sessions (and edits) that other processes
    wrote since this one read `base` are kept: onto the file as it is now go only the fields
    this process changed from `base`, its session `entry` (instead of `replaces`, its own
    provisional entry) and the status 'running'.
    """
    def add_session(current: dict) -> None:
        if not isinstance(current, dict):
            raise _not_an_object(folder, project)
        world_size = max(_count(current.get("world_size")), _count(mine.get("world_size")))
        sessions = current.get("sessions")
        sessions = [s for s in sessions if s != replaces] if isinstance(sessions, list) else []
        for key, value in mine.items():
            if key != "sessions" and (key not in base or base[key] != value):
                current[key] = value
        current["status"], current["end_time"] = "running", None
        current["world_size"] = world_size
        current["sessions"] = sessions + [entry]

    def unreadable(exc: Exception) -> dict:
        raise _unreadable(folder, project, exc) from None

    return runjson.update_run(folder, add_session, fallback=unreadable)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _session_entry(session: int, start: str, host: str) -> dict:
    return {"session": session, "start_time": start, "host": host, "pid": os.getpid()}


def _read_run_json(folder: Path, project: str) -> dict:
    try:
        doc = runjson.read_run(folder)
    except (OSError, ValueError) as exc:
        raise _unreadable(folder, project, exc) from None
    if not isinstance(doc, dict):
        raise _not_an_object(folder, project)
    return doc


def _unreadable(folder: Path, project: str, exc: Exception) -> NuBoardError:
    return NuBoardError(
        f"run.json of run {folder.name!r} in project {project!r} cannot be read ({exc}); "
        "fix or remove that file, or start a new run.")


def _not_an_object(folder: Path, project: str) -> NuBoardError:
    return NuBoardError(f"run.json of run {folder.name!r} in project {project!r} is not an object.")


def _prefixes(existing: dict | None, system_prefix: str | None, timing_prefix: str | None,
              parent_dir: Path | None) -> dict:
    before = (existing or {}).get("prefixes") or {}
    if not before and parent_dir is not None:
        try:
            before = runjson.read_run(parent_dir).get("prefixes") or {}
        except (OSError, ValueError, AttributeError):
            before = {}
    out = {}
    for key, given, default in (("system", system_prefix, RESERVED_DEFAULTS[0]),
                                ("timing", timing_prefix, RESERVED_DEFAULTS[1])):
        old = before.get(key)
        if existing is not None and given is not None and old is not None and given != old:
            raise InvalidArgumentError(
                f"{key}_prefix {given!r} differs from {old!r}, which this run already uses: "
                "pass the same value on every session and rank, or leave it out.")
        out[key] = given or old or default
    if out["system"] == out["timing"]:
        raise InvalidArgumentError(
            f"system_prefix and timing_prefix are both {out['system']!r}: they must differ.")
    return out


def _resumed_doc(existing: dict, *, run_name, config, tags, notes, group, prefixes,
                 world_size) -> dict:
    doc = dict(existing)
    for key, value in (("name", run_name), ("config", config), ("tags", tags), ("notes", notes),
                       ("group", group)):
        if value is not None:
            doc[key] = value
    doc["status"] = "running"
    doc["end_time"] = None
    doc["prefixes"] = prefixes
    doc["world_size"] = max(world_size, int(doc.get("world_size") or 1))
    return doc


def _platform() -> str:
    try:
        u = os.uname()
        return f"{u.sysname}-{u.release}-{u.machine}"
    except AttributeError:
        return sys.platform

