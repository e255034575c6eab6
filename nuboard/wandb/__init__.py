"""W&B's everyday API on NuBoard runs: switch a script with one line.

    import nuboard.wandb as wandb

    run = wandb.init(project="llm", name="baseline", config={"lr": 3e-4}, tags=["base"])
    wandb.config.update({"batch": 64})
    for step in range(100):
        wandb.log({"train/loss": loss, "samples": wandb.Image(array)})
    run.summary["best"] = 0.93
    wandb.finish()

init, log, config, summary, define_metric, alert, finish, the run's id, name, dir, project and
url, and the media types Image, Histogram, Table, Audio and Html work as in W&B, on the files of
an nb.init run (docs/integrations.md, "Switch from W&B in one line"). Anything else of W&B
raises one NotImplementedError naming the call. Nothing here is imported by `import nuboard`.
"""
from __future__ import annotations

import atexit
import enum
from typing import Any

from .unsupported import unsupported
from .wrapped_run import AlertWarning, WandbRun

run: "WandbRun | None" = None
"""The current run (what wandb.init returned last), None before init and after finish."""

_MEDIA = ("Image", "Histogram", "Table", "Audio", "Html")
_open: "list[WandbRun]" = []         # this process's unfinished runs, flushed at exit
_exit_hook = False


class Error(RuntimeError):
    """wandb.Error: a call that needs a run before wandb.init."""


class AlertLevel(str, enum.Enum):
    """wandb.AlertLevel.INFO / WARN / ERROR."""
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


def init(project: str | None = None, *, name: str | None = None, config: Any = None,
         tags: Any = None, notes: str | None = None, group: str | None = None,
         job_type: str | None = None, id: str | None = None, resume: Any = None,
         dir: Any = None, mode: str | None = None, reinit: Any = None,
         config_exclude_keys: Any = None, config_include_keys: Any = None,
         **kwargs: Any) -> WandbRun:
    """Start (or resume) a run as wandb.init does, on nb.init.

    project, name, config, tags, notes, group: as nb.init's project, run_name, config, tags,
    notes and group (config is written to run.json; later changes through wandb.config too).
    id, resume: nb.init's run_id and resume; W&B's 'allow' (and 'auto', True) continues the
    run of that id or starts it, 'must' only continues it, 'never'/False/None starts a new run.
    dir: the experiments folder (nb.init's dir). mode: 'disabled' logs nothing and returns a
    run whose calls do nothing; 'online' and 'offline' both write the local files.
    reinit: while a run is open, None/False/'return_previous' give it back, True/
    'finish_previous' finish it first, 'create_new' starts another beside it.
    job_type is kept in run.json. Without an argument, W&B's variables are read: WANDB_PROJECT,
    WANDB_NAME, WANDB_RUN_ID, WANDB_RESUME, WANDB_DIR (after NUBOARD_DIR), WANDB_MODE,
    WANDB_TAGS (comma-separated), WANDB_NOTES, WANDB_RUN_GROUP, WANDB_JOB_TYPE. entity,
    settings and save_code are accepted and have no effect (there is no server); nb.init's
    own keywords (capture_console=False, system_metrics=False, ...) are passed to it.
    """
    global run
    from .init_options import options
    opts = options(project=project, name=name, config=config, tags=tags, notes=notes,
                   group=group, job_type=job_type, id=id, resume=resume, dir=dir, mode=mode,
                   reinit=reinit, config_exclude_keys=config_exclude_keys,
                   config_include_keys=config_include_keys, extra=kwargs)
    if run is not None and not run._finished:
        if opts.reinit in (None, False, "default", "return_previous"):
            return run
        if opts.reinit in (True, "finish_previous"):
            run.finish()
    new = _disabled(opts) if opts.mode == "disabled" else _start(opts)
    run = new
    return new


def _disabled(opts) -> WandbRun:
    from nuboard.files.names import new_run_id
    doc = {"id": opts.run_id or new_run_id(), "name": opts.name or "run", "config": opts.config or {}}
    return WandbRun(None, mode="disabled", project=opts.project or "default", doc=doc, start_step=0)


def _start(opts) -> WandbRun:
    global _exit_hook
    import nuboard as nb

    from .wrapped_run import earlier_last_step
    nb_run = nb.init(opts.project, run_name=opts.name, tags=opts.tags, notes=opts.notes,
                     group=opts.group, run_id=opts.run_id, resume=opts.resume, dir=opts.dir,
                     **opts.nb_options)
    if not _exit_hook:              # after nb.init's own: atexit runs this one first
        atexit.register(_flush_at_exit)
        _exit_hook = True
    doc = dict(nb_run._doc)
    wrapped = WandbRun(nb_run, mode=opts.mode, project=nb_run.project, doc=doc,
                       start_step=earlier_last_step(nb_run), resumed=nb_run.session > 0)
    if opts.config:
        wrapped.config.update(opts.config)
    if opts.job_type is not None:
        job_type = str(opts.job_type)
        nb_run.update_record(lambda d: d.__setitem__("job_type", job_type))
    _open.append(wrapped)
    return wrapped


def _forget(finished: WandbRun) -> None:
    """A run finished: no longer flushed at exit, and no longer wandb.run."""
    global run
    if finished in _open:
        _open.remove(finished)
    if run is finished:
        run = None


def _flush_at_exit() -> None:
    """At exit, before NuBoard finishes the runs (finished, or crashed after an uncaught
    exception): write each open run's pending row and summary."""
    for wrapped in list(_open):
        try:
            wrapped._flush_end()
        except Exception:
            pass


def _current(what: str) -> WandbRun:
    if run is None:
        raise Error(f"wandb.{what}: call wandb.init() first.")
    return run


def log(data: Any, step: int | None = None, commit: bool | None = None, sync: Any = None) -> None:
    """wandb.log on the current run (WandbRun.log)."""
    _current("log").log(data, step=step, commit=commit)


def define_metric(name: str, step_metric: str | None = None, **kwargs: Any) -> dict:
    """wandb.define_metric on the current run (WandbRun.define_metric)."""
    return _current("define_metric").define_metric(name, step_metric, **kwargs)


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
    """wandb.alert on the current run: a warning, and a record in run.json's alerts."""
    _current("alert").alert(title, text, level, wait_duration)


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the current run (exit_code not 0: as crashed); nothing when there is none."""
    if run is not None:
        run.finish(exit_code)


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: runs are local files. Returns True, as a login that worked."""
    return True


def __getattr__(name: str) -> Any:
    if name in _MEDIA:
        from . import media
        value = getattr(media, name)
        globals()[name] = value
        return value
    if name in ("config", "summary"):
        return getattr(_current(name), name)
    if name.startswith("__"):
        raise AttributeError(name)
    raise unsupported(f"wandb.{name}", name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MEDIA) | {"config", "summary"})


__all__ = ["init", "log", "finish", "define_metric", "alert", "login", "run",
           "Image", "Histogram", "Table", "Audio", "Html", "AlertLevel", "AlertWarning", "Error"]
