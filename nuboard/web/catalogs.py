"""The viewer's catalogs: one open Catalog per project, synced in the background when stale.

The first request for a project syncs it before answering; later requests read what the
catalog holds and, when the last sync is older than `every` seconds, start one more sync on a
thread, so a page of 10,000 runs never waits for the stat of every folder.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from ..layout import find_projects

PROJECTS_TTL = 5.0


class _Entry:
    def __init__(self, catalog):
        self.catalog = catalog
        self.lock = threading.Lock()
        self.synced_at = 0.0
        self.generation = 0
        self.running = False
        self.memo: dict[str, tuple[int, object]] = {}


class Catalogs:
    """Open catalogs of the projects under root, shared by the server's threads."""

    def __init__(self, root: Path, every: float = 2.0):
        self.root = Path(root)
        self.every = every
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._projects: tuple[float, list[str]] = (0.0, [])

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
        elif time.monotonic() - entry.synced_at > self.every and not entry.running:
            entry.running = True
            threading.Thread(target=self._sync, args=(entry,), daemon=True,
                             name=f"nuboard-sync-{project}").start()
        return entry.catalog

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
                from ..catalog.store import Catalog
                entry = self._entries[project] = _Entry(Catalog(self.root, project))
            return entry

    @staticmethod
    def _replaced(entry: _Entry) -> bool:
        """Whether the catalog file was deleted or replaced (one stat); if so it is reopened."""
        with entry.lock:
            return entry.catalog.reopen_if_gone()

    def _sync(self, entry: _Entry) -> None:
        from ..catalog.sync import sync
        with entry.lock:
            try:
                report = sync(entry.catalog)
                if report.added or report.updated or report.removed or any(
                        report.versions.values()) or report.rebuilt_because:
                    entry.generation += 1
                entry.synced_at = time.monotonic()
            finally:
                entry.running = False

    def close(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                with entry.lock:
                    entry.catalog.close()
            self._entries.clear()
