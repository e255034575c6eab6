"""Give each run the seconds after which its standing heartbeat makes it lost (runs.lost_after).

A run is lost when its heartbeat is over two minutes and over three of its own heartbeat
intervals old (status.lost_after); the sync writes that figure from the heartbeat file. The
running runs indexed before this revision are read again by the next sync (their signature is
cleared); NULL counts as 120 seconds.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("lost_after", sa.Float(), nullable=True))
    op.execute("UPDATE runs SET signature = '' WHERE status = 'running'")


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("lost_after")
