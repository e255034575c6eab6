"""What this folder and a bucket last agreed on, file by file: the sync's memory.

    <root>/.nuboard-sync/<url, made a file name>.json
      {"url": "s3://lab/exp", "files": {"llm/runs/<id>/run.json": [lsize, lmtime_ns, rsize, etag]}}

An entry is written when a file was sent or fetched, or found equal on both sides: the local
file's size and mtime then, and the object's size and ETag (None until a listing shows it: an
upload's ETag is not known without asking). A file whose size and mtime are still those, facing
an object whose size and ETag are still those, is unchanged on both sides, and nothing is read,
hashed or sent. Without an entry (a new machine, a lost state file) files are compared by MD5
with the ETag, so the state only saves work: nothing depends on it being there or right.

The folder starts with a dot, so find_projects and the catalog never look into it. No lock:
two syncs of one URL at once each write the whole file, and the loser's entries only cost
hashing again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

from nuboard.files.jsonfile import write_bytes_atomic

FOLDER = ".nuboard-sync"
SAVE_EVERY = 5.0          # seconds between saves while a long sync runs (a kill loses no more)


class Entry:
    """One agreement: the local (size, mtime_ns) and the object's (size, etag)."""
    __slots__ = ("lsize", "lmtime", "rsize", "etag")

    def __init__(self, lsize: int, lmtime: int, rsize: int, etag: str | None):
        self.lsize, self.lmtime, self.rsize, self.etag = lsize, lmtime, rsize, etag

    def local_same(self, st: os.stat_result | None) -> bool:
        return st is not None and st.st_size == self.lsize and st.st_mtime_ns == self.lmtime

    def remote_same(self, info) -> bool:
        return info is not None and info.size == self.rsize and \
            (self.etag is None or info.etag is None or info.etag == self.etag)


class SyncState:
    """The agreements of one folder with one URL; `path` None keeps them in memory only."""

    def __init__(self, path: Path | None, url: str):
        self.path = path
        self.url = url
        self._files: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._saved_at = time.monotonic()
        self._dirty = False
        if path is not None:
            self._load()

    @classmethod
    def for_url(cls, root: Path, url: str) -> "SyncState":
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", url)[:80]
        digest = hashlib.sha1(url.encode("utf-8")).hexdigest()[:10]
        return cls(Path(root) / FOLDER / f"{name}-{digest}.json", url)

    def _load(self) -> None:
        try:
            doc = json.loads(self.path.read_bytes())
            files = doc.get("files") if isinstance(doc, dict) and doc.get("url") == self.url else None
        except (OSError, ValueError):
            return
        if not isinstance(files, dict):
            return
        for key, value in files.items():
            if isinstance(value, list) and len(value) == 4 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value[:3]) \
                    and (value[3] is None or isinstance(value[3], str)):
                self._files[key] = Entry(*value)

    def get(self, key: str) -> Entry | None:
        return self._files.get(key)

    def agree(self, key: str, st: os.stat_result, rsize: int, etag: str | None) -> None:
        """Record that the local file (as `st` says) and the object (rsize, etag) hold the same."""
        with self._lock:
            self._files[key] = Entry(st.st_size, st.st_mtime_ns, rsize, etag)
            self._dirty = True
        if self.path is not None and time.monotonic() - self._saved_at > SAVE_EVERY:
            self.save()

    def adopt_etag(self, key: str, etag: str | None) -> None:
        """Take the ETag a listing shows for an entry recorded without one."""
        entry = self._files.get(key)
        if entry is not None and entry.etag is None and etag is not None:
            entry.etag = etag
            self._dirty = True

    def save(self) -> None:
        """Write the state file (best effort: a folder that cannot take it costs hashing later)."""
        if self.path is None or not self._dirty:
            return
        with self._lock:
            doc = {"url": self.url, "files": {k: [e.lsize, e.lmtime, e.rsize, e.etag]
                                              for k, e in self._files.items()}}
            self._dirty = False
            self._saved_at = time.monotonic()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(self.path, json.dumps(doc, separators=(",", ":")).encode("utf-8"))
        except OSError:
            pass


def md5_of(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def md5_file(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def plain_md5(etag: str | None) -> bool:
    """Whether an ETag is the MD5 of the object's bytes (a single-part upload's)."""
    return etag is not None and len(etag) == 32 and all(c in "0123456789abcdef" for c in etag.lower())
