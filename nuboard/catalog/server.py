"""The catalog on a PostgreSQL server (team mode, docs/team.md): one schema per project.

With NUBOARD_CATALOG_URL (or --catalog URL) every project under the root is indexed into that
database instead of its SQLite file. Each project gets its own schema, named from the root's id
(`<root>/.nuboard/root.json`, written once, so every host agrees whatever path it mounts the
folder at) and the project's name: `nb_<root id>_<project>_<hash>`. Inside it are the very
tables, rows and migrations of the SQLite catalog, so every query reads the same on both.

Writes to a project's schema are serialised by a transaction-level advisory lock taken at
BEGIN (as BEGIN IMMEDIATE serialises them on SQLite), reads run in a read-only REPEATABLE READ
transaction (a snapshot, as an SQLite read transaction is). One engine per URL and process is
shared by every project, so a viewer over a hundred projects holds a few connections, not
hundreds.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import uuid
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError

from nuboard.files.jsonfile import read_json, write_json_atomic

from .engine import CatalogError

ENV = "NUBOARD_CATALOG_URL"
ROOT_FILE = Path(".nuboard") / "root.json"
INSTALL = "pip install 'nuboard[postgres]'"
POOL_SIZE = 4
MAX_OVERFLOW = 28
CONNECT_TIMEOUT_S = 10
# SQLSTATEs of a write that lost a race with another host, to be redone: serialization failure,
# deadlock, unique violation, lock not available, and the schema being created meanwhile.
RETRY_STATES = frozenset({"40001", "40P01", "23505", "55P03", "42P06", "42P07"})
# The server refuses a row (a value past what it can index or store): that run is skipped.
ROW_REFUSED_STATES = frozenset({"54000", "22021", "22P05", "22003"})
NO_RIGHTS = "42501"              # insufficient_privilege: the role may not do what a sync does
# The schema or a table is gone (dropped by hand): the catalog is made again and filled.
GONE_STATES = frozenset({"3F000", "42P01"})
_SLUG = re.compile(r"[^a-z0-9]+")
_SCHEMA = re.compile(r"nb_[a-z0-9_]{1,60}")
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def catalog_url(url: str | None = None) -> str | None:
    """The catalog server's URL: `url` when given, else $NUBOARD_CATALOG_URL; None for SQLite."""
    if url is None:
        url = os.environ.get(ENV)
    return url.strip() or None if url else None


def shown_url(url: str | URL) -> str:
    """The URL with its password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<not a URL>"


def check_url(url: str) -> URL:
    """The URL parsed and checked: PostgreSQL through psycopg 3, whose driver is installed.

    Raises:
        CatalogError: not a URL, another database, another driver, or psycopg missing.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise CatalogError(
            f"The catalog URL {url!r} is not a database URL; write it as "
            "postgresql+psycopg://user@host/database (NUBOARD_CATALOG_URL or --catalog).") from None
    if parsed.get_backend_name() != "postgresql":
        raise CatalogError(
            f"The catalog URL {shown_url(parsed)!r} names {parsed.get_backend_name()!r}; a shared "
            "catalog is on PostgreSQL: postgresql+psycopg://user@host/database. Without a URL "
            "each project keeps its own SQLite catalog.")
    if parsed.drivername not in ("postgresql", "postgresql+psycopg"):
        raise CatalogError(
            f"The catalog URL {shown_url(parsed)!r} names the driver {parsed.get_driver_name()!r}; "
            "NuBoard talks to PostgreSQL through psycopg 3: postgresql+psycopg://...")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise CatalogError(
            f"The catalog URL {shown_url(parsed)!r} needs the PostgreSQL driver psycopg, which is "
            f"not installed: {INSTALL}") from None
    return parsed.set(drivername="postgresql+psycopg")


