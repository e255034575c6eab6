"""Statements written once for both backends (SQLite, and PostgreSQL in team mode)."""
from __future__ import annotations

from sqlalchemy import Table, update
from sqlalchemy.engine import Connection

from .tables import projects


def insert_or_ignore(conn: Connection, table: Table):
    """INSERT that skips a row already there (SQLite's OR IGNORE, PostgreSQL's ON CONFLICT)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table).on_conflict_do_nothing()


def driver_insert(conn: Connection, table: Table) -> str:
    """A plain INSERT of every column of the table, for exec_driver_sql with tuples: a full
    rebuild inserts hundreds of thousands of rows, and building SQLAlchemy's parameters for each
    cost more than the database did."""
    names = [c.name for c in table.columns]
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return (f"INSERT INTO {table.name} ({', '.join(chr(34) + n + chr(34) for n in names)}) "
            f"VALUES ({', '.join([mark] * len(names))})")


def note_change(conn: Connection, project_id: int) -> None:
    """Count a sync that changed the project's rows (projects.changes), in its transaction, so
    a viewer whose own sync finds nothing new still learns that another process changed them."""
    conn.execute(update(projects).where(projects.c.id == project_id)
                 .values(changes=projects.c.changes + 1))
