"""`nuboard import tensorboard|mlflow|wandb`: history from other trackers, as ordinary runs."""
from __future__ import annotations

import json
from pathlib import Path

import click

from .completion import complete_project
from .options import debug_option, dir_option
from .progress_bar import with_bar


@click.group("import")
def import_() -> None:
    """Import runs from TensorBoard event files, MLflow or W&B run folders.

    A second import of the same source writes nothing: each run remembers where it came
    from. See docs/import.md.

    \b
    Example:
      nuboard import tensorboard ./runs --project llm
      nuboard import mlflow sqlite:///mlflow.db --project llm --experiment sweep
    """


def _common(command):
    """--project, --dry-run, --json, --dir, --debug."""
    for option in (
        debug_option,
        dir_option,
        click.option("--json", "as_json", is_flag=True, help="Print the summary as a JSON object."),
        click.option("--dry-run", is_flag=True, help="Say which runs would be imported; write nothing."),
        click.option("--project", "-p", required=True, metavar="P", shell_complete=complete_project,
                     help="The NuBoard project the runs go to ('llm', 'team/llm')."),
    ):
        command = option(command)
    return command


@import_.command("tensorboard", short_help="Import TensorBoard event files as runs.")
@click.argument("logdir", type=click.Path(path_type=Path))
@_common
def tensorboard(logdir: Path, project: str, dry_run: bool, as_json: bool, root: Path) -> None:
    """Import every folder under LOGDIR that holds events.out.tfevents.* files as one run,
    named after the folder.

    Every scalar point is kept with its step and wall time, and so are images (the PNGs as
    stored), histograms and text; the HParams plugin's values are the config; the run starts
    and ends with its events, status finished. Audio and other plugins are left out, with a
    note per kind. Runs imported
    before are left as they are. A progress bar on a terminal, then one line: what was
    imported and what was there already.

    \b
    Example:
      nuboard import tensorboard ./runs --project llm
      nuboard import tensorboard ./lightning_logs -p llm --dry-run
    """
    from nuboard.importers import tensorboard as run_import
    _report(with_bar("Importing", lambda progress: run_import(logdir, project, dir=root, dry_run=dry_run,
                                                  progress=progress)), as_json)


@import_.command("mlflow", short_help="Import MLflow runs.")
@click.argument("tracking_uri")
@click.option("--experiment", "-e", metavar="NAME", help="Only the runs of this experiment.")
@click.option("--artifacts", is_flag=True,
              help="Record each run's artifact folder as a reference artifact version.")
@_common
def mlflow(tracking_uri: str, experiment: str | None, artifacts: bool, project: str, dry_run: bool,
           as_json: bool, root: Path) -> None:
    """Import the runs of an MLflow tracking store: a sqlite:/// database, an mlruns folder
    (no MLFLOW_ALLOW_FILE_STORE needed) or a tracking server's URL.

    Each run keeps its params (the config), tags, status, times and the full history of
    every metric; log_image images (per key and step), log_table tables and log_text text
    (at step 0) come from a local artifact folder; the experiment is its group; a nested
    run keeps its parent. With --artifacts, log_input datasets and MLflow 3 logged models on
    local paths become reference versions too. Runs imported before are left as they are,
    except a run that was still RUNNING and has ended since, or that gained metrics, params
    or tags, which is imported again keeping its id. MLflow's own log lines are kept off the
    terminal (notes instead). A progress bar on a terminal, then one line: what was imported
    and what was there already.

    \b
    Example:
      nuboard import mlflow sqlite:///mlflow.db --project llm
      nuboard import mlflow ./mlruns -p llm --experiment sweep --artifacts
    """
    from nuboard.importers import mlflow as run_import
    _report(with_bar("Importing", lambda progress: run_import(tracking_uri, project, experiment, dir=root,
                                                  dry_run=dry_run, artifacts=artifacts,
                                                  progress=progress)), as_json)


@import_.command("wandb", short_help="Import W&B run folders (offline or synced).")
@click.argument("folder", type=click.Path(path_type=Path))
@_common
def wandb(folder: Path, project: str, dry_run: bool, as_json: bool, root: Path) -> None:
    """Import every W&B run under FOLDER (a `wandb` folder of offline-run-* and synced run-*
    folders) as one run each, read from its run-<id>.wandb file.

    Each run keeps its config, tags, notes, group, host, times and status (exit code 0:
    finished, else crashed; no exit record: running), every history point at its step and
    time, and the summary (shown on the run page); images and histograms become media where
    their files are in the run folder. Needs the wandb package for its record definitions
    (pip install 'nuboard[wandb]'). Runs imported before are left as they are, except one
    that was running and has ended since.

    \b
    Example:
      nuboard import wandb ./wandb --project llm
      nuboard import wandb ./wandb -p llm --dry-run
    """
    from nuboard.importers import wandb as run_import
    _report(with_bar("Importing", lambda progress: run_import(folder, project, dir=root, dry_run=dry_run,
                                                  progress=progress)), as_json)


def _report(result, as_json: bool) -> None:
    """A line for each run skipped and each note on stderr, then the summary line (or the JSON
    object) on stdout."""
    command = f"nuboard import {result.tool}"
    for bad in result.unreadable:
        what = "experiment folder" if bad["kind"] == "experiment" else "run"
        click.echo(" ".join(f"{command}: skipped {what} '{bad['key']}': {bad['reason']}".split()),
                   err=True)
    for note in result.notes:
        click.echo(" ".join(f"{command}: note: {note}".split()), err=True)
    if as_json:
        click.echo(json.dumps({**result.as_dict(), "summary": result.summary()}, indent=2,
                              ensure_ascii=False))
    else:
        click.echo(result.summary())
