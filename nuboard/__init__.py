"""NuBoard: a local-first experiment tracker.

    import nuboard as nb
    with nb.init("llm", config={"lr": 3e-4}) as run:
        run.add_scalar("train/loss", 0.25, step=1)

`import nuboard` stays light: it imports no viewer, catalog or CLI library.
"""
from __future__ import annotations

from .errors import (InvalidArgumentError, InvalidNameError, InvalidTypeError, NuBoardError,
                     RunExistsError, RunFinishedError, RunNotFoundError)
from .run import Run
from .scalars import RunReader, Scalar, read_scalars
from .start import init
from .status import HeartbeatWatch, run_status

__version__ = "0.1.0"

__all__ = [
    "init", "Run", "read_scalars", "RunReader", "Scalar", "run_status", "HeartbeatWatch",
    "NuBoardError", "InvalidNameError", "InvalidArgumentError", "InvalidTypeError",
    "RunNotFoundError", "RunExistsError", "RunFinishedError", "__version__",
]
