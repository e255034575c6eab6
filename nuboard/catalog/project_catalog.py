"""A project's catalog, opened: migrated under a lock, rebuilt when damaged, synced on demand."""
from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError

from nuboard.files import layout

from .engine import (
    CatalogError,
    catalog_path,
    file_identity,
    file_lock,
    is_corruption,
    is_damaged,
    make_engine,
    migrate,
    set_aside,
)
from .tables import projects


class Catalog:
    """The catalog of one project: `writer` takes BEGIN IMMEDIATE, `reader` plain BEGIN.

    Attributes:
        root, project: the root folder and the project's name ('team/llm').
        project_dir: the project's folder.
        project_id: the project's row in `projects`.
        path: the catalog file; `moved_because` says why it is not in the project folder
            (None when it is there).
        migrated_from: the revision this open upgraded the catalog from ('base' for a new
            file), or None when it was at head already.
        damaged_because: why a damaged catalog was set aside by the latest open or
            rebuild (None when none was); an empty catalog replaces it, and a sync
            fills it from the files.
    """

    def __init__(self, root: "str | os.PathLike[str]", project: str):
        self.root = Path(root)
        self.project = project
        self.project_dir = layout.project_dir(self.root, project)
        self.path: Path
        self.moved_because: str | None
        self.writer: Engine | None = None
        self.reader: Engine | None = None
        self.migrated_from: str | None = None
        self.damaged_because: str | None = None
        self._identity: tuple[int, int] | None = None
        # run folders the sync skipped: name -> ((signature, folder mtime), reason), so an
        # unchanged damaged run is reported again without reading it again
        self.skips: dict[str, tuple[tuple[str, int], str]] = {}
        self._open()

    @property
    def _lock_path(self) -> Path:
        return Path(f"{self.path}.lock")

    def _open(self) -> None:
        # again at each open: the folder that holds the catalog (.nuboard) may have been
        # removed since, and is made anew (or the catalog goes to the cache folder)
        self.path, self.moved_because = catalog_path(self.project_dir)
        with file_lock(self._lock_path):
            damage = is_damaged(self.path)
            if damage is not None:
                self._set_aside(damage)
            writer = make_engine(self.path)
            try:
                migrated = migrate(writer)
                project_id = self._project_row(writer)
            except CatalogError:
                writer.dispose()
                raise
            except (DatabaseError, sqlite3.DatabaseError) as exc:
                writer.dispose()
                if not is_corruption(exc):
                    raise CatalogError(
                        f"the catalog {str(self.path)!r} cannot be opened ({_reason(exc)}); "
                        "close other programs using it, or remove it to rebuild it from the "
                        "files.") from exc
                self._set_aside(_reason(exc))
                writer = make_engine(self.path)
                migrated = migrate(writer)
                project_id = self._project_row(writer)
            self._identity = file_identity(self.path)
        self.writer, self.project_id, self.migrated_from = writer, project_id, migrated
        self.reader = make_engine(self.path, begin="BEGIN")

    def _set_aside(self, reason: str) -> None:
        aside = set_aside(self.path)
        self.damaged_because = reason
        warnings.warn(f"nuboard: the catalog {str(self.path)!r} was damaged ({reason}); it was "
                      f"moved to {aside.name!r} and is rebuilt from the files.",
                      RuntimeWarning, stacklevel=4)

    def _project_row(self, writer: Engine) -> int:
        path = os.path.realpath(self.project_dir)
        with writer.begin() as conn:
            row = conn.execute(select(projects.c.id, projects.c.path)
                               .where(projects.c.name == self.project)).first()
            if row is not None:
                if row.path != path:                 # the folder was moved or copied
                    conn.execute(update(projects).where(projects.c.id == row.id).values(path=path))
                return row.id
            result = conn.execute(projects.insert().values(name=self.project, path=path))
            return result.inserted_primary_key[0]

    def exists_on_disk(self) -> bool:
        return self.path.exists()

    def reopen_if_gone(self) -> bool:
        """When the catalog file was deleted, replaced or truncated under us (its folder
        removed, too), open (so rebuild) a new one.

        Costs one stat when nothing happened. Returns whether it reopened.
        """
        if self._identity is not None and file_identity(self.path) == self._identity:
            return False
        self.close()
        self._open()
        return True

    def rebuild(self, reason: str) -> None:
        """Set a catalog found damaged in use aside and open an empty one to sync into.

        When another process already replaced it, the new file is kept and only reopened.
        """
        self.close()
        with file_lock(self._lock_path):
            if self._identity is not None and file_identity(self.path) == self._identity:
                self._set_aside(reason)
        self._open()

    def close(self) -> None:
        """Close every connection (the last one to close checkpoints the WAL)."""
        for engine in (self.writer, self.reader):
            if engine is not None:
                engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nuboard.Catalog {self.project!r} at {str(self.path)!r}>"


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc)