def server_engine(url: str) -> Engine:
    """The process's engine for this URL (made once, shared by every project and thread)."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            parsed = check_url(url)
            engine = create_engine(
                parsed, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW, pool_pre_ping=True,
                connect_args={"connect_timeout": CONNECT_TIMEOUT_S,
                              "application_name": "nuboard"})
            event.listen(engine, "connect", _on_connect)
            _engines[url] = engine
        return engine


def dispose_engines() -> None:
    """Close every server connection of this process (a benchmark measuring one backend, then
    the other)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def _new_pools_in_child() -> None:
    """After fork() (a DataLoader's workers, a script's own): the child must never talk on the
    parent's sockets, where both would garble one conversation. Each engine starts a new pool
    (close=False: the parent's connections stay the parent's), and the lock is new, since
    another thread may have held it at the fork."""
    global _engines_lock
    _engines_lock = threading.Lock()
    for engine in list(_engines.values()):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_pools_in_child)


def _on_connect(dbapi_connection, _record) -> None:
    """Strings go to the server with NUL replaced by U+FFFD: PostgreSQL's text cannot hold
    U+0000, which a string in a run.json can; SQLite keeps it."""
    dbapi_connection.adapters.register_dumper(str, _nul_free_dumper())


@functools.lru_cache(maxsize=None)
def _nul_free_dumper():
    from psycopg.adapt import Dumper

    class NulFreeStr(Dumper):
        """str as text of unknown type (as psycopg sends str), NUL replaced."""

        def dump(self, obj: str) -> bytes:
            if "\x00" in obj:
                obj = obj.replace("\x00", "\ufffd")
            return obj.encode("utf-8")

    return NulFreeStr


def root_id(root: Path) -> str:
    """The root's id, from `<root>/.nuboard/root.json` (written the first time, atomically).

    Raises:
        CatalogError: there is none and the root cannot be written.
    """
    path = Path(root) / ROOT_FILE
    for _ in range(3):
        try:
            doc = read_json(path)
            if isinstance(doc, dict) and isinstance(doc.get("id"), str) and \
                    re.fullmatch(r"[0-9a-f]{8,32}", doc["id"]):
                return doc["id"][:8]
            raise CatalogError(
                f"{str(path)!r} does not hold a root id; remove it and a new one is made "
                "(the shared catalog then indexes this folder into new schemas).")
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            raise CatalogError(f"{str(path)!r} cannot be read ({exc}).") from None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, {"format": 1, "id": uuid.uuid4().hex}, exclusive=True)
        except FileExistsError:
            continue                                 # another process made it: read theirs
        except OSError as exc:
            raise CatalogError(
                f"The shared catalog names this folder by {str(path)!r}, which cannot be "
                f"written ({exc.strerror or exc}); run `nuboard reindex --catalog URL` once "
                "from a host that can write the folder.") from None
    raise CatalogError(f"{str(path)!r} keeps changing; try again.")


def schema_name(root_key: str, project: str) -> str:
    """`nb_<root id>_<project as letters and digits>_<hash>`: at most 63 bytes, distinct per
    project (the hash is of the exact name, so 'a-b' and 'a_b' differ)."""
    slug = _SLUG.sub("_", project.lower()).strip("_")[:40]
    digest = hashlib.sha256(project.encode()).hexdigest()[:6]
    return f"nb_{root_key}_{slug}_{digest}" if slug else f"nb_{root_key}_{digest}"


def lock_key(schema: str) -> int:
    """The advisory lock (a signed 64-bit key) that serialises the writers of a schema."""
    return int.from_bytes(hashlib.sha256(f"nuboard:{schema}".encode()).digest()[:8], "big",
                          signed=True)


def check_schema(schema: str) -> str:
    """The schema's name, checked to be one schema_name() makes (letters, digits, '_')."""
    if not _SCHEMA.fullmatch(schema):
        raise CatalogError(f"{schema!r} is not a schema name NuBoard makes (nb_ and then "
                           "lower-case letters, digits and '_').")
    return schema


