"""Index artifact versions in full (type, where the files are, metadata, producer) and give each
lineage edge its origin (a run.json, a manifest, or a use note), so each is replaced on its own.

Both tables are derived from the files and were not written before this revision, so they are
recreated; the next sync fills them.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_EDGE = ["kind", "run_project", "run_id", "artifact_project", "artifact_name", "version"]


def _lineage(with_origin: bool) -> None:
    columns = [
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("run_project", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("artifact_project", sa.String(), nullable=False),
        sa.Column("artifact_name", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
    ]
    if with_origin:
        columns.append(sa.Column("origin", sa.String(), nullable=False))
    op.create_table("lineage", *columns,
                    sa.UniqueConstraint(*_EDGE, *(["origin"] if with_origin else []),
                                        name="uq_lineage_edge"))
    op.create_index("ix_lineage_artifact", "lineage", ["artifact_project", "artifact_name", "version"])
    op.create_index("ix_lineage_run", "lineage", ["run_project", "run_id"])


def _versions(full: bool) -> None:
    extra = {
        "type": sa.String(), "base": sa.String(), "location": sa.Text(), "metadata": sa.Text(),
        "producer_project": sa.String(), "producer_run": sa.String(), "created_by": sa.String(),
    }
    names = ["type", "digest", "size", "files", "storage", "base", "location", "description",
             "metadata", "producer_project", "producer_run", "created", "created_by"]
    kinds = {"digest": sa.String(), "size": sa.Integer(), "files": sa.Integer(),
             "storage": sa.String(), "description": sa.Text(), "created": sa.String(), **extra}
    columns = [sa.Column(n, kinds[n]) for n in names if full or n not in extra]
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("artifact", sa.Integer(), sa.ForeignKey("artifacts.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        *columns,
        sa.Column("unlinked", sa.Boolean(), nullable=False),
        sa.Column("folder_mtime_ns", sa.Integer(), nullable=False),
        sa.Column("signature", sa.String(), nullable=False),
        sa.UniqueConstraint("artifact", "version", name="uq_versions_artifact_version"),
    )


def upgrade() -> None:
    op.drop_table("lineage")
    op.drop_table("versions")
    _versions(full=True)
    _lineage(with_origin=True)


def downgrade() -> None:
    op.drop_table("lineage")
    op.drop_table("versions")
    _versions(full=False)
    _lineage(with_origin=False)
