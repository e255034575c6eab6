"""Artifacts: versioned datasets, checkpoints and reports, copied or referenced, with lineage.

    from nuboard.artifacts import add_artifact, get_artifact
    add_artifact("datasets", "imagenet-100", "/data/imagenet-100", type="dataset", reference=True)
    data = get_artifact("datasets/imagenet-100:latest")
    data["train/shard-000.bin"]      # Path to the file on this machine

`import nuboard` does not import this package; it is imported on first use.
"""
from __future__ import annotations

from .api import (
    Artifact,
    FileProblem,
    SourceInfo,
    add_artifact,
    get_artifact,
    inspect_source,
    list_artifacts,
    list_versions,
    promote_run_path,
    restore_version,
    unlink_version,
    use_artifact,
)
from .errors import (
    ArtifactFileNotFoundError,
    ArtifactNotFoundError,
    SourceNotFoundError,
    VersionStateError,
)
from .names import TYPES, check_artifact_name, parse_spec, split_artifact_name

__all__ = [
    "Artifact", "FileProblem", "SourceInfo", "inspect_source", "add_artifact", "get_artifact", "use_artifact",
    "list_artifacts",
    "list_versions", "unlink_version", "restore_version", "promote_run_path", "ArtifactNotFoundError",
    "ArtifactFileNotFoundError", "SourceNotFoundError", "VersionStateError", "TYPES",
    "check_artifact_name", "parse_spec", "split_artifact_name",
]
