"""Team mode: the same catalog on PostgreSQL (docs/team.md).

On both backends:
- config.seq and scalars.seq keep the order a run's config keys and scalars were written in
  (reads sorted by SQLite's rowid before, which PostgreSQL has not); on SQLite the rows already
  there take their rowid, which is that order.
- projects.changes counts the syncs that changed the project's rows, so a viewer learns that
  another host's sync changed them (its own sync then finds nothing to do).

On PostgreSQL only (SQLite's INTEGER is 64-bit and it compares text byte by byte already):
- the nanosecond mtimes, sizes, counts and steps are BIGINT;
- every text column compares and sorts by code point (COLLATE "C"), as SQLite does, whatever
  the database's locale, so pages list runs in the same order on both;
- ix_config_key_text goes: a b-tree entry holds at most about 2.7 kB, and a config value may be
  longer (config lookups find the key through ix_config_key_num).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

WIDE = {"runs": ["folder_mtime_ns", "parent_step", "world_size"],
        "versions": ["folder_mtime_ns", "size", "files"],
        "scalars": ["count", "last_step"]}
STRINGS = {
    "lineage": ["kind", "run_project", "run_id", "artifact_project", "artifact_name", "origin"],
    "projects": ["name"],
    "artifacts": ["name", "type"],
    "runs": ["run_id", "name", "group_name", "status", "host", "python", "platform", "created",
             "ended", "parent_run_id", "git_commit", "signature"],
    "views": ["name"],
    "config": ["key", "type"],
    "scalars": ["name"],
    "tags": ["tag"],
    "versions": ["type", "digest", "storage", "base", "producer_project", "producer_run", "created",
                 "created_by", "signature"],
}
TEXTS = {"projects": ["path"], "runs": ["notes", "cut"], "views": ["query", "columns", "sort"],
         "config": ["value_text"],
         "versions": ["location", "description", "metadata", "cut"]}


def upgrade() -> None:
    op.add_column("projects", sa.Column("changes", sa.Integer(), nullable=False,
                                        server_default="0"))
    op.add_column("config", sa.Column("seq", sa.Integer(), nullable=True))
    op.add_column("scalars", sa.Column("seq", sa.Integer(), nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        op.execute("UPDATE config SET seq = rowid")
        op.execute("UPDATE scalars SET seq = rowid")
        return
    op.drop_index("ix_config_key_text", table_name="config")
    for table, names in WIDE.items():
        for name in names:
            op.alter_column(table, name, type_=sa.BigInteger(), existing_type=sa.Integer())
    for kinds, kind in ((STRINGS, sa.String), (TEXTS, sa.Text)):
        for table, names in kinds.items():
            for name in names:
                op.alter_column(table, name, type_=kind(collation="C"), existing_type=kind())


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.create_index("ix_config_key_text", "config", ["key", "value_text"])
    for table, name in (("scalars", "seq"), ("config", "seq"), ("projects", "changes")):
        with op.batch_alter_table(table) as batch:
            batch.drop_column(name)
