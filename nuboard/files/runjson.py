"""run.json, a run's record: the one module that reads and updates it.

An update is a read-modify-write under the run's lock (`.run.json.lock` beside run.json, flock),
so that the training process (resume, finish, artifact links) and outside editors (the viewer,
the CLI) never lose each other's change. The file is replaced atomically. Where the file system
has no locks (jsonfile.flock), updates go on unlocked: each is still whole, but two at once
may lose one of them. A new run.json is created exclusively (create_run), with or without hard
links.
"""
from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import documents
from .documents import read_document
from .jsonfile import flock, write_json_atomic
from .sigterm import defer_sigterm

RUN_JSON = "run.json"
RUN_LOCK = ".run.json.lock"

def now_iso() -> str:
    """Now in UTC as run.json writes every time: '2026-01-02T03:04:05.678Z' (milliseconds)."""
    now = time.time()                 # time, not datetime: `import nuboard` stays light
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


ERROR_MESSAGE_LIMIT = 2000       # characters of an exception's message kept in run.json


def error_record(exc: BaseException) -> dict:
    """run.json's `error` of a crashed run: {'type', 'message'}, the exception as the last line
    of its traceback names it ('ValueError', 'lr must be positive'; a class outside builtins
    and __main__ with its module, as in 'torch.OutOfMemoryError')."""
    cls = type(exc)
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", None) or cls.__name__
    if module not in (None, "builtins", "__main__"):
        name = f"{module}.{name}"
    try:
        message = str(exc)
    except Exception:                 # a __str__ that raises: what traceback itself prints
        message = "<exception str() failed>"
    return {"type": name, "message": message[:ERROR_MESSAGE_LIMIT]}


def read_run(folder: "str | os.PathLike[str]") -> Any:
    """The run.json of a run folder, read with run.json's rules (documents.RUN_JSON); raises
    OSError or ValueError when missing or not JSON."""
    return read_document(Path(folder) / RUN_JSON, documents.RUN_JSON)


@contextlib.contextmanager
def run_lock(folder: "str | os.PathLike[str]") -> Iterator[None]:
    """Hold the run's lock; without a writable folder, go on unlocked (nothing to race).

    SIGTERM is deferred while it is held: finishing on SIGTERM takes this lock too.
    """
    with defer_sigterm, flock(Path(folder) / RUN_LOCK, missing_ok=True):
        yield


def update_run(folder: "str | os.PathLike[str]", fn: Callable[[dict], Any], *,
               fallback: "dict | Callable[[Exception], dict] | None" = None) -> dict:
    """Read run.json, apply fn to the document in place, write it back; return the document.

    Under the run's lock. When run.json cannot be read, fn gets `fallback` instead: the
    caller's last copy, or what a function of the read error returns (or raises); without
    one, the OSError or ValueError is raised. When fn returns False nothing is written
    (there was nothing to change). Raises OSError when the write fails.
    """
    path = Path(folder) / RUN_JSON
    with run_lock(folder):
        try:
            doc = read_document(path, documents.RUN_JSON)
        except (OSError, ValueError) as exc:
            if fallback is None:
                raise
            doc = fallback(exc) if callable(fallback) else fallback
        if fn(doc) is not False:
            write_json_atomic(path, doc)
    return doc


def create_run(folder: "str | os.PathLike[str]", doc: dict) -> None:
    """Write a new run's run.json; raises FileExistsError when one is there already."""
    write_json_atomic(Path(folder) / RUN_JSON, doc, exclusive=True)
