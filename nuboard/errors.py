"""The NuBoard error family: one base class, subclasses named for the condition."""
from __future__ import annotations


class NuBoardError(Exception):
    """Base of every error NuBoard raises on purpose."""


class InvalidNameError(NuBoardError, ValueError):
    """A project, run id, scalar name, tag or prefix breaks its naming rule."""


class InvalidArgumentError(NuBoardError, ValueError):
    """An argument has the right type but a value outside its rule."""


class InvalidTypeError(NuBoardError, TypeError):
    """An argument, config or logged value has a type NuBoard cannot take."""


class RunNotFoundError(NuBoardError, ValueError):
    """A run id named by the caller does not exist in the project."""


class RunExistsError(NuBoardError, ValueError):
    """A new run was asked for with a run id that is already taken."""


class RunFinishedError(NuBoardError, RuntimeError):
    """Something was logged to a run after finish()."""
