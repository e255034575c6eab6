"""Media files of a run: where each key's files go, and writing one whole, never over another.

A key's files live in media/<key folder>/, one folder segment per segment of the key; a
segment that is not a plain file name (a '.' or '..', a leading dot, a character outside
letters, digits, '_', '-', '.' and space, or over 100 characters) becomes its plain part and
'~' and 8 hex digits of its SHA-1, so a key never names a path outside its folder and two keys
never share one.

A file is written whole under a temp name (`.tmp-...`, which the temp cleanup removes when its
writer dies), flushed to disk, then linked to its final name `<step>-<n>.<ext>` with the
smallest n that no file has yet: a link never replaces a file, so each file has one writer,
whichever rank or session writes beside it. Only then does the writer name it in a record.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from .jsonfile import TEMP_PREFIX, write_bytes_atomic

MEDIA = "media"
_PLAIN = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\- ]{0,99}\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def key_folder(key: str) -> str:
    """The folder of a key's files, relative to the run folder: 'media/val/samples'."""
    parts = [MEDIA]
    for segment in key.split("/"):
        if _PLAIN.match(segment) and not segment.endswith((".", " ")):
            parts.append(segment)
        else:
            plain = _UNSAFE.sub("_", segment).lstrip(".")[:60]
            parts.append(f"{plain}~{hashlib.sha1(segment.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}")
    return "/".join(parts)


def store(run_dir: Path, key: str, stem: str, ext: str, data: bytes) -> str:
    """Write data as a new file of the key, `<stem>-<n>.<ext>` (n from 0, the first free);
    return its path relative to the run folder. Raises OSError (nothing is left behind)."""
    folder = key_folder(key)
    where = Path(run_dir) / folder
    where.mkdir(parents=True, exist_ok=True)
    n = 0
    while True:
        name = f"{stem}-{n}.{ext}"
        try:                            # whole under a temp name, then linked: never over a file
            write_bytes_atomic(where / name, data, exclusive=True)
            return f"{folder}/{name}"
        except FileExistsError:
            n += 1


def link_or_copy(source: Path, target: Path) -> None:
    """Give target the content of source: a hard link where the file system allows, else a
    copy (written whole under a temp name first). Raises OSError."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    tmp = target.with_name(f"{TEMP_PREFIX}{target.name}.{os.getpid()}.{os.urandom(3).hex()}")
    try:
        with open(source, "rb") as src, open(tmp, "xb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
