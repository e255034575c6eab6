"""The sync's own error, kept with the public ones in nuboard.errors (nb.SyncConflictError)."""
from __future__ import annotations

from nuboard.errors import SyncConflictError

__all__ = ["SyncConflictError"]
