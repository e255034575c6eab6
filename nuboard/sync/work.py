"""What push and pull share: one opened store, its listing grouped by unit, the units worked on
by a pool of threads (each unit in its own order, one thread at a time), the counts, and the
first store failure ending the work."""
from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable

from nuboard.errors import InvalidTypeError, StorageError
from nuboard.files.names import check_project
from nuboard.remote.store import Store, open_store, storage_error

from .errors import SyncConflictError
from .state import SyncState
from .summary import SyncSummary
from .travel import Unit, remote_units

WORKERS = 16          # units in flight at once: object stores answer each request in ~10-50 ms
LIST_PAGE = 1000      # keys a listing request returns (S3's page)
Progress = Callable[[int, int, str], None]     # progress(units done, units in all, the last one)


def check_projects(projects: object) -> list[str] | None:
    """None (every project) or the projects named, checked."""
    if projects is None:
        return None
    if isinstance(projects, str) or not isinstance(projects, (list, tuple, set, frozenset)):
        raise InvalidTypeError(f"projects must be a list of project names or None, not {projects!r:.80}")
    return sorted({check_project(p) for p in projects})


class Job:
    """One push or pull: the store, the folder, the state and the summary, and counters that
    worker threads add to."""

    def __init__(self, direction: str, url: str, root: "str | os.PathLike[str]", projects,
                 state: SyncState | None = None, store: Store | None = None):
        self.started = time.monotonic()
        self.projects = check_projects(projects)
        self.root = Path(root)
        self.store = store if store is not None else open_store(url)
        self.state = state if state is not None else SyncState.for_url(self.root, self.store.url)
        self.summary = SyncSummary(direction, self.store.url)
        self._lock = threading.Lock()
        self.conflicts: list[str] = []
        self.damaged: list[str] = []

    # -- counting ---------------------------------------------------------------------------------
    def count(self, **added: int) -> None:
        with self._lock:
            for name, value in added.items():
                setattr(self.summary, name, getattr(self.summary, name) + value)

    def refuse(self, unit: Unit, why: str, conflict: bool) -> None:
        with self._lock:
            (self.conflicts if conflict else self.damaged).append(f"{unit.shown()}: {why}")

    # -- the store --------------------------------------------------------------------------------
    def listing(self, prefix: str | None = None) -> dict[Unit, dict]:
        """The bucket's objects under the URL (or the projects asked for), grouped by unit."""
        if prefix is not None:
            found = {f"{prefix}/{k}": v for k, v in self.store.listing(prefix).items()}
        elif self.projects is None:
            found = self.store.listing("")
        else:
            found = {}
            for project in self.projects:
                found.update({f"{project}/{k}": v for k, v in self.store.listing(project).items()})
        pages = (1 if self.projects is None or prefix is not None else len(self.projects))
        self.count(requests=max(pages, math.ceil(len(found) / LIST_PAGE)))
        return remote_units(found, self.projects)

    def call(self, doing: str, key: str, fn, *args):
        """fn(*args) against the store, its failure as one StorageError line."""
        try:
            out = fn(*args)
        except StorageError:
            raise
        except Exception as exc:
            raise storage_error(exc, self.store.url_of(key), doing) from exc
        self.count(requests=1, writes=1 if doing == "write" else 0)
        return out

    # -- running the units ------------------------------------------------------------------------
    def run(self, units: list, work: Callable, progress: Progress | None,
            workers: int | None = None) -> None:
        """work(unit, ...) for each (unit, ...) tuple, in a pool; the first StorageError stops
        the rest (units already under way finish their current file) and is raised."""
        total, done = len(units), 0
        workers = WORKERS if workers is None else workers
        if progress is not None:
            progress(0, total, "")
        stop = threading.Event()

        def one(item):
            if stop.is_set():
                return
            work(*item)

        try:
            if workers <= 1 or total <= 1:
                for item in units:
                    one(item)
                    done += 1
                    if progress is not None:
                        progress(done, total, item[0].shown())
                return
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nuboard-sync") as pool:
                pending = {pool.submit(one, item): item[0] for item in units}
                try:
                    while pending:
                        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in finished:
                            unit = pending.pop(future)
                            error = future.exception()
                            if error is not None:
                                raise error
                            done += 1
                            if progress is not None:
                                progress(done, total, unit.shown())
                except BaseException:            # a failure, or Ctrl-C: units under way end theirs
                    stop.set()
                    for other in pending:
                        other.cancel()
                    wait(pending)
                    raise
        finally:
            self.state.save()

    def finish(self) -> SyncSummary:
        """The summary; SyncConflictError (or StorageError for damaged objects) naming what was
        refused, after everything else was done."""
        self.state.save()
        summary = self.summary
        summary.seconds = time.monotonic() - self.started
        summary.refused = self.conflicts + self.damaged
        if summary.refused:
            shown = "; ".join(summary.refused[:3])
            more = f"; and {len(summary.refused) - 3} more" if len(summary.refused) > 3 else ""
            text = f"{summary.line()}. Refused {shown}{more}"
            error = SyncConflictError(text) if self.conflicts else StorageError(text)
            error.summary = summary
            raise error
        return summary
