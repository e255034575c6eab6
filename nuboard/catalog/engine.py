"""Opening a project's catalog: where it lives, WAL and its pragmas, migrations under a lock.

The catalog is `<project>/.nuboard/catalog.sqlite`, or under `$NUBOARD_CACHE_DIR` when that is
set (the spec: where the viewer keeps its catalog cache), keyed by the project's real path. WAL
needs shared memory on one host, so when the project folder is read-only or on a network or
FUSE file system, the catalog goes under the cache folder even when it is not set
(`~/.cache/nuboard`).
Writes run in `BEGIN IMMEDIATE` with a busy timeout, so "database is locked" never reaches a
user; a damaged catalog is moved aside and rebuilt from the files.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
import struct
import time
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from nuboard.errors import NuBoardError
from nuboard.files.jsonfile import flock, open_regular
from nuboard.files.layout import CACHE_VAR, cache_dir, resource_dir
from nuboard.files.mounts import filesystem_type, parse_mounts, read_mounts  # noqa: F401 (re-exported)

CATALOG = "catalog.sqlite"
BUSY_TIMEOUT_MS = 60_000
# File systems where SQLite's WAL is unsafe: its -shm index is shared memory (mmap), which
# works only when every process sits on one host and the file system supports it.
NO_WAL_FILESYSTEMS = frozenset((
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "lustre", "gpfs", "9p", "ceph",
    "glusterfs", "beegfs", "afs", "openafs", "davfs", "sshfs", "panfs", "orangefs", "pvfs2",
    "wekafs", "quobyte", "vboxsf", "vmhgfs", "prl_fs"))
SQLITE_MAGIC = b"SQLite format 3\x00"


class CatalogError(NuBoardError):
    """The catalog cannot be opened or used."""


def cache_dir_chosen() -> bool:
    """Whether $NUBOARD_CACHE_DIR is set: then every SQLite catalog lives under it."""
    return bool(os.environ.get(CACHE_VAR))


def wal_unsafe(kind: str | None) -> bool:
    """Whether SQLite's WAL must not be used on a file system of this type."""
    if not kind:
        return False
    kind = kind.lower()
    return kind in NO_WAL_FILESYSTEMS or kind == "fuse" or kind.startswith(("fuse.", "fuseblk"))


def _existing_ancestor(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def why_not_here(project_dir: Path, mounts: str | None = None, *,
                 make: bool = True) -> str | None:
    """Why the catalog cannot live in the project folder (None when it can).

    Args:
        project_dir: the project's folder.
        mounts: the text of a /proc/mounts-like table; None reads this process's.
        make: make the project's .nuboard folder to probe it; False probes the nearest folder
            that exists instead and leaves the project as it is.
    """
    project_dir = Path(project_dir)
    kind = filesystem_type(_existing_ancestor(project_dir), mounts)
    if wal_unsafe(kind):
        return f"the project folder is on {kind}, where SQLite's WAL does not work"
    target = project_dir / ".nuboard"
    if not make and not target.is_dir():
        target = _existing_ancestor(project_dir)
    try:
        if make:
            target.mkdir(parents=True, exist_ok=True)
        probe = target / f".probe-{os.getpid()}-{os.urandom(3).hex()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return f"the project folder cannot be written ({exc.strerror or exc})"
    return None


def catalog_path(project_dir: Path, mounts: str | None = None) -> tuple[Path, str | None]:
    """Where the catalog of a project lives, and why it is not in the project (or None).

    In the project's .nuboard folder, unless $NUBOARD_CACHE_DIR is set or the project folder
    cannot hold it (read-only, or a file system without WAL): then under the cache folder.

    Raises:
        CatalogError: neither the project folder nor the cache folder can hold it.
    """
    project_dir = Path(project_dir)
    chosen = cache_dir_chosen()
    reason = why_not_here(project_dir, mounts, make=not chosen)
    if reason is None and not chosen:
        return Path(os.path.abspath(project_dir)) / ".nuboard" / CATALOG, None
    failed = f"the catalog of {str(project_dir)!r} cannot live "
    failed += "in" if reason is None else f"there ({reason}) nor in"
    key = hashlib.sha256(os.path.realpath(project_dir).encode()).hexdigest()[:16]
    folder = Path(os.path.abspath(cache_dir())) / f"{project_dir.name}-{key}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CatalogError(
            f"{failed} {str(folder)!r} ({exc.strerror or exc}); set NUBOARD_CACHE_DIR to a "
            "local, writable folder.") from None
    kind = filesystem_type(folder, mounts)
    if wal_unsafe(kind):
        raise CatalogError(
            f"{failed} {str(folder)!r} (on {kind}, where SQLite's WAL does not work); set "
            "NUBOARD_CACHE_DIR to a folder on a local disk.")
    return folder / CATALOG, reason or "NUBOARD_CACHE_DIR is set"


