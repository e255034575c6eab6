"""A project's catalog, opened: migrated under a lock, rebuilt when damaged, synced on demand."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError, OperationalError

from .. import layout
from .engine import (catalog_path, file_lock, is_damaged, make_engine, migrate, set_aside)
from .tables import projects


class Catalog:
    """The catalog of one project: `writer` takes BEGIN IMMEDIATE, `reader` plain BEGIN.

    Attributes:
        root, project: the root folder and the project's name ('team/llm').
        project_dir: the project's folder.
        path: the catalog file; `moved_because` says why it is not in the project folder.
    """

    def __init__(self, root: "str | os.PathLike[str]", project: str):
        self.root = Path(root)
        self.project = project
        self.project_dir = layout.project_dir(self.root, project)
        self.path, self.moved_because = catalog_path(self.project_dir)
        self._open()

    def _open(self) -> None:
        with file_lock(Path(str(self.path) + ".lock")):
            damage = is_damaged(self.path)
            if damage is not None:
                warnings.warn(f"nuboard: the catalog {str(self.path)!r} was damaged ({damage}); "
                              "rebuilding it from the files.", RuntimeWarning, stacklevel=3)
                set_aside(self.path)
            self.writer: Engine = make_engine(self.path)
            try:
                migrate(self.writer)
            except (DatabaseError, OperationalError) as exc:
                if "not a database" not in str(exc) and "malformed" not in str(exc):
                    raise
                self.writer.dispose()
                set_aside(self.path)
                self.writer = make_engine(self.path)
                migrate(self.writer)
            self.project_id = self._project_row()
        self.reader: Engine = make_engine(self.path)

    def _project_row(self) -> int:
        with self.writer.begin() as conn:
            row = conn.execute(select(projects.c.id).where(projects.c.name == self.project)).first()
            if row is not None:
                return row[0]
            result = conn.execute(projects.insert().values(
                name=self.project, path=str(self.project_dir.resolve())))
            return result.inserted_primary_key[0]

    def exists_on_disk(self) -> bool:
        return self.path.exists()

    def reopen_if_gone(self) -> bool:
        """When the catalog file was deleted under us, open (and so rebuild) a new one."""
        if self.path.exists() and is_damaged(self.path) is None:
            return False
        self.close()
        self._open()
        return True

    def close(self) -> None:
        for engine in (getattr(self, "writer", None), getattr(self, "reader", None)):
            if engine is not None:
                engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
