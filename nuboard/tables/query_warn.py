"""The query warnings of nb.runs, nb.history and nb.media, as Python warnings.

The same lines `nuboard ls --query` prints on stderr and the viewer shows under its query box
(catalog/query_keys.py: an unknown key with the nearest known one, a lowercase `and`/`or`
that no run name holds), each its own `QueryWarning` pointing at the caller's line, so a
query that silently finds nothing says why. The query still runs, as in the other faces.
"""
from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from nuboard.errors import QueryWarning

_PACKAGE = str(Path(__file__).resolve().parent.parent)     # the nuboard package folder


def warn_query(catalog, query: str | None) -> list[str]:
    """Warn (QueryWarning) each line of the query's warnings over the catalog; the lines."""
    if not query or not query.strip():
        return []
    from nuboard.catalog.query_keys import query_warnings
    lines = query_warnings(catalog, query)
    level = _caller_level()
    for line in lines:
        warnings.warn(line, QueryWarning, stacklevel=level)
    return lines


def _caller_level() -> int:
    """The stacklevel, as warn_query's caller counts it, of the first frame outside NuBoard
    (and the contextlib frames a `with` adds): the user's nb.runs(...) line."""
    frame = sys._getframe(2)            # warn_query's caller, which is stacklevel 2 of warn()
    level = 2
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def _ours(filename: str) -> bool:
    """Whether a frame of this file is NuBoard's own, or contextlib's between two of ours."""
    if filename == contextlib.__file__:
        return True
    path = str(Path(filename).resolve()) if filename and not filename.startswith("<") else ""
    return path.startswith(_PACKAGE + "/")
