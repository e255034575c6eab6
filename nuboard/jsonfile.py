"""JSON documents on disk: atomic replace (temp file, fsync, rename) and tolerant reads."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
    _fsync_dir(path.parent)


def write_json_atomic(path: Path, doc: Any, *, exclusive: bool = False) -> None:
    """Write a JSON document atomically (see write_bytes_atomic)."""
    data = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")
    write_bytes_atomic(path, data + b"\n", exclusive=exclusive)


def read_json(path: Path) -> Any:
    """Read a JSON document; raises OSError or ValueError when it is missing or not JSON."""
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def clean_stray_temps(folder: Path) -> list[Path]:
    """Remove temp files that a killed writer left in a folder; return what was removed.

    A temp file names the pid that wrote it; it is removed when that process is gone.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(TEMP_PREFIX):
            continue
        parts = entry.name.rsplit(".", 2)
        pid = int(parts[-2]) if len(parts) == 3 and parts[-2].isdigit() else None
        if pid is not None and pid != os.getpid() and _pid_alive(pid):
            continue
        if pid == os.getpid():
            continue
        if _unlink_quietly(Path(entry.path)):
            removed.append(Path(entry.path))
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


def _fsync_dir(folder: Path) -> None:
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