def schema_engines(base: Engine, schema: str) -> tuple[Engine, Engine]:
    """(writer, reader) for one project's schema, sharing the base engine's pool.

    Every transaction sets its search_path to the schema; the writer's takes the schema's
    advisory lock first (one writer at a time, as BEGIN IMMEDIATE on SQLite), the reader's is a
    read-only REPEATABLE READ snapshot. The schema and the key travel as bound parameters.
    """
    writer = base.execution_options(nuboard_schema=schema)
    reader = base.execution_options(nuboard_schema=schema)
    params = {"path": f'"{check_schema(schema)}"', "key": lock_key(schema)}

    @event.listens_for(writer, "begin")
    def _write_begin(conn):
        conn.exec_driver_sql("SELECT set_config('search_path', %(path)s, true), "
                             "pg_advisory_xact_lock(%(key)s)", params)

    @event.listens_for(reader, "begin")
    def _read_begin(conn):
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.exec_driver_sql("SELECT set_config('search_path', %(path)s, true)", params)

    return writer, reader


# CREATE SCHEMA and COMMENT take no parameters: their values are bound to settings of the
# transaction, and the server quotes them (quote_ident, quote_literal), so no byte of a
# folder's name is ever read as SQL, whatever standard_conforming_strings says.
_CREATE_SCHEMA = """DO $nuboard$ BEGIN
    EXECUTE 'CREATE SCHEMA ' || quote_ident(current_setting('nuboard.schema'));
    EXECUTE 'COMMENT ON SCHEMA ' || quote_ident(current_setting('nuboard.schema'))
        || ' IS ' || quote_literal(current_setting('nuboard.comment'));
END $nuboard$"""


def create_schema(writer: Engine, schema: str, comment: str) -> None:
    """Create the project's schema when missing (under its lock, so two hosts never race),
    with the comment given; both go to the server as bound values, never as SQL text."""
    with writer.begin() as conn:
        exists = conn.exec_driver_sql(
            "SELECT 1 FROM pg_namespace WHERE nspname = %(s)s", {"s": schema}).first()
        if exists is None:
            conn.exec_driver_sql(
                "SELECT set_config('nuboard.schema', %(s)s, true), "
                "set_config('nuboard.comment', %(c)s, true)",
                {"s": check_schema(schema), "c": comment.replace("\x00", "")})
            conn.exec_driver_sql(_CREATE_SCHEMA)


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error from the server (None for any other error)."""
    orig = getattr(exc, "orig", exc)
    return getattr(orig, "sqlstate", None)


def driver_text(exc: BaseException, *, first_line: bool = False, limit: int = 300) -> str:
    """What the driver said of an error, on one line (SQLAlchemy's wrapper, with its SQL and
    parameters, left out); first_line: its first line alone (no DETAIL, no quoted SQL)."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).splitlines()[0] if first_line and str(orig) else str(orig)
    return " ".join(text.split())[:limit] or type(orig).__name__


def unreachable(exc: BaseException, url: str) -> CatalogError:
    """One line for a server that cannot be reached or refuses us."""
    return CatalogError(f"The catalog server {shown_url(url)!r} cannot be used: {driver_text(exc)}")


def refused(exc: BaseException, url: str, schema: str) -> CatalogError:
    """One line for a server that refuses to make or write a project's schema (the role's rights)."""
    text = driver_text(exc, first_line=True)
    hint = ""
    if sqlstate(exc) == NO_RIGHTS:
        hint = (" The role needs CREATE on the database and must own the schemas it writes: use "
                "one role on every NuBoard host (docs/team.md).")
    return CatalogError(f"The catalog server {shown_url(url)!r} refused the schema {schema} of this "
                        f"project: {text}.{hint}")


def check_reachable(url: str) -> None:
    """Connect once (a viewer checks its server before it serves); CatalogError when it cannot."""
    from sqlalchemy.exc import OperationalError
    try:
        server_engine(url).connect().close()
    except OperationalError as exc:
        raise unreachable(exc, url) from None
