"""The first catalog: projects, runs, tags, config, scalars, artifacts, versions, lineage, views.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(), nullable=False, unique=True),
        sa.Column("path", sa.Text(), nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("group_name", sa.String()),
        sa.Column("notes", sa.Text()),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("heartbeat_mtime", sa.Float()),
        sa.Column("host", sa.String()),
        sa.Column("python", sa.String()),
        sa.Column("platform", sa.String()),
        sa.Column("created", sa.String(), nullable=False),
        sa.Column("ended", sa.String()),
        sa.Column("duration_s", sa.Float()),
        sa.Column("world_size", sa.Integer()),
        sa.Column("parent_run_id", sa.String()),
        sa.Column("parent_step", sa.Integer()),
        sa.Column("git_commit", sa.String()),
        sa.Column("folder_mtime_ns", sa.Integer(), nullable=False),
        sa.Column("signature", sa.String(), nullable=False),
        sa.UniqueConstraint("project_id", "run_id", name="uq_runs_project_run"),
    )
    op.create_index("ix_runs_created", "runs", ["created"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index("ix_runs_group", "runs", ["group_name"])
    op.create_table(
        "tags",
        sa.Column("run", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tag", sa.String(), primary_key=True),
    )
    op.create_index("ix_tags_tag", "tags", ["tag"])
    op.create_table(
        "config",
        sa.Column("run", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("value_num", sa.Float()),
        sa.Column("value_text", sa.Text()),
    )
    op.create_index("ix_config_key_num", "config", ["key", "value_num"])
    op.create_index("ix_config_key_text", "config", ["key", "value_text"])
    op.create_table(
        "scalars",
        sa.Column("run", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("rank", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("last", sa.Float()),
        sa.Column("min", sa.Float()),
        sa.Column("max", sa.Float()),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("last_step", sa.Integer()),
    )
    op.create_index("ix_scalars_name_last", "scalars", ["name", "last"])
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("type", sa.String()),
        sa.UniqueConstraint("project_id", "name", name="uq_artifacts_project_name"),
    )
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("artifact", sa.Integer(), sa.ForeignKey("artifacts.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String()),
        sa.Column("size", sa.Integer()),
        sa.Column("files", sa.Integer()),
        sa.Column("storage", sa.String()),
        sa.Column("description", sa.Text()),
        sa.Column("created", sa.String()),
        sa.Column("unlinked", sa.Boolean(), nullable=False),
        sa.Column("folder_mtime_ns", sa.Integer(), nullable=False),
        sa.Column("signature", sa.String(), nullable=False),
        sa.UniqueConstraint("artifact", "version", name="uq_versions_artifact_version"),
    )
    op.create_table(
        "lineage",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("run_project", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("artifact_project", sa.String(), nullable=False),
        sa.Column("artifact_name", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.UniqueConstraint("kind", "run_project", "run_id", "artifact_project", "artifact_name",
                            "version", name="uq_lineage_edge"),
    )
    op.create_index("ix_lineage_artifact", "lineage", ["artifact_project", "artifact_name", "version"])
    op.create_index("ix_lineage_run", "lineage", ["run_project", "run_id"])
    op.create_table(
        "views",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("columns", sa.Text()),
        sa.Column("sort", sa.Text()),
        sa.UniqueConstraint("project_id", "name", name="uq_views_project_name"),
    )


def downgrade() -> None:
    for table in ("views", "lineage", "versions", "artifacts", "scalars", "config", "tags", "runs",
                  "projects"):
        op.drop_table(table)