def make_engine(path: Path, *, read_only: bool = False, begin: str | None = None) -> Engine:
    """An engine with WAL, busy_timeout, synchronous=NORMAL and foreign keys on.

    Args:
        path: the catalog file.
        read_only: open the file read-only (mode=ro) with query_only on; it is never created.
        begin: the statement that opens a transaction: "BEGIN IMMEDIATE" (the default for
            an engine that writes, so writers queue on the busy timeout instead of failing
            when a read turns into a write) or "BEGIN" (a reader: WAL readers never wait).
    """
    path = Path(os.path.abspath(path))
    if begin is None:
        begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"
    query_only = read_only or begin == "BEGIN"

    def connect():
        if read_only:
            con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True,
                                  timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        else:
            con = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000,
                                  check_same_thread=False)
        con.isolation_level = None          # we issue BEGIN ourselves
        con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not read_only:
            mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":
                con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute("PRAGMA foreign_keys=ON")
        if query_only:
            con.execute("PRAGMA query_only=ON")
        return con

    # the URL is only for the dialect: the file is opened by connect(), so no character of
    # its path is ever read as part of a URL
    engine = create_engine("sqlite://", creator=connect, poolclass=QueuePool)

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql(begin)

    return engine


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock between processes (flock on path, jsonfile.flock); where the file
    system has no locks, none (one warning), and SQLite's own write lock orders migrations."""
    with flock(path):
        yield


def alembic_config(engine_conn=None):
    """An Alembic Config for the catalog's migrations (optionally bound to a connection)."""
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    if engine_conn is not None:
        cfg.attributes["connection"] = engine_conn
    return cfg


@functools.lru_cache(maxsize=None)
def head_revision() -> str | None:
    """The newest revision in migrations/."""
    from alembic.script import ScriptDirectory
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@functools.lru_cache(maxsize=None)
def known_revisions() -> frozenset[str]:
    """Every revision in migrations/."""
    from alembic.script import ScriptDirectory
    return frozenset(r.revision for r in
                     ScriptDirectory.from_config(alembic_config()).walk_revisions())


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a file, to tell a catalog replaced under us (None when missing or
    empty: an open catalog is never 0 bytes, so an empty one was truncated under us)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st.st_size > 0 else None


