"""Listing what a file or folder holds for a version, and the progress ticker of listing,
hashing and copying.

Only regular files are listed: links are followed (a loop is refused), and dangling links,
FIFOs, sockets and device files are left out and reported, never opened.
"""
from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

from nuboard.errors import InvalidArgumentError

PROGRESS_EVERY = 0.1            # seconds between two progress calls, at most about

Progress = Callable[[str, int, Optional[int]], None]
"""progress(phase, done, total): 'listing' (files so far, None), 'hashing' or 'copying' (bytes)."""


class Ticker:
    """Passes a count on to progress(phase, done, total) about every PROGRESS_EVERY seconds.

    The first call (done=0) and finish() always go through, so a bar starts and ends.
    """

    __slots__ = ("progress", "phase", "total", "due")

    def __init__(self, progress: Progress, phase: str, total: int | None):
        self.progress, self.phase, self.total = progress, phase, total
        progress(phase, 0, total)
        self.due = time.monotonic() + PROGRESS_EVERY

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now >= self.due:
            self.due = now + PROGRESS_EVERY
            self.progress(self.phase, done, self.total)

    def finish(self, done: int) -> None:
        self.progress(self.phase, done, self.total)


class LinkLoopError(InvalidArgumentError):
    """A folder given for a version holds a link that leads back to a folder it is inside."""


def walk_files(root: Path, progress: Progress | None = None,
               left_out: "list[tuple[str, str]] | None" = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every regular file under a folder as (path with '/' separators, stat), sorted; a file
    yields itself.

    One stat per file (the folder entries tell files from folders). Links to files and to
    folders are followed, each file keeping the path it has inside the folder (the link's, not
    the target's); a link back to a folder on the current path raises LinkLoopError. A
    dangling link, a FIFO, a socket or a device file is never opened: it is left out, and
    (path, what it is) appended to left_out when given. A file that vanishes while the folder
    is listed is left out. progress, if given, gets ('listing', files so far, None).
    """
    top = os.fspath(root)
    try:
        st = os.stat(top)
    except OSError:
        st = None                               # os.scandir below raises the error
    if st is not None and stat.S_ISREG(st.st_mode):
        if progress is not None:
            tick = Ticker(progress, "listing", None)
            tick.finish(1)
        yield Path(top).name, st
        return
    tick = Ticker(progress, "listing", None) if progress is not None else None
    count = 0
    skipped = left_out if left_out is not None else []
    # Each folder's entries sorted by name, a folder's as 'name/': walking them depth first
    # gives the paths in the order of sorted(full paths), without sorting a million of them.
    # A folder's (st_dev, st_ino) is on `on_path` while it is being walked: a link to one of
    # them is a loop.
    top_key = (st.st_dev, st.st_ino) if st is not None else None
    on_path = {top_key: ""}
    stack = [("", _folder_items(top, "", skipped, top), top_key)]
    while stack:
        prefix, items, _ = stack[-1]
        for key, path, st in items:
            if st is None:
                sub = prefix + key
                try:
                    dst = os.stat(path)
                except FileNotFoundError:
                    continue                        # removed while listed
                folder_key = (dst.st_dev, dst.st_ino)
                if folder_key in on_path:
                    inside = on_path[folder_key]
                    raise LinkLoopError(
                        f"the link {sub.rstrip('/')!r} in {top!r} leads back to "
                        + (f"{inside.rstrip('/')!r}, a folder it is in," if inside
                           else f"{Path(top).name!r} itself,")
                        + " a loop: remove the link, or give a folder without it")
                on_path[folder_key] = sub
                stack.append((sub, _folder_items(path, sub, skipped, top), folder_key))
                break
            yield prefix + key, st
            count += 1
            if tick is not None and not count & 255:
                tick(count)
        else:
            done = stack.pop()
            on_path.pop(done[2], None)
    if tick is not None:
        tick.finish(count)


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in a word or two."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "not a regular file"


def _folder_items(folder: str, prefix: str, left_out: list, top: str
                  ) -> Iterator[tuple[str, str, "os.stat_result | None"]]:
    """A folder's regular files and subfolders as (sort key, path, stat or None for a folder),
    sorted; links followed; anything else appended to left_out as (path, what it is)."""
    items = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_symlink():
                    try:
                        st = os.stat(entry.path)
                    except FileNotFoundError:
                        left_out.append((prefix + entry.name, "a dangling link"))
                        continue
                    except OSError as exc:
                        if exc.errno == errno.ELOOP:
                            raise LinkLoopError(
                                f"the link {prefix + entry.name!r} in {top!r} leads back to "
                                "itself, a loop: remove the link, or give a folder without it"
                            ) from None
                        raise
                    if stat.S_ISDIR(st.st_mode):
                        items.append((entry.name + "/", entry.path, None))
                    elif stat.S_ISREG(st.st_mode):
                        items.append((entry.name, entry.path, st))
                    else:
                        left_out.append((prefix + entry.name, "a link to " + _kind(st.st_mode)))
                elif entry.is_dir(follow_symlinks=False):
                    items.append((entry.name + "/", entry.path, None))
                elif entry.is_file(follow_symlinks=False):
                    items.append((entry.name, entry.path, entry.stat(follow_symlinks=False)))
                else:
                    left_out.append((prefix + entry.name,
                                     _kind(entry.stat(follow_symlinks=False).st_mode)))
            except FileNotFoundError:
                pass                                # removed while listed
    items.sort(key=_first)
    return iter(items)


def left_out_text(left_out: "list[tuple[str, str]]", limit: int = 50) -> str:
    """'2 entries left out (not regular files or folders): val (a dangling link), q (a FIFO)'."""
    n = len(left_out)
    shown = ", ".join(f"{path} ({what})" for path, what in left_out[:limit])
    more = f" and {n - limit} more" if n > limit else ""
    return (f"{n} {'entry' if n == 1 else 'entries'} left out (not regular files or folders): "
            f"{shown}{more}")


def _first(item: tuple) -> str:
    return item[0]
