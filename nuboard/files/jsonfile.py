"""JSON documents on disk: atomic replace (temp file, fsync, rename) and tolerant reads; the
one lock between processes (flock), with what each does where the file system lacks locks or
hard links.

`open_regular` (the one way NuBoard opens a file it reads from a run or artifact folder, which
never blocks on a FIFO, socket or device file someone left there) and read_json are
documents.py's, imported from here as before.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .documents import RECORD, read_document
from .documents import NotRegularFileError as NotRegularFileError  # re-exported: its readers
from .documents import open_regular as open_regular  # import both from here, as before
from .mounts import warn_once

try:
    import fcntl
except ImportError:             # pragma: no cover - not on Linux/macOS
    fcntl = None  # type: ignore[assignment]

TEMP_PREFIX = ".tmp-"
CLAIM_SUFFIX = ".claim"
# flock's errors where the file system has no locks to give (NFS without lockd, Lustre mounted
# without -o flock, some FUSE and SMB mounts): NuBoard goes on without the lock there.
NO_LOCKS = frozenset({errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})
# link(2)'s errors where the file system has no hard links (s3fs, gcsfuse, exFAT, some SMB).
NO_LINKS = frozenset({errno.EPERM, errno.EACCES, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP,
                      errno.EMLINK})
STALE_CLAIM = 30.0       # seconds a claim folder may stand without its file before it is stale


def _temp_name(path: Path) -> Path:
    return path.with_name(f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(3).hex()}")


def write_bytes_atomic(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write a file so that readers see the old content or the new one, never a part.

    Args:
        path: the file to replace.
        data: its new content.
        exclusive: create the file only if it does not exist yet (atomic claim: a hard link,
            or where links are refused an exclusive mkdir beside it, with one RuntimeWarning
            per process and file system); raises FileExistsError when it does.
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
            _create_from(tmp, path)
        else:
            os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    fsync_dir(path.parent)


def _create_from(tmp: Path, path: Path) -> None:
    """Give the complete file tmp the name path only if path does not exist (FileExistsError).

    A hard link is the atomic create-if-absent; where the file system refuses links, the name is
    claimed with an atomic mkdir of `.<name>.claim` beside it (see _claim_by_mkdir).
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in NO_LINKS:
            raise
        warn_once("links", path, f"refuses hard links ({exc.strerror or exc}); NuBoard creates "
                  "run.json and other claimed files there with an exclusive mkdir instead, "
                  "which is atomic only where the file system makes mkdir atomic (across "
                  "hosts, object-storage mounts such as s3fs and gcsfuse do not): do not start "
                  "one run id from two hosts at once there (docs/team.md).")
        _claim_by_mkdir(tmp, path)
        return
    os.unlink(tmp)


def _claim_by_mkdir(tmp: Path, path: Path) -> None:
    """Rename tmp to path unless path exists, holding the claim folder `.<name>.claim`.

    The folder is made before the check and removed after the rename, so of two claimers one
    renames and the other, finding the folder, waits for path to appear and raises
    FileExistsError. A claim folder left by a claimer that died in between (it stood unchanged,
    without its file, for STALE_CLAIM seconds of this process's own clock) is removed.
    """
    claim = path.with_name(f".{path.name}{CLAIM_SUFFIX}")
    seen, since = None, None
    while True:
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
        try:
            os.mkdir(claim)
            break
        except FileExistsError:
            pass
        try:
            st = os.lstat(claim)
            now = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            continue                              # the claimer finished or gave up: look again
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since > STALE_CLAIM:
            with contextlib.suppress(OSError):
                os.rmdir(claim)
            seen = None
            continue
        time.sleep(0.02)
    try:
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(claim)


@contextlib.contextmanager
def replacing(path: Path, error: "type[Exception]", doing: str) -> Iterator[None]:
    """A project document (views.json, colours.json) locked while it is read and replaced:
    flock on `.<name>.lock` beside it. An OSError on the way (a folder that cannot be
    written) is one clear `error` saying it cannot `doing`, and the document stays as it was."""
    try:
        with flock(path.with_name(f".{path.name}.lock")):
            yield
    except OSError as exc:
        raise error(f"cannot {doing} in {str(path.parent)!r} ({exc.strerror or exc}): "
                    "the project folder must be writable.") from None


@contextlib.contextmanager
def flock(path: "Path | str", *, missing_ok: bool = False) -> Iterator[bool]:
    """Hold an exclusive lock between processes; the kernel frees it if the holder dies.

    The lock is flock on `path`, created when missing (mode 0644). Yields whether the lock is
    held: where flock does not exist, or the file system has no locks to give (flock fails with
    ENOLCK, ENOSYS or EOPNOTSUPP: NFS without lockd, Lustre without -o flock), it goes on
    unlocked (yields False), with one RuntimeWarning per process and file system naming it.

    missing_ok: where the lock file cannot be created (a read-only folder), go on unlocked
        instead of raising the OSError.
    """
    if fcntl is None:
        yield False
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        if not missing_ok:
            raise
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in NO_LOCKS:
                raise
            warn_once("locks", path, f"has no file locks (flock of {str(path)!r}: "
                      f"{exc.strerror or exc}); NuBoard goes on without them there, so two "
                      "processes changing one thing at the same moment (run.json from a job and "
                      "an editor, an artifact's versions, saved views) are not ordered "
                      "(docs/team.md).")
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(OSError):   # closing fd lets the lock go anyway
                fcntl.flock(fd, fcntl.LOCK_UN)   # also when a forked child holds a copy of fd
    finally:
        os.close(fd)


def write_json_atomic(path: Path, doc: Any, *, exclusive: bool = False) -> None:
    """Write a JSON document atomically (see write_bytes_atomic)."""
    data = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")
    write_bytes_atomic(path, data + b"\n", exclusive=exclusive)


def read_json(path: Path) -> Any:
    """Read a JSON document NuBoard wrote; raises OSError when it cannot be opened (missing,
    or NotRegularFileError) and ValueError (documents.DocumentError) when it is not one.

    documents.read_document with the rules of a plain record: only a regular file, at most
    64 MB, nested at most 100 levels, valid JSON without a lone surrogate escape. A file of a
    known kind (run.json, a manifest, views.json, the heartbeat) is read with its own kind's
    rules: documents.read_document(path, kind).
    """
    return read_document(path, RECORD)


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
