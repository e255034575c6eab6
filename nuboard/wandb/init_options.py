"""wandb.init's arguments as nb.init takes them: each from the argument, else from W&B's
environment variable (WANDB_PROJECT, WANDB_RUN_ID, WANDB_RESUME, WANDB_DIR, WANDB_MODE,
WANDB_NAME, WANDB_TAGS, WANDB_NOTES, WANDB_RUN_GROUP, WANDB_JOB_TYPE), checked before
anything is written."""
from __future__ import annotations

import os
from typing import Any, NamedTuple

from nuboard.errors import InvalidArgumentError

MODES = ("online", "offline", "disabled", "shared")
# W&B's resume values -> nb.init's: 'allow' and 'auto'/True resume when the run exists and
# create it when not; 'must' fails when it is missing; 'never'/False/None start a new run.
RESUME = {None: None, False: None, "never": None, True: "auto", "auto": "auto",
          "allow": "auto", "must": "must"}
REINIT = (None, False, True, "default", "return_previous", "finish_previous", "create_new")
# wandb.init arguments with nothing to do here: the server's, and wandb's own machinery's.
IGNORED = ("entity", "settings", "save_code", "anonymous", "allow_val_change", "force",
           "magic", "monitor_gym")
UNSUPPORTED = ("sync_tensorboard", "fork_from", "resume_from", "tensorboard")
# nb.init's own keywords, passed through (capture_console=False, system_metrics=False, ...).
NB_OPTIONS = ("capture_env", "capture_console", "system_metrics", "system_devices",
              "system_interval", "code_dir", "compact", "flush_interval", "heartbeat_interval",
              "system_prefix", "timing_prefix", "timing_all_ranks")


class Options(NamedTuple):
    project: str | None
    name: str | None
    config: dict | None
    tags: list | None
    notes: str | None
    group: str | None
    job_type: str | None
    run_id: str | None
    resume: str | None
    dir: str | None
    mode: str
    reinit: Any
    nb_options: dict


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def options(*, project, name, config, tags, notes, group, job_type, id, resume, dir, mode,
            reinit, config_exclude_keys, config_include_keys, extra: dict) -> Options:
    """The settled arguments; ValueError/TypeError naming a bad one (and its variable)."""
    from .unsupported import Unsupported
    for key in extra:
        if key in UNSUPPORTED:
            raise Unsupported(f"wandb.init({key}=...) is not supported by nuboard.wandb: log to "
                              "the run directly (nuboard imports TensorBoard logs: `nuboard import`).")
        if key not in IGNORED and key not in NB_OPTIONS:
            raise TypeError(f"wandb.init() got an unexpected keyword argument {key!r}")
    if mode is None:
        mode = _env("WANDB_MODE") or "online"
        if (_env("WANDB_DISABLED") or "").lower() in ("true", "1", "yes"):
            mode = "disabled"
        what = "WANDB_MODE"
    else:
        what = "mode"
    if mode == "dryrun":
        mode = "offline"
    if mode == "run":
        mode = "online"
    if mode not in MODES:
        raise InvalidArgumentError(f"{what} {mode!r:.60} is not one of {', '.join(map(repr, MODES))}: "
                                   "'disabled' logs nothing; the others write the run's files.")
    if resume is None and _env("WANDB_RESUME") is not None:
        resume, what = _env("WANDB_RESUME"), "WANDB_RESUME"
        resume = {"true": True, "false": False}.get(resume.lower(), resume)
    else:
        what = "resume"
    try:
        nb_resume = RESUME[resume]
    except (KeyError, TypeError):
        raise InvalidArgumentError(
            f"{what} {resume!r:.60} is not one of 'allow', 'must', 'never', 'auto', True or False: "
            "'allow' continues the run of that id or starts it, 'must' only continues it.") from None
    if reinit not in REINIT:
        raise InvalidArgumentError(f"reinit {reinit!r:.60} is not one of {', '.join(map(repr, REINIT))}")
    tags = tags if tags is not None else _split(_env("WANDB_TAGS"))
    if isinstance(tags, str):
        raise InvalidArgumentError(f"tags {tags!r:.60} is a str: give a list of tags, such as [{tags!r:.40}]")
    if config is not None:
        from nuboard.recording.run_config import to_config
        config = to_config(config)
        if config_include_keys:
            config = {k: v for k, v in config.items() if k in config_include_keys}
        if config_exclude_keys:
            config = {k: v for k, v in config.items() if k not in config_exclude_keys}
    return Options(project=project or _env("WANDB_PROJECT"), name=name or _env("WANDB_NAME"),
                   config=config, tags=list(tags) if tags is not None else None,
                   notes=notes if notes is not None else _env("WANDB_NOTES"),
                   group=group if group is not None else _env("WANDB_RUN_GROUP"),
                   job_type=job_type if job_type is not None else _env("WANDB_JOB_TYPE"),
                   run_id=id if id is not None else _env("WANDB_RUN_ID"), resume=nb_resume,
                   dir=os.fspath(dir) if dir is not None else _dir_default(), mode=mode,
                   reinit=reinit, nb_options={k: v for k, v in extra.items() if k in NB_OPTIONS})


def _split(text: str | None) -> list | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _dir_default() -> str | None:
    """$NUBOARD_DIR wins over $WANDB_DIR (nb.init reads NUBOARD_DIR itself)."""
    if _env("NUBOARD_DIR"):
        return None
    return _env("WANDB_DIR")
