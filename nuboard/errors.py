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


class RunFolderError(NuBoardError, OSError):
    """A run's folder cannot be made or written (a read-only or unpermitted root)."""


class RunFinishedError(NuBoardError, RuntimeError):
    """Something was logged to a run after finish()."""


class StorageError(NuBoardError, OSError):
    """An object store (s3://, gs://, any fsspec URL) refused or failed a request: the message is
    one line naming the URL and what to do (credentials, bucket, endpoint)."""


class SyncConflictError(NuBoardError, ValueError):
    """`nuboard sync` (or sync_to): a run (or artifact version) of one id is another run on the
    other side: the bucket's run.json and the local one describe different runs (another start
    time or host), so neither side is overwritten. The message names each one refused; the
    rest was copied."""


class MissingExtraError(NuBoardError, ImportError):
    """A feature needs a library of an optional extra that is not installed."""


def import_extra(module: str, extra: str, feature: str):
    """The module `module`, or MissingExtraError naming the `pip install` that brings it.

        tb = import_extra("tensorboard", "tensorboard", "nuboard import tensorboard")
    """
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{feature} needs the {module.split('.')[0]!r} package, which is not installed here: "
            f"pip install 'nuboard[{extra}]' ({exc})") from exc


class QueryWarning(UserWarning):
    """A query that parses but names a key no run has, or a lowercase `and`/`or` that is
    most likely meant as the operator (docs/query.md, "Warnings"): nb.runs, nb.history and
    nb.media warn it and still run the query."""
