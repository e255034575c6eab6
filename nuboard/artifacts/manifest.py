"""A version's manifest: the files it holds, their sizes and fingerprints, and who made it.

manifest.json (format 1):
  {"format": 1, "project", "name", "version", "type", "description", "metadata",
   "storage": "copy" | "reference", "base": "version" | "project" | "filesystem",
   "location": "files" | "runs/<run>/files/best.pt" | "${NUBOARD_DATA_DIR}/..." | "/abs/path",
   "single_file": bool, "checksum": bool, "file_count", "total_bytes",
   "files": [{"path": "train/a.bin", "size": 12, "mtime": 1.5, "sha256": "..."}],
   "producer": {"project", "run_id"} | null, "source": {"path", "run_id"},
   "created_at", "created_by", "host"}
Written by write_manifest: indented, with one compact line per file (a million files are about
80 MB). Listing, hashing and copying helpers here; the folder is written by store.py, the
manifest last.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from ..jsonfile import read_json, write_bytes_atomic

FORMAT = 1
MANIFEST = "manifest.json"
CHUNK = 4 << 20                 # read size when hashing and copying
PARALLEL_MIN = 4 << 20          # files at least this big are hashed by a pool of threads
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


def walk_files(root: Path, progress: Progress | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every file under a folder as (path with '/' separators, stat), sorted; a file yields itself.

    One stat per file (the folder entries tell files from folders). Symbolic links to files
    count as files; links to folders are not followed. A file that vanishes while the folder is
    listed is left out. progress, if given, gets ('listing', files so far, None).
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
    # Each folder's entries sorted by name, a folder's as 'name/': walking them depth first
    # gives the paths in the order of sorted(full paths), without sorting a million of them.
    stack = [("", _folder_items(top))]
    while stack:
        prefix, items = stack[-1]
        for key, path, st in items:
            if st is None:
                stack.append((prefix + key, _folder_items(path)))
                break
            yield prefix + key, st
            count += 1
            if tick is not None and not count & 255:
                tick(count)
        else:
            stack.pop()
    if tick is not None:
        tick.finish(count)


def _folder_items(folder: str) -> Iterator[tuple[str, str, "os.stat_result | None"]]:
    """A folder's files and subfolders as (sort key, path, stat or None for a folder), sorted."""
    items = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                items.append((entry.name + "/", entry.path, None))
            elif entry.is_file():
                try:
                    items.append((entry.name, entry.path, entry.stat()))
                except FileNotFoundError:
                    pass
    items.sort(key=_first)
    return iter(items)


def _first(item: tuple) -> str:
    return item[0]


