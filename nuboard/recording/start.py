"""nb.init: check every argument, then start, resume or fork a run on disk."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from nuboard.errors import (
    InvalidArgumentError,
    NuBoardError,
    RunExistsError,
    RunFolderError,
    RunNotFoundError,
)
from nuboard.eventlog.writer import Heartbeat
from nuboard.files import layout, runjson
from nuboard.files.jsonfile import clean_stray_temps
from nuboard.files.names import RESERVED_DEFAULTS, new_run_id
from nuboard.files.status import hostname

from .init_args import InitOptions, check_init_args, env_run_id_resume
from .process_hooks import defers_sigterm
from .ranks import detect_ranks
from .run import Run

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
    sync_to: str | None = None,
    sync_interval: float = 30.0,
) -> Run:
    """Start a run, or resume or fork one, in <dir>/<project>/runs/<run_id>/.

    Every argument is checked before anything is written. Then the run id is settled (in a
    multi-process launch without run_id, from the launch file), rank 0 claims the run by
    creating run.json (a new run) or adds its session to it (a resume), each process claims
    its own session log, and the Run starts its heartbeat (rank 0), event log writer and
    capture. The contract is spec/init.md and docs/api.md; in short:

    Args:
        project: the project folder; '/' nests ('team/llm'). Defaults to 'default'.
        run_name: a label shown in the viewer, not part of the id. Defaults to 'run'.
        config: a dict, dataclass, argparse.Namespace, OmegaConf config or object with
            to_dict(); kept nested in run.json.
        dir: the root folder; defaults to $NUBOARD_DIR, else ./experiments.
        tags, notes, group: labels for the Runs table and the query language.
        run_id: the run's id and folder name; defaults to $NUBOARD_RUN_ID, else
            <YYYYMMDDTHHMM>-<8 hex> (UTC).
        resume: 'must' continues run_id and fails when it is missing; 'auto' creates it
            when missing; defaults to $NUBOARD_RESUME (neither variable applies to a fork).
            A resumed run writes the next session file. Values given on resume
            (run_name, config, tags, notes, group) replace the stored ones. A run another
            live process writes is not resumed (liveness.py).
        fork_from: (run_id, step): a new run starting from a copy of that run's points up
            to step, for every rank.
        capture_env: on rank 0, record git (commit, branch, remote, dirty) and the GPUs in
            run.json's env, and files/git.patch, requirements.txt and command.txt; best
            effort. Off, a resumed run keeps what an earlier session recorded.
        code_dir: the folder of the training code whose git repository is recorded;
            defaults to the running script's folder, then the working directory.
        compact: write data.parquet at finish when pyarrow is installed.
        flush_interval: seconds between background writes of the event log.
        heartbeat_interval: seconds between liveness updates of the heartbeat file. A run
            is lost when its heartbeat is over two minutes and three intervals old.
        system_metrics: on LOCAL_RANK 0, log CPU, memory and GPU use as system/ scalars: True
            for all, False for none, or a list of groups out of 'cpu', 'memory', 'gpu'.
        system_devices: the devices the gpu group tracks ('cuda:0', a list, 'mps' on macOS,
            'all' or a torch.device); None tracks every GPU the process can use.
        system_interval: seconds between system samples.
        capture_console: on rank 0, copy stdout and stderr into files/output.log.
        timing_all_ranks: the default of run.timer's all_ranks (log timers on every rank).
        system_prefix, timing_prefix: the first segment of the run's own scalar names;
            defaults to what a resumed run used, else 'system' and 'timing'.
        sync_to: an object-store URL (s3://bucket/experiments; defaults to $NUBOARD_SYNC_TO)
            the run is pushed to from a background thread, in the layout of `nuboard sync
            push`, every sync_interval seconds and at finish (rank 0). Training never waits
            for it; a store that is down is one RuntimeWarning and a retry.
        sync_interval: seconds between those pushes.

    Returns:
        The Run; also a context manager that finishes it.

    Raises:
        ValueError: a name that is not a safe folder name (or a project segment such as
            'runs' that NuBoard uses inside a project), a dir that is a file or under one,
            resume='must' for a missing run, a new run whose id exists, a resume of a run
            another live process writes (RunExistsError, naming it), a missing fork parent,
            a fork step outside int64, an untrackable device, a sync_to that is no URL.
        TypeError: an argument or config of a type NuBoard cannot take.
        NuBoardError: the run.json of the run to resume cannot be read or is no object.
        RunFolderError (a NuBoardError and an OSError): the run folder cannot be created (a
            read-only or unpermitted root), naming it.
    """
    run_id, resume = env_run_id_resume(run_id, resume, fork_from)
    opts = check_init_args(
        project=project, run_name=run_name, config=config, dir=dir, tags=tags, notes=notes,
        group=group, run_id=run_id, resume=resume, fork_from=fork_from, capture_env=capture_env,
        code_dir=code_dir, compact=compact, flush_interval=flush_interval,
        heartbeat_interval=heartbeat_interval, system_metrics=system_metrics,
        system_devices=system_devices, system_interval=system_interval,
        capture_console=capture_console, system_prefix=system_prefix,
        timing_prefix=timing_prefix, timing_all_ranks=timing_all_ranks, sync_to=sync_to,
        sync_interval=sync_interval)   # every error first
    ranks = detect_ranks()
    store = _sync_store(opts.sync_to) if ranks.rank == 0 else None
    from nuboard.recording.capture.plan import Plan
    plan = Plan(groups=opts.groups, devices=opts.devices, capture_env=opts.capture_env,
                capture_console=opts.capture_console, ranks=ranks)
    runs = layout.runs_dir(opts.root, opts.project)
    run_id, resume, launch = _launch_run_id(opts, ranks, runs)
    parent_dir = _fork_parent(opts, runs)
    now_iso, host = runjson.now_iso(), hostname()
    existing = _existing(runs, run_id, resume, opts, ranks)
    guard = launch is None and run_id is not None   # a launch's own ranks and restarts join
    if guard:
        _refuse_live(runs / run_id, existing, opts, ranks)
    prefixes = _prefixes(existing, opts.system_prefix, opts.timing_prefix, parent_dir)
    if run_id is None:
        run_id, folder = _claim_new_folder(runs)     # the last check is done: now write
    else:
        folder = runs / run_id
    doc = _first_doc(opts, run_id, existing, prefixes, ranks, now_iso, host)
    session, doc = _claim(folder, doc, existing, resume, opts, ranks, plan, parent_dir,
                          prefixes, now_iso, host, guard)
    if launch is not None and ranks.rank == 0:
        from .launch import record_launch
        record_launch(launch.path, launch.key, run_id)
    run = _start_run(folder, doc, session, opts, ranks, plan, prefixes, host)
    if store is not None:
        from .sync_thread import start_sync
        run._sync = start_sync(store, opts.root, opts.project, run.id, opts.sync_interval)
    return run


def _sync_store(url: str | None):
    """The store sync_to names, opened before anything is written (MissingExtraError without
    the s3 extra; no request is made yet)."""
    if url is None:
        return None
    from nuboard.remote.store import open_store
    return open_store(url)


def _launch_run_id(opts: InitOptions, ranks, runs: Path) -> tuple[str | None, str | None, Any]:
    """The run id, resume mode and launch (launch.Launch) of this process.

    Without a run_id in a multi-process launch (not a fork), rank 0 starts a new run, or,
    when the launcher restarted the launch's workers, resumes the run this launch started;
    the other ranks wait for the run this launch's rank 0 recorded.
    """
    run_id, resume = opts.run_id, opts.resume
    if run_id is not None or ranks.world_size <= 1 or opts.fork:
        return run_id, resume, None
    from . import launch as launches
    launch = launches.find_launch(runs, ranks.rank, ranks.world_size)
    if ranks.rank == 0:
        run_id = launches.restarted_run(launch)
    else:
        run_id = launches.wait_for_launch(launch, ranks.rank)
    if run_id is not None:
        resume = "auto"
    return run_id, resume, launch


def _fork_parent(opts: InitOptions, runs: Path) -> Path | None:
    """The folder of the run fork_from names; RunNotFoundError when it has no run.json."""
    if not opts.fork:
        return None
    parent_dir = runs / opts.fork[0]
    if not (parent_dir / layout.RUN_JSON).is_file():
        raise RunNotFoundError(
            f"fork_from: run {opts.fork[0]!r} not found in project {opts.project!r} under "
            f"{str(opts.root)!r}. Run 'nuboard ls {opts.project}' to list runs.")
    return parent_dir


def _existing(runs: Path, run_id: str | None, resume: str | None, opts: InitOptions,
              ranks) -> dict | None:
    """The run.json of the run to resume, None for a new run; on rank 0, the resume checks."""
    if run_id is None:
        return None
    folder = runs / run_id
    existing = _read_run_json(folder, opts.project) if (folder / layout.RUN_JSON).exists() else None
    if existing is None and resume == "must" and ranks.rank == 0:
        raise RunNotFoundError(
            f"Run {run_id!r} not found in project {opts.project!r} under {str(opts.root)!r}, and "
            f"resume='must' continues only an existing run. Use resume='auto' to create it, "
            f"or run 'nuboard ls {opts.project}' to list runs.")
    if existing is not None and resume is None and ranks.rank == 0:
        raise RunExistsError(
            f"Run {run_id!r} already exists in project {opts.project!r}: pass resume='must' to "
            "continue it, or leave run_id out to start a new run.")
    return existing


def _refuse_live(folder: Path, existing: dict | None, opts: InitOptions, ranks) -> None:
    """RunExistsError when another live process writes this rank of the run (liveness.py)."""
    if existing is None and not folder.is_dir():
        return
    from .liveness import live_writer, refuse_live
    writer = live_writer(folder, existing, ranks.rank)
    if writer is not None:
        raise refuse_live(folder.name, opts.project, ranks.rank, writer)


def _first_doc(opts: InitOptions, run_id: str, existing: dict | None, prefixes: dict, ranks,
               now_iso: str, host: str) -> dict:
    """run.json as this process would write it: a new run's, or the resumed one's updated."""
    if existing is not None:
        return _resumed_doc(existing, run_name=opts.name_given, config=opts.config_doc,
                            tags=opts.tags, notes=opts.notes, group=opts.group,
                            prefixes=prefixes, world_size=ranks.world_size)
    fork = opts.fork
    return {
        "format": RUN_FORMAT,
        "id": run_id,
        "project": opts.project,
        "name": opts.run_name,
        "config": opts.config_doc if opts.config_doc is not None else {},
        "tags": opts.tags or [],
        "notes": opts.notes,
        "group": opts.group,
        "host": host,
        "python": sys.version.split()[0],
        "platform": _platform(),
        "start_time": now_iso,
        "end_time": None,
        "status": "running",
        "prefixes": prefixes,
        "parent": {"run_id": fork[0], "step": fork[1], "project": opts.project} if fork else None,
        "world_size": ranks.world_size,
        "sessions": [],
        "options": {"flush_interval": opts.flush_interval,
                    "heartbeat_interval": opts.heartbeat_interval,
                    "compact": opts.compact, "capture_env": opts.capture_env,
                    "capture_console": opts.capture_console, "system_metrics": list(opts.groups),
                    "system_devices": list(opts.devices) if opts.devices is not None else None,
                    "system_interval": opts.system_interval,
                    "timing_all_ranks": opts.timing_all_ranks},
    }


def _claim(folder: Path, doc: dict, existing: dict | None, resume: str | None,
           opts: InitOptions, ranks, plan, parent_dir: Path | None, prefixes: dict,
           now_iso: str, host: str, guard: bool) -> tuple[int, dict]:
    """Record the environment, claim the run (rank 0) and this process's session log;
    return (session, run.json as recorded). With `guard`, rank 0 joins a run only while no
    other live process writes it (judged again under the run's lock)."""
    from nuboard.recording.capture.plan import record_environment, write_environment_files
    fork = opts.fork
    env_files = record_environment(plan, doc, opts.code_dir) if ranks.rank == 0 else {}
    was_empty = not folder.exists() or not any(folder.iterdir())   # new, or claimed just now
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _folder_error(folder, exc) from exc
    if ranks.rank == 0:
        if existing is None:
            # Claim the run by creating run.json (atomic link) before anything else is written.
            expected = 1 if fork else _next_session(folder, 0)
            doc["sessions"].append(_session_entry(expected, now_iso, host))
            if fork:
                from .fork import parent_inputs
                doc["inputs"] = parent_inputs(parent_dir)
            try:
                runjson.create_run(folder, doc)
            except FileExistsError:
                if resume != "auto":
                    raise RunExistsError(
                        f"Run {folder.name!r} was just created by another process in project "
                        f"{opts.project!r}: pass resume='auto' to join it.") from None
                existing = _read_run_json(folder, opts.project)
                env = doc["env"]
                doc = _resumed_doc(existing, run_name=None, config=None, tags=None, notes=None,
                                   group=None, prefixes=prefixes, world_size=ranks.world_size)
                doc["env"] = env
            except OSError as exc:        # a full disk, EIO: no folder left without its run.json
                if was_empty:
                    with contextlib.suppress(OSError):
                        folder.rmdir()          # only while nothing is in it
                raise _folder_error(folder, exc) from exc
            else:
                if fork:
                    from .fork import copy_history
                    from .run_links import note_use
                    copy_history(parent_dir, folder, fork[1])
                    root = folder.parents[len(opts.project.split("/")) + 1]
                    for entry in doc["inputs"]:
                        note_use(root, opts.project, folder.name, entry)
                session = _claim_session(folder, 0)
                if session != expected:       # another process took that log: say which we got
                    provisional = doc["sessions"][-1]
                    doc = _record_session(folder, opts.project, doc, doc,
                                          dict(provisional, session=session), provisional)
        if existing is not None:
            if guard:
                _refuse_live(folder, existing, opts, ranks)
            clean_stray_temps(folder)
            doc = _record_session(folder, opts.project, existing, doc,
                                  lambda: _session_entry(_claim_session(folder, 0), now_iso, host),
                                  guard=guard)
            session = doc["sessions"][-1]["session"]
    else:
        session = _claim_session(folder, ranks.rank)
        if existing is not None:
            doc = existing
    write_environment_files(folder, env_files)
    return session, doc


def _start_run(folder: Path, doc: dict, session: int, opts: InitOptions, ranks, plan,
               prefixes: dict, host: str) -> Run:
    """The Run, with its heartbeat (rank 0), event log writer and capture services started."""
    from nuboard.recording.capture.plan import start_services
    heartbeat = None
    if ranks.rank == 0:
        heartbeat = Heartbeat(folder / layout.HEARTBEAT, opts.heartbeat_interval, host, session)
        heartbeat.beat()
    meta = {"format": 1, "run_id": folder.name, "project": opts.project, "rank": ranks.rank,
            "local_rank": ranks.local_rank, "world_size": ranks.world_size, "session": session,
            "pid": os.getpid(), "host": host, "start_time": time.time()}
    fork = opts.fork
    run = Run(path=folder, doc=doc, rank=ranks.rank, session=session,
              reserved=(prefixes["system"], prefixes["timing"]),
              last_steps=None if session > 0 else {}, flush_interval=opts.flush_interval,
              heartbeat=heartbeat, compact=opts.compact, meta=meta,
              timing_all_ranks=opts.timing_all_ranks, start_step=fork[1] if fork else None)
    run._services = start_services(plan, run, interval=opts.system_interval,
                                   prefix=prefixes["system"], folder=folder, session=session)
    return run


def _claim_new_folder(runs: Path) -> tuple[str, Path]:
    """A fresh run id whose folder this process created (mkdir is the atomic claim)."""
    try:
        runs.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            run_id = new_run_id()
            folder = runs / run_id
            try:
                folder.mkdir()
                return run_id, folder
            except FileExistsError:
                continue
    except OSError as exc:
        raise _folder_error(runs, exc) from exc
    raise NuBoardError(f"could not claim a new run folder under {str(runs)!r}")


def _folder_error(folder: Path, exc: OSError) -> RunFolderError:
    """The error of a run folder that cannot be made (a read-only or unpermitted root)."""
    where = f" at {exc.filename!r}" if exc.filename and str(exc.filename) != str(folder) else ""
    return RunFolderError(
        f"nb.init cannot create the run folder {str(folder)!r}: {exc.strerror or exc}{where}. "
        "Pass dir= (or set NUBOARD_DIR to) a folder this process can write to.")


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


def _record_session(folder: Path, project: str, base: dict, mine: dict,
                    entry: "dict | Callable[[], dict]", replaces: dict | None = None, *,
                    guard: bool = False) -> dict:
    """Add this process's session to run.json under the run's lock; return what was written.

    The file is read again under the lock, so the sessions (and edits) that other processes
    wrote since this one read `base` are kept: onto the file as it is now go only the fields
    this process changed from `base`, its session `entry` (instead of `replaces`, its own
    provisional entry) and the status 'running'. `entry` may be a function that claims the
    session log and returns the entry: called under the lock, after the `guard` check, so the
    process that gets the run holds the next session. With `guard`, RunExistsError when another
    live process has started a session of the run meanwhile (nothing is written or claimed).
    """
    def add_session(current: dict) -> None:
        if not isinstance(current, dict):
            raise _not_an_object(folder, project)
        if guard:
            from .liveness import live_writer, refuse_live
            writer = live_writer(folder, current, 0)
            if writer is not None:
                raise refuse_live(folder.name, project, 0, writer)
        world_size = max(_count(current.get("world_size")), _count(mine.get("world_size")))
        sessions = current.get("sessions")
        sessions = [s for s in sessions if s != replaces] if isinstance(sessions, list) else []
        for key, value in mine.items():
            if key != "sessions" and (key not in base or base[key] != value):
                current[key] = value
        current["status"], current["end_time"] = "running", None
        current["world_size"] = world_size
        current["sessions"] = sessions + [entry() if callable(entry) else entry]

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

