"""The catalog's tables: a documented, stable schema (docs/catalog.md) that power users query.

Every row is derived from the files under the project folder; `nuboard reindex` rebuilds
the same rows from nothing.
"""
from __future__ import annotations

from sqlalchemy import (
                        Boolean,
                        Column,
                        Float,
                        ForeignKey,
                        Index,
                        Integer,
                        MetaData,
                        String,
                        Table,
                        Text,
                        UniqueConstraint,
)

metadata = MetaData()

projects = Table(
    "projects", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String, nullable=False, unique=True),     # "team/llm"
    Column("path", Text, nullable=False),                    # the project folder, absolute
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String, nullable=False),                # the folder name
    Column("name", String, nullable=False),
    Column("group_name", String),
    Column("notes", Text),
    Column("status", String, nullable=False),                # as run.json says; 'lost' is computed
    Column("heartbeat_mtime", Float),                        # the heartbeat file's mtime (epoch s)
    Column("lost_after", Float),                             # seconds of a still heartbeat: lost
    Column("host", String),
    Column("python", String),
    Column("platform", String),
    Column("created", String, nullable=False),               # ISO 8601, UTC
    Column("ended", String),
    Column("duration_s", Float),
    Column("world_size", Integer),
    Column("parent_run_id", String),
    Column("parent_step", Integer),
    Column("git_commit", String),
    Column("cut", Text),                                     # what run.json held past the API's limits
    # what the sync saw, to tell a changed run from an unchanged one cheaply
    Column("folder_mtime_ns", Integer, nullable=False),
    Column("signature", String, nullable=False),
    UniqueConstraint("project_id", "run_id", name="uq_runs_project_run"),
)
Index("ix_runs_created", runs.c.created)
Index("ix_runs_status", runs.c.status)
Index("ix_runs_group", runs.c.group_name)

tags = Table(
    "tags", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", String, primary_key=True),
)
Index("ix_tags_tag", tags.c.tag)

config = Table(
    "config", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("key", String, primary_key=True),                 # flattened with '.': model.width
    Column("type", String, nullable=False),                  # int, float, bool, str, null, list
    Column("value_num", Float),                              # ints, floats and bools
    Column("value_text", Text),                              # a str itself; other values as JSON
)
Index("ix_config_key_num", config.c.key, config.c.value_num)
Index("ix_config_key_text", config.c.key, config.c.value_text)

scalars = Table(
    "scalars", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("rank", Integer, primary_key=True),
    Column("name", String, primary_key=True),
    Column("last", Float),
    Column("min", Float),
    Column("max", Float),
    Column("count", Integer, nullable=False),
    Column("last_step", Integer),
)
Index("ix_scalars_name_last", scalars.c.name, scalars.c.last)

artifacts = Table(
    "artifacts", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String, nullable=False),
    Column("type", String),
    UniqueConstraint("project_id", "name", name="uq_artifacts_project_name"),
)

versions = Table(
    "versions", metadata,
    Column("id", Integer, primary_key=True),
    Column("artifact", Integer, ForeignKey("artifacts.id", ondelete="CASCADE"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", String),
    Column("digest", String),                                # sha256 of the file list (see sync)
    Column("size", Integer),
    Column("files", Integer),
    Column("storage", String),                               # copy or reference
    Column("base", String),                                  # version, project or filesystem
    Column("location", Text),                                # as the manifest stores it
    Column("description", Text),
    Column("metadata", Text),                                # JSON object
    Column("producer_project", String),
    Column("producer_run", String),
    Column("created", String),
    Column("created_by", String),
    Column("unlinked", Boolean, nullable=False, default=False),
    Column("cut", Text),                                     # what the manifest held past the API's limits
    Column("folder_mtime_ns", Integer, nullable=False),
    Column("signature", String, nullable=False),
    UniqueConstraint("artifact", "version", name="uq_versions_artifact_version"),
)

lineage = Table(
    "lineage", metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String, nullable=False),                  # produced (version by run) or used
    Column("run_project", String, nullable=False),
    Column("run_id", String, nullable=False),
    Column("artifact_project", String, nullable=False),      # lineage crosses projects
    Column("artifact_name", String, nullable=False),
    Column("version", Integer, nullable=False),
    Column("origin", String, nullable=False),                # run (run.json), manifest, or use (note)
    UniqueConstraint("kind", "run_project", "run_id", "artifact_project", "artifact_name", "version",
                     "origin", name="uq_lineage_edge"),
)
Index("ix_lineage_artifact", lineage.c.artifact_project, lineage.c.artifact_name, lineage.c.version)
Index("ix_lineage_run", lineage.c.run_project, lineage.c.run_id)

views = Table(
    "views", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String, nullable=False),
    Column("query", Text, nullable=False),
    Column("columns", Text),                                 # JSON list
    Column("sort", Text),
    UniqueConstraint("project_id", "name", name="uq_views_project_name"),
)
