"""One read-only SQL statement over a catalog, for `nuboard sql` (docs/cli.md).

On SQLite the connection cannot write: the file is opened with mode=ro, query_only is set, and
an authorizer denies every action but reading (and the pragmas that only read), and the
functions that reach past SQL (fts3_tokenizer, load_extension).

On PostgreSQL (team mode) the statement runs in a READ ONLY transaction with the project's
schema as its search_path, prepared (so the server takes exactly one statement, never a COMMIT
and a write after it), on a connection of its own that is closed afterwards (so nothing it set
lasts), and it must be a statement that reads: SELECT, WITH, VALUES, TABLE, EXPLAIN or SHOW.
While it runs its session's locks are watched, and it is stopped if it takes an advisory lock
(the lock a project's writers hold: LockWatch).
"""
from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from nuboard.errors import NuBoardError

# Pragmas that only read, with an argument (PRAGMA table_info(runs)).
READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check", "collation_list",
    "database_list", "function_list", "module_list", "pragma_list", "compile_options"})
# Pragmas that act even without an argument; refused like a write.
ACTING_PRAGMAS = frozenset({"optimize", "wal_checkpoint", "incremental_vacuum", "shrink_memory"})
# Functions refused outright, with why: fts3_tokenizer() is a pointer leak with one argument and
# a classic code-execution primitive with two.
REFUSED_FUNCTIONS = {"fts3_tokenizer": "it reads and sets raw C pointers inside SQLite",
                     "load_extension": "it loads native code into the process"}
ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
           sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT}
_ACTIONS = ("CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
            "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE",
            "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
            "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA", "UPDATE", "ATTACH",
            "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE")
ACTION_NAMES = {getattr(sqlite3, "SQLITE_" + n): n.replace("_", " ") for n in _ACTIONS
                if hasattr(sqlite3, "SQLITE_" + n)}


class ReadOnlyError(NuBoardError, PermissionError):
    """A statement given to `nuboard sql` would change the catalog."""


class RefusedFunctionError(NuBoardError, PermissionError):
    """A statement given to `nuboard sql` calls a function it refuses (fts3_tokenizer, ...)."""


class SqlError(NuBoardError, ValueError):
    """A statement given to `nuboard sql` does not run (syntax, unknown table, two statements)."""


def connect_read_only(path: Path) -> tuple[sqlite3.Connection, list[str]]:
    """A connection that cannot write: mode=ro, query_only, and an authorizer.

    Returns the connection and a list where the authorizer notes what it denied; a refused
    function is noted as its bare name (a key of REFUSED_FUNCTIONS).
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=60)
    con.execute("PRAGMA query_only=ON")
    con.execute("PRAGMA busy_timeout=60000")
    prepare_pragma_tables(con)
    denied: list[str] = []

    def authorize(action: int, arg1, arg2, _db, _trigger) -> int:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in REFUSED_FUNCTIONS:
            denied.append(arg2.lower())
            return sqlite3.SQLITE_DENY
        if action in ALLOWED:
            return sqlite3.SQLITE_OK
        pragma = (arg1 or "").lower()
        if action == sqlite3.SQLITE_PRAGMA and pragma not in ACTING_PRAGMAS and (
                arg2 is None or pragma in READ_PRAGMAS):
            return sqlite3.SQLITE_OK
        what = ACTION_NAMES.get(action, f"action {action}")
        target = arg1 if action != sqlite3.SQLITE_PRAGMA or arg2 is None else f"{arg1} = {arg2}"
        denied.append(f"{what} {target!r}" if target else what)
        return sqlite3.SQLITE_DENY

    con.set_authorizer(authorize)
    return con, denied


def prepare_pragma_tables(con: sqlite3.Connection) -> None:
    """Set up every pragma table-valued function (pragma_table_info, ...) before the authorizer.

    SQLite builds such a table on its first use in a connection and asks the authorizer to
    UPDATE sqlite_master while it does; built here (EXPLAIN prepares, runs nothing), a later
    SELECT from one asks only for SELECT, READ and the PRAGMA it runs, which the authorizer checks.
    """
    try:
        names = [name for (name,) in con.execute("SELECT name FROM pragma_pragma_list")]
    except sqlite3.DatabaseError:           # a build without the pragma tables
        return
    for name in names:
        try:
            con.execute(f'EXPLAIN SELECT * FROM "pragma_{name}"')
        except sqlite3.OperationalError:    # "no such table": this pragma has no table form
            pass


SERVER_READS = ("select", "with", "values", "table", "explain", "show")
SERVER_TIMEOUT_MS = 60_000
LOCK_WATCH_S = 0.05              # how often the locks of a statement on a server are looked at
_FIRST_WORD = re.compile(r"\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*\(*\s*([A-Za-z]+)", re.S)


def _shown(statement: str) -> str:
    shown = " ".join(statement.split())
    return shown if len(shown) <= 60 else shown[:57] + "..."


def run_statement(where, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one read-only statement over a catalog: (column names, rows).

    where: the catalog file (SQLite), or an open Catalog (on a server, its project's schema;
        a Catalog of an SQLite file is read through its file).

    Raises:
        ReadOnlyError: the statement would write, attach or change a setting; nothing changed.
        RefusedFunctionError: the statement calls fts3_tokenizer() or load_extension().
        SqlError: the database refuses the statement for another reason.
    """
    if getattr(where, "on_server", False):
        return _run_on_server(where, statement)
    return _run_on_file(getattr(where, "path", None) or where, statement)


