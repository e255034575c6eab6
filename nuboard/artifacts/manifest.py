"""A version's manifest: the files it holds, their sizes and fingerprints, and who made it.

manifest.json (format 1):
  {"format": 1, "project", "name", "version", "type", "description", "metadata",
   "storage": "copy" | "reference", "base": "version" | "project" | "filesystem",
   "location": "files" | "runs/<run>/files/best.pt" | "${NUBOARD_DATA_DIR}/..." | "/abs/path",
   "single_file": bool, "checksum": bool, "file_count", "total_bytes",
   "files": [{"path": "train/a.bin", "size": 12, "mtime": 1.5, "sha256": "..."}],
   "producer": {"project", "run_id"} | null, "source": {"path", "run_id"},
   "created_at", "created_by", "host"}
Pure helpers here; the folder is written by store.py, the manifest last.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterator

from ..jsonfile import read_json

FORMAT = 1
MANIFEST = "manifest.json"
CHUNK = 1 << 20


def walk_files(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every file under a folder as (path with '/' separators, stat), sorted; a file yields itself."""
    if root.is_file():
        yield root.name, root.stat()
        return
    stack = [("", str(root))]
    found: list[tuple[str, os.stat_result]] = []
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", entry.path))
                elif entry.is_file():
                    found.append((rel, entry.stat()))
    found.sort(key=lambda item: item[0])
    yield from found


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            digest.update(view[:n])
    return digest.hexdigest()


def copy_file_hashed(src: Path, dst: Path) -> tuple[int, str]:
    """Copy one file, hashing it on the way and fsyncing the copy; return (size, sha256)."""
    digest = hashlib.sha256()
    size = 0
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
        while True:
            n = fin.readinto(buf)
            if not n:
                break
            digest.update(view[:n])
            chunk = view[:n]
            while chunk:
                chunk = chunk[fout.write(chunk):]
            size += n
        os.fsync(fout.fileno())
    return size, digest.hexdigest()


def file_entry(path: str, size: int, mtime: float | None = None, sha256: str | None = None) -> dict:
    """One row of a manifest's file list."""
    entry: dict[str, Any] = {"path": path, "size": size}
    if mtime is not None:
        entry["mtime"] = mtime
    if sha256 is not None:
        entry["sha256"] = sha256
    return entry


def read_manifest(version_path: Path) -> dict | None:
    """A version folder's manifest, or None when it has none yet (an add in progress or killed)."""
    try:
        doc = read_json(Path(version_path) / MANIFEST)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("files"), list) else None


def summary_lines(doc: dict) -> list[str]:
    """A manifest as a few lines of text (for a CLI or a log)."""
    lines = [f"{doc.get('project')}/{doc.get('name')}:v{doc.get('version')}  "
             f"{doc.get('type')}, {doc.get('storage')}, {doc.get('file_count')} files, "
             f"{doc.get('total_bytes')} bytes"]
    if doc.get("description"):
        lines.append(f"  {doc['description']}")
    producer = doc.get("producer")
    lines.append("  produced by " + (f"{producer['project']}/{producer['run_id']}" if producer
                                     else "Logged outside a run"))
    return lines
