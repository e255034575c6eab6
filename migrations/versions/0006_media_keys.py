"""Index each run's media keys (media_keys): per run, rank and key, the kind of media it logged
(image, histogram, text, table, audio), how many entries, and the first and last step, so
pages know what to draw without reading the logs.

The rows are derived from the MEDIA records of the run's event logs; no run indexed before
this revision held one (the record kind is newer), so there is nothing to read again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    wide = sa.BigInteger() if postgres else sa.Integer()
    text = sa.String(collation="C") if postgres else sa.String()
    op.create_table(
        "media_keys",
        sa.Column("run", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("rank", sa.Integer(), primary_key=True),
        sa.Column("key", text, primary_key=True),
        sa.Column("kind", text, nullable=False),
        sa.Column("count", wide, nullable=False),
        sa.Column("first_step", wide),
        sa.Column("last_step", wide),
        sa.Column("seq", sa.Integer()),
    )
    op.create_index("ix_media_keys_key", "media_keys", ["key"])


def downgrade() -> None:
    op.drop_table("media_keys")
