"""Opening a project's catalog: where it lives, WAL and its pragmas, migrations under a lock.

The catalog is `<project>/.nuboard/catalog.sqlite`. WAL needs shared memory on one host, so
when the project folder is read-only or on a network or FUSE file system, the catalog goes
under `$NUBOARD_CACHE_DIR` (default `~/.cache/nuboard`), keyed by the project's real path.
Writes run in `BEGIN IMMEDIATE` with a busy timeout, so "database is locked" never reaches a
user; a damaged catalog is moved aside and rebuilt from the files.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import time
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

from ..errors import NuBoardError
from ..layout import resource_dir

CATALOG = "catalog.sqlite"
BUSY_TIMEOUT_MS = 60_000
NO_WAL_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "9p", "ceph",
                      "glusterfs", "beegfs", "afs", "davfs", "sshfs")


class CatalogError(NuBoardError):
    """The catalog cannot be opened or used."""


def cache_dir() -> Path:
    return Path(os.environ.get("NUBOARD_CACHE_DIR") or Path.home() / ".cache" / "nuboard")


def filesystem_type(path: Path) -> str | None:
    """The type of the file system holding path, from /proc/mounts (None elsewhere)."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    real = str(Path(path).resolve())
    best, kind = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


def why_not_here(project_dir: Path) -> str | None:
    """Why the catalog cannot live in the project folder (None when it can)."""
    folder = project_dir if project_dir.exists() else project_dir.parent
    kind = filesystem_type(folder)
    if kind and (kind in NO_WAL_FILESYSTEMS or kind.startswith("fuse")):
        return f"the project folder is on {kind}, where SQLite's WAL does not work"
    target = project_dir / ".nuboard"
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe = target / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return f"the project folder cannot be written ({exc.strerror or exc})"
    return None


def catalog_path(project_dir: Path) -> tuple[Path, str | None]:
    """Where the catalog of a project lives, and why it is not in the project (or None)."""
    project_dir = Path(project_dir)
    reason = why_not_here(project_dir)
    if reason is None:
        return project_dir / ".nuboard" / CATALOG, None
    key = hashlib.sha256(str(project_dir.resolve()).encode()).hexdigest()[:16]
    folder = cache_dir() / f"{project_dir.name}-{key}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CatalogError(
            f"the catalog of {str(project_dir)!r} cannot live there ({reason}) nor in "
            f"{str(folder)!r} ({exc.strerror or exc}); set NUBOARD_CACHE_DIR to a local, "
            "writable folder.") from None
    return folder / CATALOG, reason


def make_engine(path: Path, *, read_only: bool = False) -> Engine:
    """An engine with WAL, busy_timeout, synchronous=NORMAL, foreign keys, BEGIN IMMEDIATE."""
    if read_only:
        url = f"sqlite:///file:{path}?mode=ro&uri=true"
    else:
        url = f"sqlite:///{path}"
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000,
                                              "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        dbapi_conn.isolation_level = None          # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        if not read_only:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        if read_only:
            cur.execute("PRAGMA query_only=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock between processes (flock on path)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def alembic_config(engine_conn=None):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    if engine_conn is not None:
        cfg.attributes["connection"] = engine_conn
    return cfg


def is_damaged(path: Path) -> str | None:
    """Why an existing catalog file cannot be used (None when it is fine or missing)."""
    if not path.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            row = con.execute("PRAGMA quick_check").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if not row or row[0] != "ok":
        return f"quick_check says {row[0] if row else 'nothing'}"
    return None


def migrate(engine: Engine) -> None:
    """Upgrade the catalog to the newest revision (call under the catalog's lock)."""
    from alembic import command
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")


def set_aside(path: Path) -> None:
    """Move a damaged catalog (and its -wal and -shm) out of the way; it is rebuilt from files."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        part = Path(str(path) + suffix)
        if part.exists():
            try:
                os.replace(part, Path(f"{path}.damaged-{stamp}{suffix}"))
            except OSError:
                part.unlink(missing_ok=True)
