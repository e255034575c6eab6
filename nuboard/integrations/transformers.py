"""NuBoardCallback: a Hugging Face Trainer callback that records training in a NuBoard run.

    from nuboard.integrations.transformers import NuBoardCallback
    trainer = Trainer(..., callbacks=[NuBoardCallback(project="llm")])

Needs the `transformers` package (pip install 'nuboard[transformers]'). See docs/integrations.md.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from nuboard.errors import import_extra
from nuboard.files.names import MAX_LABEL
from nuboard.recording.run import Run
from nuboard.recording.run_config import to_config

from .checkpoints import CheckpointLog, checked_log_model
from .common import MetricLog, init_arguments, resume_arguments, start_run

_callbacks = import_extra("transformers.trainer_callback", "transformers",
                          "nuboard.integrations.transformers")


_OPEN: "set[NuBoardCallback]" = set()
"""The callbacks of this process with a run open: one still open when a train() begins was left
by a train() that raised (no callback hears of that), as in a notebook's kernel."""


class AbandonedTrainError(RuntimeError):
    """run.json's error of a run whose train() raised: the next train() finished it."""


def scalar_key(key: str) -> str:
    """The name of a Trainer log key before the naming rule: 'eval_loss' is 'eval/loss', any
    other key goes under 'train/' ('loss' is 'train/loss', 'train_runtime' 'train/train_runtime')."""
    return "eval/" + key[5:] if key.startswith("eval_") else "train/" + key


class NuBoardCallback(_callbacks.TrainerCallback):
    """Records a Hugging Face Trainer in one NuBoard run.

    Args:
        project, run_name, config, dir, tags, **init_kwargs: nb.init's arguments, checked now.
            run_name defaults to TrainingArguments.run_name when that is set (and is not the
            output_dir); the run's config is `config` with 'args' (TrainingArguments.to_dict())
            and 'model' (the model's config.to_dict()) added.
        log_model: as W&B's: False records no checkpoint; True, when training ends, the best
            checkpoint folder (state.best_model_checkpoint, with load_best_model_at_end) and the
            last one, as versions of the run's `model` artifact referencing the folders; 'all'
            every checkpoint folder as the Trainer saves it (copies, the run still running).

    on_train_begin starts the run (every rank joins it; see docs/integrations.md); on_log
    logs each number of the dict at state.global_step on the world's main process, under
    'eval/' for 'eval_' keys and 'train/' for the others; on_train_end finishes the run. A log
    outside train() (trainer.evaluate() after it) continues the run in a session of its own.
    A hyperparameter search starts a run per trial.
    """

    def __init__(self, project: str | None = None, *, run_name: str | None = None, config: Any = None,
                 dir: "str | os.PathLike[str] | None" = None, tags: "list[str] | None" = None,
                 log_model: "bool | str" = False, **init_kwargs: Any):
        self._log_model = checked_log_model(log_model)
        self._checkpoints = CheckpointLog()
        self._last_checkpoint: str | None = None
        self._arguments = init_arguments(project, run_name=run_name, config=config, dir=dir,
                                         tags=tags, **init_kwargs)
        self._log: MetricLog | None = None         # the run being recorded, with its names
        self._ended: MetricLog | None = None       # the run this callback finished

    @property
    def run(self) -> Run | None:
        """The run: the one being recorded, else the one last finished; None before train()."""
        done = self._log or self._ended
        return done.run if done is not None else None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        for left in list(_OPEN):             # a train() that raised left its run open
            left._abandon()
        if state.is_hyper_param_search:
            self._ended = None
        if self._log is None:
            self._start(args, model)

    def _abandon(self) -> None:
        """Finish the open run as crashed: its train() raised before on_train_end (in a
        notebook the kernel lives on, so no exit hook finishes it)."""
        if self._log is None:
            return
        self._ended, self._log = self._log, None
        _OPEN.discard(self)
        error = AbandonedTrainError("train() raised before it ended; the next train() in this "
                                    "process finished the run")
        self._ended.run.__exit__(AbandonedTrainError, error, None)     # crashed, with the error
        self._ended = None                   # the next train() is a run of its own

    def on_log(self, args, state, control, logs: Mapping[str, Any] | None = None, model=None,
               **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        outside = self._log is None
        if outside:
            self._start(args, model)
        self._log.log({scalar_key(k): v for k, v in logs.items()}, state.global_step)
        if outside:
            self._finish()

    def on_save(self, args, state, control, **kwargs):
        """The Trainer saved output_dir/checkpoint-<step>: with log_model='all' record it now."""
        if not state.is_world_process_zero:
            return
        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        if not os.path.isdir(folder):
            return
        self._last_checkpoint = folder
        if self._log_model == "all" and self._log is not None:
            self._checkpoints.copy(self._log.run, folder, _meta(args, state, folder))

    def on_train_end(self, args, state, control, **kwargs):
        run = self._log.run if self._log is not None else None
        self._finish()
        if self._log_model is True and run is not None and state.is_world_process_zero:
            wanted = [state.best_model_checkpoint, self._last_checkpoint]
            for folder in dict.fromkeys(f for f in wanted if f and os.path.isdir(f)):
                self._checkpoints.reference(run, folder, _meta(args, state, folder))

    def _start(self, args, model) -> None:
        """Start the run, or continue the finished one in a new session, with args and the
        model's config as the config."""
        config = to_config(self._arguments["config"])
        config["args"] = args.to_dict()
        model_config = getattr(model, "config", None)
        if callable(getattr(model_config, "to_dict", None)):
            config["model"] = model_config.to_dict()
        if self._ended is None:
            run_name = self._arguments["run_name"]
            if run_name is None and str(args.run_name or "").strip() and args.run_name != args.output_dir:
                run_name = str(args.run_name)[:MAX_LABEL]
            arguments = dict(self._arguments, run_name=run_name, config=config)
        else:
            arguments = dict(resume_arguments(self._arguments, self._ended.run.id), config=config)
        self._log = MetricLog(start_run(arguments), "NuBoardCallback", self._ended)
        self._ended = None
        _OPEN.add(self)

    def _finish(self) -> None:
        if self._log is not None:
            self._ended, self._log = self._log, None
            _OPEN.discard(self)
            self._ended.run.finish("finished")


def _meta(args, state, folder: str) -> dict:
    """A checkpoint version's metadata: its step, the best score so far and what it measures,
    and whether this folder is the best."""
    step = folder.rsplit("checkpoint-", 1)[-1]
    at = int(step) if step.isdigit() else state.global_step
    return {"step": at, "score": _score_at(args, state, at), "monitor": args.metric_for_best_model,
            "best": bool(state.best_model_checkpoint) and
            os.path.realpath(folder) == os.path.realpath(state.best_model_checkpoint)}


def _score_at(args, state, step: int) -> float | None:
    """The monitored metric (metric_for_best_model) as the Trainer logged it at that step, the
    last evaluation at or before it; None without one."""
    name = args.metric_for_best_model
    if not name:
        return None
    key = name if name.startswith("eval_") else f"eval_{name}"
    found = None
    for entry in state.log_history:
        if entry.get("step", 0) <= step and isinstance(entry.get(key), (int, float)):
            found = float(entry[key])
    return found
