"""NuBoardLogger: a Lightning logger that records the trainer's metrics and hyperparameters in a
NuBoard run.

    from nuboard.integrations.lightning import NuBoardLogger
    trainer = Trainer(logger=NuBoardLogger(project="llm", run_name="baseline"))

Needs the `lightning` package (pip install 'nuboard[lightning]'). See docs/integrations.md.
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Any, Mapping

from nuboard.errors import import_extra
from nuboard.recording.run import Run
from nuboard.recording.run_config import to_config

from .checkpoints import CheckpointLog, checked_log_model, number
from .common import MetricLog, init_arguments, resume_arguments, start_run

_loggers = import_extra("lightning.pytorch.loggers", "lightning", "nuboard.integrations.lightning")
from lightning.pytorch.utilities.rank_zero import rank_zero_only  # noqa: E402  (after the check)

IMAGE_KWARGS = ("caption", "dataformats")
"""log_image's per-image lists NuBoard keeps; W&B's others (masks, boxes) are ignored."""

FINISHED = ("success", "finished")
"""Lightning's finalize statuses for a run that ended well ('finished' before a SLURM requeue);
any other ('failed') is 'crashed'."""


class NuBoardLogger(_loggers.Logger):
    """Logs a Lightning Trainer to one NuBoard run.

    Args:
        project, run_name, config, dir, tags, **init_kwargs: nb.init's arguments, checked now;
            the run starts at the first use of `experiment` (Lightning's setup, on every rank).
        log_model: as WandbLogger's: False records no checkpoint; True, once the fit has
            ended well, the best checkpoint and the last (as versions of the run's `model`
            artifact referencing the files); 'all' every checkpoint as it is saved (copies,
            the run still running), or True with ModelCheckpoint(save_top_k=-1) too.
        log_graph: True warns that NuBoard logs no model graph (WandbLogger's is not kept).

    save_dir and log_dir are the run folder, and name is '', so Lightning's ModelCheckpoint
    saves into <run folder>/<run id>/checkpoints/.

    log_hyperparams adds the hyperparameters to the run's config; log_metrics logs the
    metrics at the step Lightning gives, on rank 0 only (as Lightning's own loggers do), with
    names NuBoard refuses changed as common.scalar_name says. log_image, log_text and
    log_table take WandbLogger's arguments and log media (nb.Image, nb.Table) on rank 0. finalize ends the run as
    'finished' ('success') or 'crashed' ('failed', with the exception being handled); the
    logger's next log (trainer.test() after trainer.fit()) continues that run in a new session.

    Under DDP every rank joins the run (its session log holds what code on that rank logs
    through `experiment`); see docs/integrations.md.
    """

    def __init__(self, project: str | None = None, *, run_name: str | None = None, config: Any = None,
                 dir: "str | os.PathLike[str] | None" = None, tags: "list[str] | None" = None,
                 log_model: "bool | str" = False, log_graph: bool = False, **init_kwargs: Any):
        super().__init__()
        self._log_model = checked_log_model(log_model)
        if log_graph:
            warnings.warn("NuBoardLogger(log_graph=True): NuBoard keeps no model graph, so none "
                          "is logged (WandbLogger's log_graph is not supported).", RuntimeWarning,
                          stacklevel=2)
        self._arguments = init_arguments(project, run_name=run_name, config=config, dir=dir,
                                         tags=tags, **init_kwargs)
        self._checkpoints = CheckpointLog()
        self._checkpoint_callback: Any = None      # log_model=True: recorded at the end
        self._log: MetricLog | None = None         # the run being recorded, with its names
        self._ended: MetricLog | None = None       # the run finalize finished, until it goes on

    @property
    def experiment(self) -> Run:
        """The NuBoard Run, started at the first use; after finalize, the finished Run until
        the logger logs again."""
        if self._log is None and self._ended is not None:
            return self._ended.run
        return self._started().run

    def _started(self) -> MetricLog:
        """The run being recorded: a new one, or the finished one continued in a new session."""
        if self._log is None:
            arguments = self._arguments
            if self._ended is not None and self._ended.run.status == "crashed":
                self._ended = None       # a fit after a failed one (a notebook's next cell): a new run
            if self._ended is not None:
                arguments = resume_arguments(arguments, self._ended.run.id)
            self._log = MetricLog(start_run(arguments), "NuBoardLogger", self._ended)
            self._ended = None
        return self._log

    @property
    def name(self) -> str:
        """'': Lightning's ModelCheckpoint saves to <save_dir>/<name>/<version>/checkpoints,
        here <run folder>/<run id>/checkpoints (the project: experiment.project)."""
        return ""

    @property
    def save_dir(self) -> str:
        """The run folder (starts the run): Trainer.log_dir, and where checkpoints go."""
        return str(self.experiment.folder)

    @property
    def log_dir(self) -> str:
        """The run folder, as save_dir."""
        return self.save_dir

    @property
    def version(self) -> str:
        """The run id (starts the run)."""
        return self.experiment.id

    @rank_zero_only
    def log_hyperparams(self, params: "Mapping[str, Any] | Any", *args: Any, **kwargs: Any) -> None:
        """Add the hyperparameters (a dict or Namespace) to the run's config, over its keys."""
        added = to_config(params)
        self.experiment.update_record(lambda doc: doc.setdefault("config", {}).update(added))

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self._started().log(metrics, step)

    @rank_zero_only
    def log_image(self, key: str, images: list[Any], step: int | None = None, **kwargs: Any) -> None:
        """Log images under `key` at `step`, one entry each in the order given (WandbLogger's
        signature; W&B shows the list as a gallery, NuBoard as that key's entries at the step).

        images: a list of torch tensors, numpy arrays, PIL images, file paths or nb.Image.
        kwargs: lists of one item per image: caption, and dataformats (for tensors and arrays;
            TensorBoard's letters, e.g. "CHW"); W&B's others (masks, boxes, ...) are ignored
            with a warning. step None: the step of the latest metrics logged (see _media_step).
        Raises TypeError (images not a list) or ValueError (a kwargs list of another length),
        as WandbLogger does, and nb.Image's error for an image it refuses.
        """
        from nuboard.media.image import Image
        if not isinstance(images, list):
            raise TypeError(f'NuBoardLogger.log_image: expected a list as "images", found {type(images)}')
        for name, values in kwargs.items():
            if not isinstance(values, (list, tuple)) or len(values) != len(images):
                raise ValueError(f"NuBoardLogger.log_image: expected {len(images)} items for {name}, "
                                 f"found {len(values) if isinstance(values, (list, tuple)) else values!r}")
        ignored = sorted(set(kwargs) - set(IMAGE_KWARGS))
        if ignored:
            warnings.warn(f"NuBoardLogger.log_image: {', '.join(ignored)} not kept (NuBoard keeps "
                          f"{' and '.join(IMAGE_KWARGS)}).", RuntimeWarning, stacklevel=3)
        made = [image if isinstance(image, Image) else      # each checked before one is logged
                Image(image, **{k: kwargs[k][i] for k in IMAGE_KWARGS if k in kwargs})
                for i, image in enumerate(images)]
        self._log_media(key, made, step)

    @rank_zero_only
    def log_text(self, key: str, columns: list[str] | None = None, data: list[list[str]] | None = None,
                 dataframe: Any = None, step: int | None = None) -> None:
        """Log text as a table, as WandbLogger does: `columns` and `data` (rows), or a pandas
        `dataframe`; one nb.Table entry at `step` (None: see log_image)."""
        self.log_table(key, columns, data, dataframe, step)

    @rank_zero_only
    def log_table(self, key: str, columns: list[str] | None = None, data: list[list[Any]] | None = None,
                  dataframe: Any = None, step: int | None = None) -> None:
        """Log a table (WandbLogger's signature): `columns` and `data` (rows of numbers, text
        or nb.Image), or a pandas `dataframe`; one nb.Table entry at `step` (None: see log_image)."""
        from nuboard.media.table import Table
        table = Table(dataframe=dataframe) if dataframe is not None else Table(columns=columns, data=data)
        self._log_media(key, [table], step)

    def _log_media(self, key: str, entries: list, step: int | None) -> None:
        """Log entries under key (mapped as metric keys are) at one step."""
        log = self._started()
        name = log.name(key)
        run = log.run
        if step is None:
            step = self._media_step(run, name)
        for entry in entries:
            run.add_media(name, entry, step=step)

    @staticmethod
    def _media_step(run: Run, key: str) -> int:
        """The step of media logged without one: that of the latest metrics this session logged
        (Lightning's step, so images line up with the curves), else one past the key's last."""
        return run.step if run.step >= 0 else run._media_last(key) + 1

    @rank_zero_only
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Lightning saved a checkpoint: with log_model='all' (or True and save_top_k=-1) record
        it now, as a copy; with True, remember the callback for the end of the fit."""
        if self._log_model == "all" or (self._log_model is True and
                                         getattr(checkpoint_callback, "save_top_k", None) == -1):
            for path, meta in _checkpoints_of(checkpoint_callback):
                self._checkpoints.copy(self.experiment, path, meta)
        elif self._log_model is True:
            self._checkpoint_callback = checkpoint_callback

    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """Nothing: Lightning calls it at every fit; NuBoard keeps no model graph (asking for
        one, NuBoardLogger(log_graph=True), is a warning)."""

    def save(self) -> None:
        """Write what the run holds in memory now (Lightning calls it after each log_metrics)."""
        if self._log is not None:
            self._log.run.flush()

    def finalize(self, status: str) -> None:
        """End the run: 'finished' for Lightning's 'success', else 'crashed' (with the exception
        Lightning is handling, when there is one, in run.json's error)."""
        if self._log is None:
            return
        self._ended, self._log = self._log, None
        run = self._ended.run
        if status in FINISHED:
            run.finish("finished")
            callback, self._checkpoint_callback = self._checkpoint_callback, None
            if callback is not None:         # the fit is over: its files no longer change
                for path, meta in _checkpoints_of(callback):
                    self._checkpoints.reference(run, path, meta)
            return
        exc_type, exc, tb = sys.exc_info()
        if exc is None:
            run.finish("crashed")
        else:
            run.__exit__(exc_type, exc, tb)

    def __getstate__(self) -> dict:
        """A copy sent to another process (ddp_spawn) starts or joins the run there."""
        state = self.__dict__.copy()
        state["_log"] = state["_ended"] = None
        return state


def _checkpoints_of(callback: Any) -> list[tuple[str, dict]]:
    """The files a ModelCheckpoint holds now (its top k, the best and the last), oldest first,
    each with its metadata: step, score, monitor, and whether it is the best."""
    best = getattr(callback, "best_model_path", "") or ""
    scores = dict(getattr(callback, "best_k_models", {}) or {})
    paths = set(scores) | {p for p in (best, getattr(callback, "last_model_path", "") or "") if p}
    step = getattr(callback, "_last_global_step_saved", None)
    out = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        named = re.search(r"step=(\d+)", os.path.basename(path))     # Lightning's file names
        out.append((path, {"step": int(named.group(1)) if named else
                           (step if path == getattr(callback, "last_model_path", "") else None),
                           "score": number(scores.get(path)),
                           "monitor": getattr(callback, "monitor", None), "best": path == best}))
    out.sort(key=lambda item: os.path.getmtime(item[0]))
    return out
