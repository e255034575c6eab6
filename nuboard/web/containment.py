"""Paths asked for over HTTP, kept inside the folder served (rows 15 and 16 of reliability.md).

A path is refused when, decoded, it holds a NUL, a backslash, an empty, '.' or '..' segment,
or is absolute; then its real path (links resolved) must lie inside the base's real path.
The file is opened one segment at a time from the base with O_NOFOLLOW, so a link swapped in
after the check is refused rather than followed.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote


class OutsideError(ValueError):
    """The path asked for is not a path inside the served folder."""


def clean_parts(sub: str) -> list[str]:
    """The segments of a relative path, or OutsideError; '' is the base itself.

    The path is decoded once more, so a double-encoded '%252e%252e%252f' that reached here
    as '%2e%2e%2f' is judged as '../'.
    """
    if not isinstance(sub, str):
        raise OutsideError("not a path")
    for text in (sub, unquote(sub)):
        if "\x00" in text or "\\" in text:
            raise OutsideError(f"{sub!r} holds a NUL or a backslash")
        if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
            raise OutsideError(f"{sub!r} is absolute")
    text = sub.strip("/") if sub.endswith("/") else sub
    if not text:
        return []
    parts = text.split("/")
    for part in parts:
        if part in ("", ".", "..") or unquote(part) in ("", ".", ".."):
            raise OutsideError(f"{sub!r} has an empty, '.' or '..' segment")
    return parts


def resolve_inside(base: Path, sub: str) -> Path:
    """The real path of base/sub, checked to lie inside base's real path (OutsideError)."""
    parts = clean_parts(sub)
    real_base = Path(os.path.realpath(base))
    real = Path(os.path.realpath(real_base.joinpath(*parts)))
    if real != real_base and real_base not in real.parents:
        raise OutsideError(f"{sub!r} leads outside the folder")
    return real


def open_inside(base: Path, real: Path, flags: int = os.O_RDONLY) -> int:
    """Open `real` (from resolve_inside) walking from base without following any link.

    The last segment is opened with O_NONBLOCK, so a FIFO, socket or device there never
    blocks the open (callers check is_regular and refuse anything else); a regular file
    is switched back to blocking reads.
    """
    real_base = Path(os.path.realpath(base))
    rel = real.relative_to(real_base).parts
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    cloexec = getattr(os, "O_CLOEXEC", 0)
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(real_base, os.O_RDONLY | os.O_DIRECTORY | cloexec)
    try:
        for i, part in enumerate(rel):
            last = i == len(rel) - 1
            mode = (flags | nonblock if last else os.O_RDONLY | os.O_DIRECTORY) | nofollow | cloexec
            try:
                nxt = os.open(part, mode, dir_fd=fd)
            except OSError as exc:
                raise OutsideError(f"{part!r} changed or is a link ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
        if is_regular(fd) and nonblock and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def open_file_inside(base: Path, sub: str):
    """A regular file under base opened for reading in binary mode, or None when there is
    none there or the path leads outside (a link to ~/.ssh, a `..`)."""
    try:
        fd = open_inside(base, resolve_inside(base, sub))
    except (OutsideError, OSError):
        return None
    if not is_regular(fd):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")
