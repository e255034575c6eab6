"""Import history from other trackers (TensorBoard, MLflow, W&B) as ordinary NuBoard runs.

    from nuboard import importers
    result = importers.tensorboard("./runs", "llm")            # an ImportResult
    result = importers.mlflow("sqlite:///mlflow.db", "llm", experiment="sweep")
    result.written, result.skipped, result.summary()

A second import of the same source writes nothing: a run is matched by run.json's `source`
({"tool", "uri", "key"}). A run that cannot be read exactly (a FIFO, a name that is not UTF-8,
a string tensor, a step past 2**63-1, ...) is skipped and listed in `result.unreadable` with the
reason; the others are imported. See docs/import.md. Importing this package imports neither
TensorBoard nor MLflow; each function imports its library (an extra) when called.
"""
from __future__ import annotations

import os

from .source_runs import ImportResult, ImportSourceError

__all__ = ["tensorboard", "mlflow", "wandb", "ImportResult", "ImportSourceError"]


def tensorboard(logdir: "str | os.PathLike[str]", project: str,
                dir: "str | os.PathLike[str] | None" = None, *, dry_run: bool = False,
                progress=None) -> ImportResult:
    """Import every folder of event files under `logdir` as one run of `project`: its scalars,
    images (the PNGs as stored), histograms and text.

    Args:
        logdir: the folder given to SummaryWriter(log_dir=...) or `tensorboard --logdir`.
        project: the NuBoard project the runs go to.
        dir: the root folder; defaults to $NUBOARD_DIR, else ./experiments.
        dry_run: find the runs and say which would be written; write nothing.
        progress: called as progress(done, total, key) before each run is written.

    Returns:
        An ImportResult: `written` (new run ids), `skipped` (runs imported before),
        `unreadable` (folders that cannot be read, with the reason), ...

    Raises:
        ImportSourceError: logdir is missing or holds no event file.
        MissingExtraError: the `tensorboard` package is not installed (nuboard[tensorboard]).
    """
    from .from_tensorboard import import_tensorboard
    return import_tensorboard(logdir, project, dir, dry_run=dry_run, progress=progress)


def mlflow(uri: "str | os.PathLike[str]", project: str, experiment: str | None = None,
           dir: "str | os.PathLike[str] | None" = None, *, dry_run: bool = False,
           artifacts: bool = False, progress=None) -> ImportResult:
    """Import the runs of an MLflow tracking store (every active experiment, or one) into `project`:
    params, tags, metrics, a nested run's parent, and from a local artifact folder the
    log_image images, log_table tables and log_text text (.txt and .md files). A run imported
    before is imported again, keeping its id, when it has ended or gained points since.

    Args:
        uri: a tracking URI: 'sqlite:///mlflow.db', an `mlruns` folder (or 'file:///.../mlruns'),
            a .db file, or a tracking server's http(s) URL.
        project: the NuBoard project the runs go to.
        experiment: the name of the one experiment to import; None for all of them.
        dir: the root folder; defaults to $NUBOARD_DIR, else ./experiments.
        dry_run: find the runs and say which would be written; write nothing.
        artifacts: record each run's local artifact folder as a reference version of the
            artifact 'mlflow-<experiment>' in `project`, produced by the imported run.
        progress: called as progress(done, total, key) before each run is written.

    Returns:
        An ImportResult (see nuboard.importers.source_runs.ImportResult).

    Raises:
        ImportSourceError: MLflow cannot open the URI, or the experiment is not there.
        MissingExtraError: the `mlflow` package is not installed (nuboard[mlflow]).
    """
    from .from_mlflow import import_mlflow
    return import_mlflow(uri, project, experiment, dir, dry_run=dry_run, artifacts=artifacts,
                         progress=progress)


def wandb(folder: "str | os.PathLike[str]", project: str,
          dir: "str | os.PathLike[str] | None" = None, *, dry_run: bool = False,
          progress=None) -> ImportResult:
    """Import every W&B run under `folder` (offline-run-* and synced run-* folders, each with its
    run-<id>.wandb file) into `project`: config, tags, notes, group, every history point at its
    step and time, the summary (run.json's summary), status and times, and the images and
    histograms whose files are in the run folder.

    Args:
        folder: a `wandb` folder (or a folder above one, or one run's folder).
        project: the NuBoard project the runs go to.
        dir: the root folder; defaults to $NUBOARD_DIR, else ./experiments.
        dry_run: find the runs and say which would be written; write nothing.
        progress: called as progress(done, total, key) before each run is written.

    Raises:
        ImportSourceError: the folder is missing or holds no run-*.wandb file.
        MissingExtraError: the `wandb` package (its record definitions) is not installed
            (nuboard[wandb]).
    """
    from .from_wandb import import_wandb
    return import_wandb(folder, project, dir, dry_run=dry_run, progress=progress)
