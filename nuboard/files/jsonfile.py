"""JSON documents on disk: atomic replace (temp file, fsync, rename) and tolerant reads.

Also the one way NuBoard opens a file it reads from a run or artifact folder: `open_regular`,
which never blocks on a FIFO, socket or device file someone left there.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:             # pragma: no cover - not on Linux/macOS
    fcntl = None  # type: ignore[assignment]

TEMP_PREFIX = ".tmp-"


def _temp_name(path: Path) -> Path:
    return path.with_name(f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(3).hex()}")


def write_bytes_atomic(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write a file so that readers see the old content or the new one, never a part.

    Args:
        path: the file to replace.
        data: its new content.
        exclusive: create the file only if it does not exist yet (atomic claim);
            raises FileExistsError when it does.
    """
    path = Path(path)
    tmp = _temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    try:
        if exclusive:
            os.link(tmp, path)       # fails if path exists: an atomic create-if-absent
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def flock(path: "Path | str", *, missing_ok: bool = False) -> Iterator[None]:
    """Hold an exclusive lock between processes; the kernel frees it if the holder dies.

    The lock is flock on `path`, created when missing (mode 0644). Where flock does not
    exist, go on unlocked.

    missing_ok: where the lock file cannot be created (a read-only folder), go on unlocked
        instead of raising the OSError.
    """
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        if not missing_ok:
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)   # also when a forked child holds a copy of fd
    finally:
        os.close(fd)


def write_json_atomic(path: Path, doc: Any, *, exclusive: bool = False) -> None:
    """Write a JSON document atomically (see write_bytes_atomic)."""
    data = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")
    write_bytes_atomic(path, data + b"\n", exclusive=exclusive)


class NotRegularFileError(OSError):
    """A path that NuBoard reads is a FIFO, socket, device or folder, not a regular file."""


def open_regular(path: Path | str):
    """Open a regular file for reading in binary mode; never block on anything else.

    The path is checked with stat first, opened with O_NONBLOCK (so a FIFO swapped in after the
    check cannot block the open) and checked again with fstat on the open descriptor. Raises
    NotRegularFileError (an OSError, errno EINVAL) naming the path when it is not a regular
    file, and the usual OSError when it is missing or unreadable.
    """
    path = os.fspath(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_json(path: Path) -> Any:
    """Read a JSON document; raises OSError or ValueError when it is missing or not JSON.

    Only a regular file is read (see open_regular); a lone surrogate escape or any other text
    that is not valid UTF-8 once decoded, and a document nested too deep for the parser, is a
    ValueError, like any other bad JSON.
    """
    with open_regular(path) as fh:
        data = fh.read()
    try:
        doc = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{path}: nested too deep to read") from None
    if b"\\ud" in data.lower():       # a surrogate escape: allowed only as a valid pair
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{path}: a lone surrogate escape ({exc.reason})") from None
    return doc


def clean_stray_temps(folder: Path, names: "Iterable[str] | None" = None, *,
                      writer: int | None = None, stale_after: float | None = None) -> list[Path]:
    """Remove temp files that a killed writer left in a folder; return what was removed.

    A temp file (`.tmp-<name>.<pid>.<hex>`) names the pid that wrote it; one whose process is
    alive on this host, or is this process, is kept. Without `stale_after` every other one is
    removed (the caller owns the folder: a resume, a version claim). With it (the sync, which
    may look at a folder that processes on other hosts write), a dead pid is enough only when
    it is `writer`, the pid this host's own process of the folder had (its heartbeat's); any
    other temp file is removed once it has not changed for `stale_after` seconds, since a pid
    from another host says nothing here and a live writer keeps its temp file's mtime fresh.

    names: the folder's entries when the caller has listed it already.
    """
    removed = []
    try:
        names = list(os.listdir(folder) if names is None else names)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not name.startswith(TEMP_PREFIX):
            continue
        parts = name.rsplit(".", 2)
        pid = int(parts[-2]) if len(parts) == 3 and parts[-2].isdigit() else None
        if pid == os.getpid() or (pid is not None and _pid_alive(pid)):
            continue
        path = Path(folder) / name
        if stale_after is not None and (pid is None or pid != writer):
            try:
                if now - os.lstat(path).st_mtime < stale_after:
                    continue
            except OSError:
                continue
        if _unlink_quietly(path):
            removed.append(path)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _unlink_quietly(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def fsync_dir(folder: Path) -> None:
    """fsync a folder so that a rename or create inside it survives a power cut."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