def _hash_into(path: "str | os.PathLike[str]", buf: bytearray, done: list, slot: int,
               stop: threading.Event | None = None) -> str:
    """The SHA-256 of one file read through buf; adds the bytes read to done[slot] as it goes."""
    digest = hashlib.sha256()                  # update() releases the GIL for big chunks
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            digest.update(view[:n])
            done[slot] += n
            if stop is not None and stop.is_set():
                break
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file."""
    return _hash_into(path, bytearray(CHUNK), [0], 0)


def hash_files(files: "list[tuple[str, int]]", progress: Progress | None = None,
               workers: int | None = None) -> list[str]:
    """The SHA-256 of each (path, size), in order; progress gets ('hashing', bytes, total bytes).

    Files of PARALLEL_MIN bytes or more are hashed by a pool of threads (hashlib releases the
    GIL while it hashes, so each core hashes a file); small ones one by one in this thread,
    where threads would only fight over the GIL.
    """
    total = sum(size for _, size in files)
    tick = Ticker(progress, "hashing", total) if progress is not None else None
    digests: list[Any] = [None] * len(files)
    big = [i for i, (_, size) in enumerate(files) if size >= PARALLEL_MIN]
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    workers = min(workers, len(big))
    done = [0] * (workers + 1)                 # bytes hashed by each worker, and by this thread
    if workers > 1:
        _hash_in_threads(files, big, digests, done, workers, tick)
        big_set = set(big)
    else:
        big_set = set()
    buf = bytearray(CHUNK)
    for i, (path, _) in enumerate(files):
        if i in big_set:
            continue
        digests[i] = _hash_into(path, buf, done, workers)
        if tick is not None:
            tick(sum(done))
    if tick is not None:
        tick.finish(sum(done))
    return digests


def _hash_in_threads(files, big: list[int], digests: list, done: list, workers: int,
                     tick: "Ticker | None") -> None:
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait   # 6 ms: only here
    stop = threading.Event()
    queue = iter(big)
    lock = threading.Lock()

    def worker(slot: int) -> None:
        buf = bytearray(CHUNK)
        while not stop.is_set():
            with lock:
                i = next(queue, None)
            if i is None:
                return
            digests[i] = _hash_into(files[i][0], buf, done, slot, stop)

    with ThreadPoolExecutor(workers, thread_name_prefix="nuboard-hash") as pool:
        futures = [pool.submit(worker, slot) for slot in range(workers)]
        try:
            pending = futures
            while pending:
                finished, pending = wait(pending, timeout=PROGRESS_EVERY, return_when=FIRST_EXCEPTION)
                for future in finished:
                    future.result()            # raises a worker's error
                if tick is not None:
                    tick(sum(done))
        except BaseException:
            stop.set()
            raise


def copy_file_hashed(src: Path, dst: Path, buf: bytearray | None = None,
                     on_bytes: Callable[[int], None] | None = None) -> tuple[int, str]:
    """Copy one file, hashing it on the way and fsyncing the copy; return (size, sha256).

    buf: the buffer to read through (reuse one across files); on_bytes(n) after each chunk.
    """
    digest = hashlib.sha256()
    size = 0
    if buf is None:
        buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
        while True:
            n = fin.readinto(buf)
            if not n:
                break
            chunk = view[:n]
            digest.update(chunk)
            while chunk:
                chunk = chunk[fout.write(chunk):]
            size += n
            if on_bytes is not None:
                on_bytes(n)
        os.fsync(fout.fileno())
    return size, digest.hexdigest()


def copy_files(real: Path, single: bool, listing: list, target: Path, total: int,
               progress: Progress | None) -> list[dict]:
    """Copy the files of a listing (from walk_files) into the new folder target, hashing each;
    return their manifest entries. progress gets ('copying', bytes, total bytes)."""
    target.mkdir()
    tick = Ticker(progress, "copying", total) if progress is not None else None
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        tick(done)

    buf = bytearray(CHUNK)
    made = {""}
    entries = []
    for rel, _st in listing:
        src = real if single else real.joinpath(*rel.split("/"))
        folder, _, _ = rel.rpartition("/")
        if folder not in made:
            target.joinpath(*folder.split("/")).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        size, digest = copy_file_hashed(src, target.joinpath(*rel.split("/")), buf,
                                        on_bytes if tick is not None else None)
        entries.append({"path": rel, "size": size, "sha256": digest})
    if tick is not None:
        tick.finish(done)
    return entries


def file_entry(path: str, size: int, mtime: float | None = None, sha256: str | None = None) -> dict:
    """One row of a manifest's file list."""
    entry: dict[str, Any] = {"path": path, "size": size}
    if mtime is not None:
        entry["mtime"] = mtime
    if sha256 is not None:
        entry["sha256"] = sha256
    return entry


def manifest_bytes(doc: dict) -> bytes:
    """A manifest as JSON text: indented, but one compact line per file entry.

    A million files make a manifest of about 80 MB, encoded in a second or two (indent=1
    throughout would take 20% more room and, with Python's pure-Python indenting encoder,
    several times as long). Strings that cannot be UTF-8 (a file name with undecodable
    bytes, held as lone surrogates) are written as \\udcXX escapes, which read back the same.
    """
    files = doc["files"]
    head = json.dumps({**doc, "files": []}, indent=1, ensure_ascii=False, allow_nan=False)
    slot = '\n "files": []'                   # a raw newline never occurs inside a JSON string
    if head.count(slot) != 1:
        raise ValueError("a manifest's top level must hold 'files' once")
    before, _, after = head.partition(slot)
    if not files:
        return f"{head}\n".encode("utf-8", "backslashreplace")
    body = json.dumps(files, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if body.count("},{") == len(files) - 1:      # then each one is between two entries
        body = body.replace("},{", "},\n  {")
    else:                                       # some text holds '},{': encode one by one
        encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        body = "[" + ",\n  ".join(map(encoder.encode, files)) + "]"
    data = body.encode("utf-8", "backslashreplace")
    del body
    return b"".join([f'{before}\n "files": [\n  '.encode("utf-8", "backslashreplace"),
                     memoryview(data)[1:-1],
                     f"\n ]{after}\n".encode("utf-8", "backslashreplace")])


def write_manifest(path: Path, doc: dict) -> None:
    """Write a manifest atomically (temp file, fsync, rename), in the form of manifest_bytes."""
    write_bytes_atomic(Path(path), manifest_bytes(doc))


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
