"""The catalog's tables: a documented, stable schema (docs/catalog.md) that power users query.

Every row is derived from the files under the project folder; `nuboard reindex` rebuilds
the same rows from nothing. On PostgreSQL (team mode) migration 0005 widens the integers that
may pass 2**31 to BIGINT and gives text columns COLLATE "C", so both backends compare alike.
"""
from __future__ import annotations

from sqlalchemy import (
                        BigInteger,
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
# What migration 0005 makes of them on PostgreSQL (SQLite's INTEGER is 64-bit already, and it
# compares text by code point): 64-bit integers, and text that sorts as SQLite's does.
Wide = Integer().with_variant(BigInteger(), "postgresql")
Str = String().with_variant(String(collation="C"), "postgresql")
Txt = Text().with_variant(Text(collation="C"), "postgresql")

projects = Table(
    "projects", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", Str, nullable=False, unique=True),        # "team/llm"
    Column("path", Txt, nullable=False),                     # the project folder, absolute
    Column("changes", Integer, nullable=False, server_default="0"),  # syncs that changed rows
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", Str, nullable=False),                   # the folder name
    Column("name", Str, nullable=False),
    Column("group_name", Str),
    Column("notes", Txt),
    Column("status", Str, nullable=False),                   # as run.json says; 'lost' is computed
    Column("heartbeat_mtime", Float),                        # the heartbeat file's mtime (epoch s)
    Column("lost_after", Float),                             # seconds of a still heartbeat: lost
    Column("host", Str),
    Column("python", Str),
    Column("platform", Str),
    Column("created", Str, nullable=False),                  # ISO 8601, UTC
    Column("ended", Str),
    Column("duration_s", Float),
    Column("world_size", Wide),
    Column("parent_run_id", Str),
    Column("parent_step", Wide),
    Column("git_commit", Str),
    Column("cut", Txt),                                      # what run.json held past the API's limits
    # what the sync saw, to tell a changed run from an unchanged one cheaply
    Column("folder_mtime_ns", Wide, nullable=False),
    Column("signature", Str, nullable=False),
    UniqueConstraint("project_id", "run_id", name="uq_runs_project_run"),
)
Index("ix_runs_created", runs.c.created)
Index("ix_runs_status", runs.c.status)
Index("ix_runs_group", runs.c.group_name)

tags = Table(
    "tags", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Str, primary_key=True),
)
Index("ix_tags_tag", tags.c.tag)

config = Table(
    "config", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("key", Str, primary_key=True),                    # flattened with '.': model.width
    Column("type", Str, nullable=False),                     # int, float, bool, str, null, list
    Column("value_num", Float),                              # ints, floats and bools
    Column("value_text", Txt),                               # a str itself; other values as JSON
    Column("seq", Integer),                                  # the order of the keys in run.json
)
Index("ix_config_key_num", config.c.key, config.c.value_num)
# Not on PostgreSQL: a b-tree entry holds at most about 2.7 kB, and a config value may be longer.
Index("ix_config_key_text", config.c.key, config.c.value_text).ddl_if(dialect="sqlite")

scalars = Table(
    "scalars", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("rank", Integer, primary_key=True),
    Column("name", Str, primary_key=True),
    Column("last", Float),
    Column("min", Float),
    Column("max", Float),
    Column("count", Wide, nullable=False),
    Column("last_step", Wide),
    Column("seq", Integer),                                  # the order the scalars were logged in
)
Index("ix_scalars_name_last", scalars.c.name, scalars.c.last)

# Per run, rank and media key (images, histograms, text, tables, audio logged through run.log):
# what pages need to know what to draw, without reading the logs (migration 0006).
media_keys = Table(
    "media_keys", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("rank", Integer, primary_key=True),
    Column("key", Str, primary_key=True),
    Column("kind", Str, nullable=False),                     # image, histogram, text, table, audio
    Column("count", Wide, nullable=False),                   # entries, after the resume rule
    Column("first_step", Wide),
    Column("last_step", Wide),
    Column("seq", Integer),                                  # key order (the order of the rows)
)
Index("ix_media_keys_key", media_keys.c.key)

artifacts = Table(
    "artifacts", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", Str, nullable=False),
    Column("type", Str),
    UniqueConstraint("project_id", "name", name="uq_artifacts_project_name"),
)

versions = Table(
    "versions", metadata,
    Column("id", Integer, primary_key=True),
    Column("artifact", Integer, ForeignKey("artifacts.id", ondelete="CASCADE"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", Str),
    Column("digest", Str),                                   # sha256 of the file list (see sync)
    Column("size", Wide),
    Column("files", Wide),
    Column("storage", Str),                                  # copy or reference
    Column("base", Str),                                     # version, project or filesystem
    Column("location", Txt),                                 # as the manifest stores it
    Column("description", Txt),
    Column("metadata", Txt),                                 # JSON object
    Column("producer_project", Str),
    Column("producer_run", Str),
    Column("created", Str),
    Column("created_by", Str),
    Column("unlinked", Boolean, nullable=False, default=False),
    Column("cut", Txt),                                      # what the manifest held past the API's limits
    Column("folder_mtime_ns", Wide, nullable=False),
    Column("signature", Str, nullable=False),
    UniqueConstraint("artifact", "version", name="uq_versions_artifact_version"),
)

lineage = Table(
    "lineage", metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", Str, nullable=False),                     # produced (version by run) or used
    Column("run_project", Str, nullable=False),
    Column("run_id", Str, nullable=False),
    Column("artifact_project", Str, nullable=False),         # lineage crosses projects
    Column("artifact_name", Str, nullable=False),
    Column("version", Integer, nullable=False),
    Column("origin", Str, nullable=False),                   # run (run.json), manifest, or use (note)
    UniqueConstraint("kind", "run_project", "run_id", "artifact_project", "artifact_name", "version",
                     "origin", name="uq_lineage_edge"),
)
Index("ix_lineage_artifact", lineage.c.artifact_project, lineage.c.artifact_name, lineage.c.version)
Index("ix_lineage_run", lineage.c.run_project, lineage.c.run_id)

views = Table(
    "views", metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", Str, nullable=False),
    Column("query", Txt, nullable=False),
    Column("columns", Txt),                                  # JSON list
    Column("sort", Txt),
    UniqueConstraint("project_id", "name", name="uq_views_project_name"),
)
