"""The per-project catalog: an SQLite index of runs, derived from the files (SQLAlchemy, Alembic)."""
