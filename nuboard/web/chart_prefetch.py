"""The first charts' data, computed while the browser loads the Charts page's scripts.

The page knows which charts come first and with which settings; a thread computes their series
(read, downsampled) as the data endpoint would, and the endpoint's request for the same chart
takes the result instead of doing the work again. A request that arrives while its chart is
still being computed waits for it (one computation, not two). Results are kept a short while
and for few charts only: they are for the page just served, not a cache.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable

TTL = 30.0              # seconds a result waits for its request
SIZE = 16               # results kept at most
WAIT = 10.0             # seconds a request waits for a result still being computed


class Prefetch:
    """Results by key: pending (being computed), then ready, then taken once or expired."""

    def __init__(self, ttl: float = TTL, size: int = SIZE):
        self.ttl, self.size = ttl, size
        self._lock = threading.Lock()
        self._items: "OrderedDict[Hashable, list]" = OrderedDict()   # key -> [event, value, at]

    def claim(self, key: Hashable) -> bool:
        """Mark key as being computed; False when it is already pending or ready."""
        with self._lock:
            self._expire()
            if key in self._items:
                return False
            self._items[key] = [threading.Event(), None, time.monotonic()]
            while len(self._items) > self.size:
                _, (event, _, _) = self._items.popitem(last=False)
                event.set()
            return True

    def put(self, key: Hashable, value: Any) -> None:
        """The result of a claimed key (None: it failed; its request does the work itself)."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return
            item[1], item[2] = value, time.monotonic()
            if value is None:
                self._items.pop(key)
        item[0].set()

    def take(self, key: Hashable, wait: float = WAIT) -> Any:
        """The result for key (waiting while it is computed), once; None when there is none."""
        with self._lock:
            self._expire()
            item = self._items.get(key)
        if item is None:
            return None
        item[0].wait(wait)
        with self._lock:
            if self._items.get(key) is item and item[1] is not None:
                self._items.pop(key)
                return item[1]
        return None

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (event, _, at) in self._items.items()
                    if event.is_set() and now - at > self.ttl]:
            self._items.pop(key)


def run_in_background(prefetch: Prefetch, jobs: list[tuple[Hashable, Callable[[], Any]]]) -> None:
    """Compute each (key, work) on one thread, in order, skipping keys already claimed."""
    claimed = [(key, work) for key, work in jobs if prefetch.claim(key)]
    if not claimed:
        return

    def run() -> None:
        for key, work in claimed:
            try:
                value = work()
            except Exception:             # the request will compute and report it itself
                value = None
            prefetch.put(key, value)

    # not a daemon: the interpreter waits for it at exit (a few charts' work), since a thread
    # stopped inside Arrow's reader as the process ends aborts it ("terminate called")
    threading.Thread(target=run, daemon=False, name="nuboard-prefetch-charts").start()
