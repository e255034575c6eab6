"""The errors of artifacts: a version or a file that is not there, a version in the wrong place."""
from __future__ import annotations

from nuboard.errors import NuBoardError


class ArtifactNotFoundError(NuBoardError, LookupError):
    """An artifact, or a version of it, does not exist (or is unlinked)."""


class ArtifactFileNotFoundError(NuBoardError, KeyError):
    """A file asked of a version is not one the version lists."""

    def __str__(self) -> str:      # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class SourceNotFoundError(NuBoardError, FileNotFoundError):
    """The path given to add_artifact does not exist."""


class VersionStateError(NuBoardError, ValueError):
    """An unlink or restore cannot be done: the version is not where it should be."""
