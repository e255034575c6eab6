"""The viewer's catalogs: one open Catalog per project, synced in the background when stale.

The first request for a project syncs it before answering. A later request that finds the
last sync older than `every` seconds (the viewer sat idle, or the project changes often)
starts a sync on a thread and waits for it at most SYNC_WAIT seconds, so it shows the runs
made meanwhile while a slow sync (a first look at thousands of new runs) never holds a
page for long; requests within `every` of a sync read what the catalog holds, at once.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nuboard.errors import NuBoardError
from nuboard.files.layout import find_projects

PROJECTS_TTL = 5.0
SYNC_WAIT = 1.0          # seconds a request waits for the sync it started (then answers)


class _Entry:
    def __init__(self, catalog):
        self.catalog = catalog
        self.lock = threading.Lock()
        self.synced_at = 0.0
        self.generation = 0
        self.changes = -1                              # projects.changes at the last sync
        self.running = False
        self.done = threading.Event()
        self.done.set()
        self.skipped: list[tuple[str, str]] = []      # (run folder, reason) of the last sync
        self.memo: dict[str, tuple[int, object]] = {}


class Catalogs:
    """Open catalogs of the projects under root, shared by the server's threads."""

    def __init__(self, root: Path, every: float = 2.0, log: Callable[[str], None] | None = None):
        """log: where the one line about an unavailable catalog goes (default: stderr)."""
        self.root = Path(root)
        self.every = every
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._projects: tuple[float, list[str]] = (0.0, [])
        self._log = log or _to_stderr
        self._down: str | None = None                 # why the catalog is unavailable now

    def projects(self) -> list[str]:
        """Every project under the root, looked up again at most every few seconds."""
        at, names = self._projects
        if time.monotonic() - at > PROJECTS_TTL:
            names = find_projects(self.root) if self.root.is_dir() else []
            self._projects = (time.monotonic(), names)
        return names

    def forget_projects(self) -> None:
        self._projects = (0.0, [])

    def get(self, project: str):
        """The project's Catalog, synced once before first use and then kept fresh."""
        entry = self._entry(project)
        if entry.synced_at and not entry.running and self._replaced(entry):
            entry.synced_at = 0.0
        if entry.synced_at == 0.0:
            self._sync(entry)
        elif time.monotonic() - entry.synced_at > self.every:
            with self._lock:
                start = not entry.running
                if start:
                    entry.running = True
                    entry.done.clear()
            if start:
                threading.Thread(target=self._sync_in_background, args=(entry,), daemon=True,
                                 name=f"nuboard-sync-{project}").start()
            entry.done.wait(SYNC_WAIT)
        return entry.catalog

    def open(self, project: str) -> bool:
        """Open and sync the project's catalog now, as its first page would; False when it
        cannot open (its pages then say why: 503 while the catalog is unavailable)."""
        from nuboard.catalog.project_catalog import CATALOG_UNAVAILABLE
        try:
            self.get(project)
        except (NuBoardError, OSError, *CATALOG_UNAVAILABLE):
            return False
        return True

    def find(self, project: str):
        """The catalog of a project under the root, or None when there is none or it cannot
        open (to read what this project's runs made in another project)."""
        if project not in self.projects():
            return None
        try:
            return self.get(project)
        except (NuBoardError, OSError):
            return None

    def skipped(self, project: str) -> list[tuple[str, str]]:
        """The run folders the latest sync of the project left out, each with its reason."""
        return list(self._entry(project).skipped)

    def sync_now(self, project: str):
        """Sync at once (after an edit), and return the catalog."""
        entry = self._entry(project)
        self._sync(entry)
        return entry.catalog

    def remember(self, project: str, name: str, compute):
        """compute(catalog), kept until a sync changes the project."""
        entry = self._entry(project)
        found = entry.memo.get(name)
        if found is not None and found[0] == entry.generation:
            return found[1]
        value = compute(self.get(project))
        entry.memo[name] = (entry.generation, value)
        return value

    def _entry(self, project: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(project)
            if entry is None:
                from nuboard.catalog.project_catalog import Catalog
                entry = self._entries[project] = _Entry(Catalog(self.root, project))
            return entry

    @staticmethod
    def _replaced(entry: _Entry) -> bool:
        """Whether the catalog file was deleted or replaced (one stat); if so it is reopened."""
        with entry.lock:
            return entry.catalog.reopen_if_gone()

    def _sync_in_background(self, entry: _Entry) -> None:
        """_sync on a thread of its own: an unavailable catalog is logged once (_sync), and the
        request that started it answers 503 from its own read."""
        from nuboard.catalog.project_catalog import CATALOG_UNAVAILABLE
        try:
            self._sync(entry)
        except CATALOG_UNAVAILABLE:
            pass

    def _note_state(self, exc: BaseException | None) -> None:
        """Log one line when the catalog becomes unavailable, and one when it is back."""
        if exc is None:
            if self._down is not None:
                self._down = None
                self._log("nuboard up: the catalog is available again; pages are served.")
            return
        from nuboard.catalog.project_catalog import unavailable_message
        if self._down is None:
            self._down = unavailable_message(exc)
            self._log(f"nuboard up: {self._down} Pages answer 503 until it is back; this is "
                      "said once.")

    def _sync(self, entry: _Entry) -> None:
        from nuboard.catalog.project_catalog import CATALOG_UNAVAILABLE
        from nuboard.catalog.sync import sync
        with entry.lock:
            try:
                try:
                    report = sync(entry.catalog)
                except CATALOG_UNAVAILABLE as exc:
                    self._note_state(exc)
                    raise
                self._note_state(None)
                entry.skipped = list(report.skipped)
                # projects.changes also counts the syncs of other processes and hosts (a
                # shared catalog): this one may find nothing to do after another did it
                changes = entry.catalog.changes()
                if changes != entry.changes or report.rebuilt_because:
                    entry.generation += 1
                    entry.changes = changes
                entry.synced_at = time.monotonic()
            finally:
                entry.running = False
                entry.done.set()

    def close(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                with entry.lock:
                    entry.catalog.close()
            self._entries.clear()


def _to_stderr(line: str) -> None:
    print(" ".join(line.split()), file=sys.stderr, flush=True)