def _run_on_server(catalog, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    from sqlalchemy.exc import DBAPIError
    match = _FIRST_WORD.match(statement)
    word = match.group(1).lower() if match else ""
    if word not in SERVER_READS:
        raise ReadOnlyError(
            f"The catalog is read-only here: {_shown(statement)!r} is not a statement that reads, "
            "so it did not run. 'nuboard sql' runs one SELECT (or WITH, VALUES, TABLE, EXPLAIN, "
            "SHOW) statement.")
    conn = catalog.reader.connect()
    watch = None
    try:
        raw = conn.connection.driver_connection
        cur = raw.cursor()
        try:
            # the reader's transaction (READ ONLY, search_path) begins with this statement
            conn.exec_driver_sql("SELECT set_config('statement_timeout', %(ms)s, true)",
                                 {"ms": str(SERVER_TIMEOUT_MS)})
            watch = LockWatch(catalog.reader, raw.info.backend_pid)
            cur.execute(statement, prepare=True)
            rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        except DBAPIError as exc:
            _check_watch(watch, statement)
            raise _server_error(statement, exc.orig) from None
        except Exception as exc:
            if getattr(exc, "sqlstate", None) is None:
                raise
            _check_watch(watch, statement)
            raise _server_error(statement, exc) from None
        _check_watch(watch, statement)
        columns = [d.name for d in cur.description or ()]
        return columns, rows
    finally:
        if watch is not None:
            watch.stop()
        conn.invalidate()            # a connection of its own: nothing the statement set lasts
        conn.close()


class LockWatch:
    """While a statement of `nuboard sql` runs on a server, look every LOCK_WATCH_S at the
    advisory locks its session holds or waits for, and cancel it on the first one.

    The writers of each project take the project's advisory lock (server.lock_key), and a SELECT
    may call pg_advisory_lock() however it is spelled (qualified, quoted, inside query_to_xml),
    so the session is watched, not the text: a read never holds a project's writes.
    """

    def __init__(self, engine, pid: int):
        self.engine, self.pid = engine, pid
        self.caught = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="nuboard-sql-locks")
        self._thread.start()

    def _watch(self) -> None:
        params = {"pid": self.pid}
        try:
            with self.engine.connect() as conn:
                while True:
                    held = conn.exec_driver_sql(
                        "SELECT 1 FROM pg_locks WHERE pid = %(pid)s AND locktype = 'advisory' "
                        "LIMIT 1", params).first()
                    if held is not None:
                        self.caught = True
                        conn.exec_driver_sql("SELECT pg_cancel_backend(%(pid)s)", params)
                        return
                    if self._done.wait(LOCK_WATCH_S):
                        return
        except Exception:             # the server went away: the statement fails on its own
            return

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def _check_watch(watch: LockWatch | None, statement: str) -> None:
    """Raise ReadOnlyError when the statement was stopped for taking an advisory lock."""
    if watch is None:
        return
    watch.stop()
    if watch.caught:
        raise ReadOnlyError(
            f"The catalog is read-only here: {_shown(statement)!r} takes an advisory lock, the "
            "lock that holds a project's writes, so it was stopped and holds nothing. 'nuboard "
            "sql' runs statements that only read.")


def _server_error(statement: str, exc) -> Exception:
    state = getattr(exc, "sqlstate", None) or ""
    text = " ".join(str(exc).split()).rstrip(".")
    if state == "25006":            # read_only_sql_transaction
        return ReadOnlyError(
            f"The catalog is read-only here: {_shown(statement)!r} would change it ({text}), so "
            "nothing was changed. 'nuboard sql' runs one SELECT statement.")
    if state == "42601" and "multiple commands" in text:
        return SqlError(f"SQL {_shown(statement)!r} holds several statements; 'nuboard sql' runs one.")
    return SqlError(f"SQL {_shown(statement)!r} failed: {text}.")


def _run_on_file(path: Path, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one read-only statement over the catalog file: (column names, rows).

    Raises:
        ReadOnlyError: the statement would write, attach or change a setting; nothing changed.
        RefusedFunctionError: the statement calls fts3_tokenizer() or load_extension().
        SqlError: SQLite refuses the statement for another reason.
    """
    con, denied = connect_read_only(path)
    try:
        try:
            cur = con.execute(statement)
            rows = cur.fetchall()
        except (sqlite3.DatabaseError, sqlite3.ProgrammingError, sqlite3.Warning) as exc:
            shown = _shown(statement)
            refused = [d for d in denied if d in REFUSED_FUNCTIONS]
            if refused:
                name = refused[0]
                raise RefusedFunctionError(
                    f"The SQL function {name}() is refused: {REFUSED_FUNCTIONS[name]}, so {shown!r} "
                    "did not run. 'nuboard sql' runs SELECT statements and PRAGMAs that read.") from None
            if denied or "readonly" in str(exc) or "read-only" in str(exc):
                why = f" ({denied[0]})" if denied else ""
                raise ReadOnlyError(
                    f"The catalog is read-only here: {shown!r} would change it{why}, so nothing "
                    "was changed. 'nuboard sql' runs SELECT statements and PRAGMAs that read."
                ) from None
            raise SqlError(f"SQL {shown!r} failed: {str(exc).rstrip('.')}.") from None
        columns = [d[0] for d in cur.description or ()]
        return columns, rows
    finally:
        con.close()
