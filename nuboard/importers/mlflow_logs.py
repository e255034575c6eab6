"""MLflow's own log lines and warnings, kept off the terminal while an import reads a store.

MLflow writes to its `mlflow` logger (a handler of its own on stderr), to the root logger
(`logging.warning("Malformed run ...", exc_info=True)` in its file store: a traceback per
run), and alembic to `alembic`; it also warns with `warnings.warn`. During an import each of
these loggers gets one collecting handler in place of its own, for the importing thread only
(another thread's records still reach the handlers they had); what MLflow said at WARNING or
above, and its warnings, come back as short lines, without tracebacks, for the import's notes.
Everything is put back as it was afterwards.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from typing import Iterator

LOGGERS = ("", "mlflow", "alembic")         # the root logger, MLflow's, alembic's
MAX_NOTE = 300
QUIET_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)  # about MLflow itself


class _Collector(logging.Handler):
    """Keeps the importing thread's records at WARNING and above; hands other threads' records
    to the handlers their logger had."""

    def __init__(self, thread: int, lines: list[str]):
        super().__init__(logging.NOTSET)
        self.thread, self.lines = thread, lines
        self.others: dict[str, list[logging.Handler]] = {}

    def handle(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            top = record.name.split(".")[0] if record.name != "root" else ""
            for handler in self.others.get(top, self.others.get("", ())):
                if record.levelno >= handler.level:
                    handler.handle(record)
            return True
        if record.levelno >= logging.WARNING:
            self.lines.append(one_line(record.getMessage()))
        return True

    def emit(self, record: logging.LogRecord) -> None:    # handle() does the work
        pass


def one_line(text: str) -> str:
    """A message as one line of at most MAX_NOTE characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_NOTE else text[:MAX_NOTE - 3] + "..."


@contextlib.contextmanager
def captured_logs() -> Iterator[list[str]]:
    """Collect what MLflow and alembic log (WARNING and above) and warn in this thread; the
    list of their lines, in order, filled as the block runs. Nothing of it reaches stderr."""
    lines: list[str] = []
    collector = _Collector(threading.get_ident(), lines)
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.handlers, logger.level, logger.propagate))
        collector.others[name] = list(logger.handlers)
        logger.handlers = [collector]
        logger.propagate = False
        if name:
            logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield lines
        for warning in caught:
            if not issubclass(warning.category, QUIET_WARNINGS):
                lines.append(one_line(warning.message))
    finally:
        for logger, handlers, level, propagate in saved:
            logger.handlers, logger.propagate = handlers, propagate
            logger.setLevel(level)


def notes_of(lines: list[str], known: list[str]) -> list[str]:
    """The lines MLflow logged as import notes: each once, those naming a run or experiment
    already reported as skipped (known: their keys) left out, since the skip line says it."""
    out, seen = [], set()
    for line in lines:
        if line in seen or any(key and key in line for key in known):
            continue
        seen.add(line)
        out.append(f"MLflow said: {line}")
    return out
