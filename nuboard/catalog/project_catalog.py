"""A project's catalog, opened: migrated under a lock, rebuilt when damaged, synced on demand.

Its own SQLite file by default; with a catalog URL (NUBOARD_CATALOG_URL, --catalog), the
project's schema on a PostgreSQL server shared by a lab's hosts (server.py).
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError, DBAPIError, OperationalError

from nuboard.files import layout

from . import server
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

# What a face shows as "the catalog is unavailable now" (503), not as the user's mistake: a
# catalog that cannot be opened, or a server gone in the middle of a read.
CATALOG_UNAVAILABLE = (CatalogError, OperationalError)


def unavailable_message(exc: BaseException) -> str:
    """One line for CATALOG_UNAVAILABLE: CatalogError's own words, else the driver's, no SQL."""
    if isinstance(exc, CatalogError):
        return str(exc)
    return "The catalog cannot be read now: " + server.driver_text(exc)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """For a command: a catalog server gone in the middle (OperationalError) is raised as a
    CatalogError of one line (unavailable_message), without the SQL it was running."""
    try:
        yield
    except OperationalError as exc:
        raise CatalogError(unavailable_message(exc)) from None


class Catalog:
    """The catalog of one project: `writer` takes BEGIN IMMEDIATE, `reader` plain BEGIN (on a
    server: the schema's advisory lock, and a read-only snapshot).

    Attributes:
        root, project: the root folder and the project's name ('team/llm').
        project_dir: the project's folder.
        project_id: the project's row in `projects`.
        url: the catalog server's URL, or None for the project's SQLite file.
        schema: the project's schema on the server (None for SQLite).
        path: the catalog file (None on a server); `moved_because` says why it is not in the
            project folder (None when it is there).
        where: the file, or the schema and server, for messages.
        migrated_from: the revision this open upgraded the catalog from ('base' for a new
            file), or None when it was at head already.
        damaged_because: why a damaged catalog was set aside by the latest open or
            rebuild (None when none was); an empty catalog replaces it, and a sync
            fills it from the files.
    """

    def __init__(self, root: "str | os.PathLike[str]", project: str, url: str | None = None):
        """url: the catalog server (postgresql+psycopg://...); None takes $NUBOARD_CATALOG_URL,
        and without it the project's SQLite file."""
        self.root = Path(root)
        self.project = project
        self.project_dir = layout.project_dir(self.root, project)
        self.url = server.catalog_url(url)
        self.schema: str | None = None
        self.path: Path | None = None
        self.moved_because: str | None = None
        self.writer: Engine | None = None
        self.reader: Engine | None = None
        self.migrated_from: str | None = None
        self.damaged_because: str | None = None
        self._identity: tuple[int, int] | None = None
        # run folders the sync skipped: name -> ((signature, folder mtime), reason), so an
        # unchanged damaged run is reported again without reading it again
        self.skips: dict[str, tuple[tuple[str, int], str]] = {}
        # run folders the sync looked at for media files without a record: name -> (signature,
        # or only run.json's part of it while a writer was alive; when to look again; whether
        # the run's signature is marked), so a run is not read at each sync (sync_media.py)
        self.media_checked: dict[str, tuple[str, float, bool]] = {}
        self._open()

    @property
    def on_server(self) -> bool:
        return self.url is not None

    @property
    def where(self) -> str:
        if self.url is not None:
            return f"schema {self.schema} on {server.shown_url(self.url)}"
        return str(self.path)

    @property
    def _lock_path(self) -> Path:
        return Path(f"{self.path}.lock")

    def _open(self) -> None:
        if self.url is not None:
            self._open_on_server()
            return
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

    def _open_on_server(self) -> None:
        assert self.url is not None
        base = server.server_engine(self.url)
        if self.schema is None:
            self.schema = server.schema_name(server.root_id(self.root), self.project)
        writer, reader = server.schema_engines(base, self.schema)
        comment = f"NuBoard catalog of the project {self.project!r} under {os.path.realpath(self.root)}"
        try:
            server.create_schema(writer, self.schema, comment)
            migrated = migrate(writer, self.schema)
            project_id = self._project_row(writer)
        except OperationalError as exc:
            raise server.unreachable(exc, self.url) from None
        except DBAPIError as exc:              # a role that may not create or write the schema
            raise server.refused(exc, self.url, self.schema) from None
        self.writer, self.reader = writer, reader
        self.project_id, self.migrated_from = project_id, migrated

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
                # the folder was moved or copied; on a server, where each host may mount the
                # shared folder elsewhere, only when the path it has is not a folder here
                if row.path != path and (self.url is None or not os.path.isdir(row.path)):
                    conn.execute(update(projects).where(projects.c.id == row.id).values(path=path))
                return row.id
            result = conn.execute(projects.insert().values(name=self.project, path=path))
            return result.inserted_primary_key[0]

    def exists_on_disk(self) -> bool:
        return self.url is not None or (self.path is not None and self.path.exists())

    def reopen_if_gone(self) -> bool:
        """When the catalog file was deleted, replaced or truncated under us (its folder
        removed, too), open (so rebuild) a new one.

        Costs one stat when nothing happened (nothing on a server: a dropped schema is found
        by the sync, which makes it again). Returns whether it reopened.
        """
        if self.url is not None:
            return False
        if self._identity is not None and file_identity(self.path) == self._identity:
            return False
        self.close()
        self._open()
        return True

    def rebuild(self, reason: str) -> None:
        """Set a catalog found damaged in use aside and open an empty one to sync into.

        When another process already replaced it, the new file is kept and only reopened. On
        a server (the schema or a table was dropped by hand) the schema is made again.
        """
        if self.url is not None:
            self.damaged_because = reason
            self._open_on_server()
            return
        self.close()
        with file_lock(self._lock_path):
            if self._identity is not None and file_identity(self.path) == self._identity:
                self._set_aside(reason)
        self._open()

    def changes(self) -> int:
        """How many syncs, of any process or host, have changed this project's rows."""
        with self.reader.connect() as conn:
            return conn.execute(select(projects.c.changes)
                                .where(projects.c.id == self.project_id)).scalar() or 0

    def close(self) -> None:
        """Close every connection (the last one to close checkpoints the WAL). On a server the
        connections stay in the process's pool, shared with the other projects."""
        if self.url is not None:
            return
        for engine in (self.writer, self.reader):
            if engine is not None:
                engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nuboard.Catalog {self.project!r} at {self.where!r}>"


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc)
