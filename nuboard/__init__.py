"""NuBoard: a local-first experiment tracker.

    import nuboard as nb
    with nb.init("llm", config={"lr": 3e-4}) as run:
        run.add_scalar("train/loss", 0.25, step=1)

`import nuboard` stays light: it imports no viewer, catalog or CLI library.
"""
from __future__ import annotations

import importlib

from nuboard.eventlog.reader import RunReader, Scalar
from nuboard.eventlog.source import read_media, read_scalars
from nuboard.files.status import HeartbeatWatch, run_status
from nuboard.recording.run import Run
from nuboard.recording.start import init

from .errors import (
    InvalidArgumentError,
    InvalidNameError,
    InvalidTypeError,
    NuBoardError,
    QueryWarning,
    RunExistsError,
    RunFinishedError,
    RunFolderError,
    RunNotFoundError,
    StorageError,
    SyncConflictError,
)

__version__ = "0.1.0"

# The media kinds load on first use (nb.Image, from nuboard import Table): their modules are a
# third of what `import nuboard` would compile where no bytecode is cached (14 ms of 54).
_MEDIA = {"Image": "image", "Histogram": "histogram", "Text": "text", "Table": "table", "Audio": "audio"}


def __getattr__(name: str):
    kind = _MEDIA.get(name)
    if kind is None:
        raise AttributeError(f"module 'nuboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"nuboard.media.{kind}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MEDIA))


def add_artifact(project, name, path, *, type="other", metadata=None, reference=False,
                 checksum=False, description=None, dir=None):
    """Add a version of an artifact outside a run ("Logged outside a run").

        nb.add_artifact("datasets", "imagenet-100", "/data/imagenet-100", type="dataset",
                        metadata={"classes": 100}, reference=True)

    See nuboard.artifacts.add_artifact for every argument; run.add_artifact records a producer.
    """
    from .artifacts import add_artifact as _add
    return _add(project, name, path, type=type, metadata=metadata, reference=reference,
                checksum=checksum, description=description, dir=dir)


def get_artifact(spec, *, project=None, dir=None):
    """Find a version without recording its use: nb.get_artifact("datasets/fineweb-edu:v2")."""
    from .artifacts import get_artifact as _get
    return _get(spec, project=project, dir=dir)


def runs(project, query=None, dir=None, hidden=False):
    """The project's runs that a query matches, newest first, as a sequence of records with
    .to_arrow() and .to_pandas() (one row a run):

        table = nb.runs("llm", query="tag:baseline lr>=1e-3").to_arrow()
        df = nb.runs("llm").to_pandas()            # needs pandas (pip install 'nuboard[pandas]')
        best = min(nb.runs("llm"), key=lambda r: r.scalars["val/loss"]["min"])

    The catalog is brought up to date from the run folders first (as `nuboard ls` does; a
    damaged or half-written run folder is left out). The columns: project, id, name, status,
    created, ended (UTC timestamps), duration (float seconds), tags (a list), group, host,
    notes, then config.<key> for each flattened config key (typed per column: bool, int64,
    float64 or string; mixed kinds as string), then <name>.last, <name>.min and <name>.max
    for each scalar logged by rank 0 (docs/tables.md).

    Args:
        project: the project's name ('llm', 'team/llm').
        query: the query language of docs/query.md; None or blank for every run.
        dir: the experiments folder (default $NUBOARD_DIR, else ./experiments).
        hidden: False (the default) leaves out the runs hidden in the viewer (`nuboard up
            --edit-runs`; the project's hidden.json), True gives only those, None every run.

    Returns:
        nuboard.tables.Runs: len(), iteration and indexing give RunRecord objects (id, name,
        status, created, duration, tags, group, config, scalars, path, ...).

    Raises:
        ProjectNotFoundError (a ValueError): the project has no runs/ folder under dir.
        QuerySyntaxError (a ValueError): the query does not parse.
        InvalidNameError, InvalidTypeError: a bad project name, a query that is not a str.
    """
    return importlib.import_module("nuboard.tables").runs(project, query, dir, hidden)


def history(project, keys=None, query=None, rank=0, dir=None):
    """Every logged point of the runs a query matches, as a pyarrow.Table in long form:
    project, run_id, rank, key, step, wall_time (epoch seconds), value; one row a point.

        table = nb.history("llm", keys=["train/loss", "val/*"], query="tag:baseline")
        df = table.to_pandas()                     # needs pandas
        wide = df.pivot_table(index="step", columns="run_id", values="value")

    Runs come newest first, each run's keys in the order first logged, each key's points
    by step. A finished run is read from its data.parquet, a running run (or one without a
    current data.parquet) from its event logs, as nb.read_scalars does. The catalog is
    brought up to date first, as for nb.runs.

    Args:
        project: the project's name ('llm', 'team/llm').
        keys: the scalar names wanted (a str is one name); an entry with *, ? or [...] is a
            glob (case-sensitive; * crosses '/': 'train/*'); None for every scalar.
        query: the query language of docs/query.md; None or blank for every run.
        rank: which rank's points (runs without that rank add no rows).
        dir: the experiments folder (default $NUBOARD_DIR, else ./experiments).

    Raises:
        ProjectNotFoundError (a ValueError): the project has no runs/ folder under dir.
        QuerySyntaxError (a ValueError): the query does not parse.
        InvalidTypeError, InvalidArgumentError: keys or rank of the wrong type, a negative rank.
    """
    return importlib.import_module("nuboard.tables").history(project, keys, query, rank, dir)


def media(project, keys=None, query=None, rank=0, dir=None):
    """Every media entry of the runs a query matches, as a pyarrow.Table (one row an entry,
    run_id first), as nb.read_media gives them per run:

        table = nb.media("vision", keys=["val/samples"], query="tag:baseline")

    Args are those of nb.history (keys are media keys, globs allowed). docs/tables.md lists the
    columns.
    """
    return importlib.import_module("nuboard.tables.media_table").media(project, keys, query, rank, dir)


__all__ = [
    "init", "Run", "add_artifact", "get_artifact", "read_scalars", "read_media", "runs", "history", "media", "show",
    "RunReader", "Scalar", "Image", "Histogram", "Text", "Table", "Audio",
    "run_status", "HeartbeatWatch",
    "NuBoardError", "InvalidNameError", "InvalidArgumentError", "InvalidTypeError", "QueryWarning",
    "RunNotFoundError", "RunExistsError", "RunFinishedError", "RunFolderError", "StorageError",
    "SyncConflictError",
    "__version__",
]


def show(project=None, dir=None, height=600):
    """In a notebook: start a viewer of the experiments folder in the background (once per
    kernel, on a free loopback port) and show the project's Runs page inline (an IPython
    IFrame; the URL outside IPython). A run shown in a cell then links to its page there.

    Raises:
        RuntimeError: the viewer did not start.
    """
    return importlib.import_module("nuboard.notebook").show(project, dir=dir, height=height)
