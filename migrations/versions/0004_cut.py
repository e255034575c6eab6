"""Note what a run.json or a manifest held past the API's limits (runs.cut, versions.cut).

Fields read from files are indexed cut to the limits the API writes by (1,000 tags, names of
256 characters, notes of 1,000,000, a config of 16 MB and 64 levels, metadata of 1 MB); the
column says what was left out, and is NULL when nothing was. Runs and versions indexed before
this revision whose rows go past those limits are read again by the next sync (their signature
is cleared), so they are cut and noted.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("cut", sa.Text(), nullable=True))
    op.add_column("versions", sa.Column("cut", sa.Text(), nullable=True))
    op.execute("UPDATE runs SET signature = '' WHERE length(name) > 256 OR length(group_name) > 256 "
               "OR length(notes) > 1000000 OR length(host) > 256 "
               "OR id IN (SELECT run FROM tags GROUP BY run HAVING count(*) > 1000) "
               "OR id IN (SELECT run FROM tags WHERE length(tag) > 128)")
    op.execute("UPDATE versions SET signature = '' WHERE length(metadata) > 1048576 "
               "OR length(description) > 1000000")


def downgrade() -> None:
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("cut")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("cut")
