"""Alembic environment of the NuBoard catalog: SQLite (batch mode for ALTERs) and PostgreSQL
(each project's schema, set as the connection's search_path by catalog/server.py)."""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from nuboard.catalog.tables import metadata

config = context.config


def run(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as conn:
        run(conn)
        conn.commit()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      render_as_batch=True, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
