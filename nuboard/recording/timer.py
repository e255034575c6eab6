"""run.timer: time a block or a function and log the seconds as <timing_prefix>/<name>."""
from __future__ import annotations

import functools
import threading
import time
from typing import Any, Callable

from nuboard.files.names import check_scalar_name


class Timer:
    """A context manager and a decorator made by run.timer(name).

    Each timed block or call logs one point, its seconds, at the run's current step (the
    step of the latest point logged). A name timed several times in one step logs several
    points at that step, in order; nothing is summed or dropped.
    """

    def __init__(self, run: Any, name: str, enabled: bool):
        check_scalar_name(name, ())
        self.name = f"{run._prefixes['timing']}/{name}"
        self.enabled = enabled
        self._run = run
        self._starts = threading.local()

    def __enter__(self) -> "Timer":
        stack = getattr(self._starts, "stack", None)
        if stack is None:
            stack = self._starts.stack = []
        stack.append(time.perf_counter())
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        elapsed = time.perf_counter() - self._starts.stack.pop()
        if self.enabled:
            self._run._log_own({self.name: elapsed})

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.enabled:
                    self._run._log_own({self.name: time.perf_counter() - start})
        return timed
