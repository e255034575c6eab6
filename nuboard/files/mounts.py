"""Mounts: which file system holds a path, and the one warning per file system that lacks
something NuBoard would use there (file locks, hard links).

Read from this process's mount table (`/proc/self/mounts`); where there is none (not Linux), a
file system is named by the folder alone.
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

_ESCAPE = re.compile(r"\\([0-7]{3})")
_warned: set[tuple[str, str]] = set()       # (what is missing, mount point or folder) warned of
_folders: set[tuple[str, str]] = set()      # (what is missing, folder) seen: no mount table read


def read_mounts() -> str | None:
    """The mount table of this process (/proc/self/mounts), or None where there is none."""
    for name in ("/proc/self/mounts", "/proc/mounts"):
        try:
            return Path(name).read_text()
        except OSError:
            continue
    return None


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of a /proc/mounts-like table, in order."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), parts[1])
        out.append((mount, parts[2]))
    return out


def mount_of(path: "str | os.PathLike[str]", mounts: str | None = None) -> tuple[str, str] | None:
    """(mount point, file system type) of the file system holding path; None when unknown.

    Args:
        path: a file or folder; one that does not exist yet is judged by where it would be.
        mounts: the text of a /proc/mounts-like table; None reads this process's.
    """
    if mounts is None:
        mounts = read_mounts()
        if mounts is None:
            return None
    real = os.path.realpath(path)
    best = None
    for mount, fstype in parse_mounts(mounts):
        inside = real == mount or real.startswith(mount.rstrip("/") + "/") or mount == "/"
        if inside and (best is None or len(mount) >= len(best[0])):   # the later one is on top
            best = (mount, fstype)
    return best


def filesystem_type(path: "str | os.PathLike[str]", mounts: str | None = None) -> str | None:
    """The type of the file system holding path, from the mount table (None when unknown)."""
    found = mount_of(path, mounts)
    return found[1] if found else None


def describe_filesystem(path: "str | os.PathLike[str]") -> str:
    """The file system of path in words: "the nfs4 file system mounted at '/lab'"."""
    try:
        found = mount_of(path)
    except OSError:
        found = None
    if found is None:
        return f"the file system of {str(Path(path).parent)!r}"
    return f"the {found[1]} file system mounted at {found[0]!r}"


def warn_once(missing: str, path: "str | os.PathLike[str]", message: str) -> None:
    """Warn (RuntimeWarning) that the file system of path lacks `missing`, once per process
    and file system; message follows the file system's name. Never raises."""
    folder = (missing, str(Path(path).parent))
    if folder in _folders:
        return
    _folders.add(folder)
    try:
        found = mount_of(path)
    except OSError:
        found = None
    key = (missing, found[0] if found else folder[1])
    if key in _warned:
        return
    _warned.add(key)
    try:
        warnings.warn(f"nuboard: {describe_filesystem(path)} {message}", RuntimeWarning,
                      stacklevel=4)
    except Exception:            # warnings made errors (-W error) must not stop a write
        pass
