"""Media files that no record names: what a writer killed between writing a file and its record
left under a run's media/ folder, found so the sync removes them as it removes temp files.

A media file is written whole, then named in a record of its rank's event log (media_store);
a kill in between leaves a file that nothing will ever show. A file is recorded when a record
of any rank and session names it: as its "file", or, for a table's image cells, in its
"cells". Links, folders and anything that is not a regular file are never listed.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .media_store import MEDIA


def media_files(run_dir: Path) -> list[str]:
    """Every regular file under the run's media/ folder, as run-relative POSIX paths
    ('media/val/samples/5-0.png'), sorted; links are not followed."""
    top = Path(run_dir) / MEDIA
    found: list[str] = []
    if os.path.islink(top):
        return found
    stack = [(top, MEDIA)]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), f"{rel}/{entry.name}"))
                elif entry.is_file(follow_symlinks=False):
                    found.append(f"{rel}/{entry.name}")
            except OSError:
                continue
    found.sort()
    return found


def orphan_media(run_dir: Path, recorded: set[str]) -> list[Path]:
    """The files under the run's media/ folder that are not in `recorded` (run-relative POSIX
    paths, as records name them), as absolute paths, sorted. Temp files a killed writer left
    there are among them."""
    return [Path(run_dir) / rel for rel in media_files(run_dir) if rel not in recorded]


def remove_stale(paths: list[Path], stale_after: float, now: float | None = None
                 ) -> tuple[list[Path], float | None]:
    """Remove those of `paths` unchanged for `stale_after` seconds; return what was removed and
    when the youngest one kept turns stale (epoch seconds; None when none was kept)."""
    now = time.time() if now is None else now
    removed, due = [], None
    for path in paths:
        try:
            mtime = os.lstat(path).st_mtime
        except OSError:
            continue
        if now - mtime < stale_after:
            due = mtime + stale_after if due is None else min(due, mtime + stale_after)
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
    return removed, due