def is_damaged(path: Path, *, thorough: bool = False) -> str | None:
    """Why an existing catalog file cannot be used (None when it looks fine or is missing).

    The cheap checks read the header: SQLite's magic, and (when no WAL is beside it) whether
    the file holds as many pages as the header says, which a truncated file does not. Then
    SQLite reads the schema. thorough=True adds PRAGMA quick_check, which reads every page.
    """
    wal = Path(f"{path}-wal")
    wal_before = _nonempty(wal)
    try:
        with open_regular(path) as fh:                 # a FIFO there never blocks
            header = fh.read(100)
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if size == 0:                                     # a new, empty database, unless
        if wal_before or _nonempty(wal):              # a WAL says it held pages: truncated
            return "it was truncated to 0 bytes while its WAL was in use"
        # SQLite makes the -shm only after WAL mode wrote the first page, so a -shm beside an
        # empty file (an idle viewer's, its WAL empty) says it was truncated: opened as new,
        # it would wait on that viewer's shared memory until "database is locked"
        if os.path.lexists(f"{path}-shm"):
            return "it was truncated to 0 bytes while in use (its -shm is still there)"
        return None
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return "it is not an SQLite database (its header is wrong)"
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages = struct.unpack(">I", header[28:32])[0]
    valid_for, changes = header[92:96], header[24:28]
    # with a WAL the header may be newer than the pages (a checkpoint is copying them)
    if pages and valid_for == changes and not wal_before and not _nonempty(wal):
        if size < pages * page_size:
            return f"it is truncated ({size} bytes where its header says {pages * page_size})"
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True,
                              timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            row = con.execute("PRAGMA quick_check").fetchone() if thorough else ("ok",)
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        # busy, locked, cannot open: not damage; opening it for real says what is wrong
        return str(exc) if is_corruption(exc) else None
    if not row or row[0] != "ok":
        return f"quick_check says {row[0] if row else 'nothing'}"
    return None


def _nonempty(path: Path) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


def is_corruption(exc: BaseException) -> bool:
    """Whether an error from SQLite says the catalog file is damaged (not merely busy)."""
    text = str(exc).lower()
    return any(s in text for s in ("malformed", "not a database", "file is encrypted",
                                   "disk image", "database corrupt"))


def migrate(engine: Engine, schema: str | None = None) -> str | None:
    """Upgrade the catalog to the newest revision (call under the catalog's lock).

    schema: on a server, the project's schema (named in the refusal of a newer one).

    Returns:
        The revision it was upgraded from ("base" for a new or empty catalog), or None
        when it was at head already.
    """
    from alembic import command
    from alembic.migration import MigrationContext
    head = head_revision()
    # one transaction from reading the revision to the upgrade: on a server the writer's BEGIN
    # takes the schema's lock, so of many hosts opening a new schema one upgrades it and the
    # others then read head (two reads before either upgrade both said "base")
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return None
        _check_known(current, head, schema)
        command.upgrade(alembic_config(conn), "head")
        if conn.in_transaction():
            conn.commit()
    return current or "base"


def _check_known(current: str | None, head: str | None, schema: str | None) -> None:
    """Refuse a catalog at a revision this NuBoard does not know: a newer one wrote it."""
    if current is not None and current not in known_revisions():
        if schema is not None:
            raise CatalogError(
                f"the catalog schema {schema} is at revision {current!r}, which this NuBoard does "
                f"not know (its newest is {head!r}): a newer NuBoard wrote it. Upgrade nuboard on "
                f"this host (every host of a lab runs one version), or drop the schema "
                f'(DROP SCHEMA "{schema}" CASCADE) to rebuild it from the files.')
        raise CatalogError(
            f"the catalog is at revision {current!r}, which this NuBoard does not know (its "
            f"newest is {head!r}): a newer NuBoard wrote it. Upgrade nuboard, or remove the "
            "catalog to rebuild it from the files.")


def set_aside(path: Path) -> Path:
    """Move a damaged catalog (and its -wal and -shm) out of the way; it is rebuilt from files.

    The -wal and -shm go first, so a process opening the catalog meanwhile never pairs a new
    database with the old WAL. Returns the new name of the catalog file.
    """
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{os.urandom(2).hex()}"
    aside = Path(f"{path}.damaged-{stamp}")
    for suffix in ("-wal", "-shm", ""):
        part = Path(str(path) + suffix)
        if part.exists():
            try:
                os.replace(part, Path(f"{aside}{suffix}"))
            except OSError:
                part.unlink(missing_ok=True)
    return aside
