"""NuBoard: a local-first experiment tracker.

    import nuboard as nb
    with nb.init("llm", config={"lr": 3e-4}) as run:
        run.add_scalar("train/loss", 0.25, step=1)

`import nuboard` stays light: it imports no viewer, catalog or CLI library.
"""
from __future__ import annotations

from nuboard.eventlog.reader import RunReader, Scalar
from nuboard.eventlog.source import read_scalars
from nuboard.files.status import HeartbeatWatch, run_status
from nuboard.recording.run import Run
from nuboard.recording.start import init

from .errors import (
    InvalidArgumentError,
    InvalidNameError,
    InvalidTypeError,
    NuBoardError,
    RunExistsError,
    RunFinishedError,
    RunNotFoundError,
)

__version__ = "0.1.0"


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

__all__ = [
    "init", "Run", "add_artifact", "get_artifact", "read_scalars", "RunReader", "Scalar", "run_status",
    "HeartbeatWatch",
    "NuBoardError", "InvalidNameError", "InvalidArgumentError", "InvalidTypeError",
    "RunNotFoundError", "RunExistsError", "RunFinishedError", "__version__",
]
