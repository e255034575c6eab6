"""A version's manifest: the files it holds, their sizes and fingerprints, and who made it.

manifest.json (format 1):
  {"format": 1, "project", "name", "version", "type", "description", "metadata",
   "storage": "copy" | "reference", "base": "version" | "project" | "filesystem" | "url",
   "location": "files" | "runs/<run>/files/best.pt" | "${NUBOARD_DATA_DIR}/..." | "/abs/path"
               | "s3://bucket/prefix" (base url: objects in a store, ${VAR}s kept),
   "single_file": bool, "checksum": bool, "file_count", "total_bytes",
   "files": [{"path": "train/a.bin", "size": 12, "mtime": 1.5, "sha256": "..."}],
            (base url: {"path", "size", "etag", "version_id" where the bucket keeps versions,
             "mtime" the time the object was written}; remote_refs.py)
   "producer": {"project", "run_id"} | null, "source": {"path", "run_id"},
   "left_out": [{"path", "what"}] (dangling links, FIFOs, sockets, devices; absent before),
   "created_at", "created_by", "host"}
A manifest whose fields have other types (manifest_problem) is damaged: not a version.
Written by write_manifest: indented, with one compact line per file (a million files are about
80 MB). Hashing and copying helpers here, listing in listing.py (re-exported); the folder is
written by version_folders.py, the manifest last.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from nuboard.files import caps, documents
from nuboard.files.jsonfile import open_regular, write_bytes_atomic

from .listing import PROGRESS_EVERY, Progress, Ticker

FORMAT = 1
MANIFEST = "manifest.json"
MAX_METADATA_BYTES = 1 << 20     # a version's metadata as JSON, at most (add_artifact refuses more)
MAX_METADATA_DEPTH = 64          # levels of nesting, as a run's config
MAX_DESCRIPTION = 1_000_000      # characters, as a run's notes
CHUNK = 4 << 20                 # read size when hashing and copying
PARALLEL_MIN = 4 << 20          # files at least this big are hashed by a pool of threads


def _hash_into(path: "str | os.PathLike[str]", buf: bytearray, done: list, slot: int,
               stop: threading.Event | None = None) -> str:
    """The SHA-256 of one file read through buf; adds the bytes read to done[slot] as it goes."""
    digest = hashlib.sha256()                  # update() releases the GIL for big chunks
    view = memoryview(buf)
    with open_regular(path) as fh:             # never blocks on a FIFO swapped in
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
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait  # 6 ms: only here
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
    with open_regular(src) as fin, open(dst, "wb", buffering=0) as fout:
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


INT64_MAX = 2**63 - 1
_STR_OR_NONE = ("type", "description", "created_at", "created_by", "host")


def _count(value: object) -> bool:
    """A whole number a catalog can hold: an int (not a bool) in 0..2**63-1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


def manifest_problem(doc: object) -> str | None:
    """What makes a manifest unusable (a field of the wrong type or range), or None when fine."""
    if not isinstance(doc, dict):
        return f"the manifest is a JSON {type(doc).__name__}, not an object"
    files = doc.get("files")
    if not isinstance(files, list):
        return "its 'files' is not a list"
    for key in ("version", "file_count", "total_bytes"):
        if key in doc and not _count(doc[key]):
            return f"its {key!r} is {doc[key]!r:.40}, not a whole number of 0 to 2**63-1"
    for key in _STR_OR_NONE:
        if doc.get(key) is not None and not isinstance(doc[key], str):
            return f"its {key!r} is {doc[key]!r:.40}, not text"
    if doc.get("storage", "copy") not in ("copy", "reference"):
        return f"its 'storage' is {doc.get('storage')!r:.40}, not copy or reference"
    if doc.get("base", "version") not in ("version", "project", "filesystem", "url"):
        return f"its 'base' is {doc.get('base')!r:.40}, not version, project, filesystem or url"
    if not isinstance(doc.get("location", "files"), str):
        return f"its 'location' is {doc.get('location')!r:.40}, not text"
    for key in ("single_file", "checksum"):
        if key in doc and not isinstance(doc[key], bool):
            return f"its {key!r} is {doc[key]!r:.40}, not true or false"
    if doc.get("metadata") is not None and not isinstance(doc["metadata"], dict):
        return f"its 'metadata' is {doc['metadata']!r:.40}, not an object"
    for key in ("producer", "source"):
        value = doc.get(key)
        if value is not None and not isinstance(value, dict):
            return f"its {key!r} is {value!r:.40}, not an object"
    producer = doc.get("producer")
    if producer is not None and not (isinstance(producer.get("project"), str)
                                     and isinstance(producer.get("run_id"), str)):
        return "its 'producer' lacks the 'project' and 'run_id' texts"
    for i, entry in enumerate(files):                  # a million entries: keep this lean
        if not (type(entry) is dict and type(entry.get("path")) is str and _count(entry.get("size"))):
            return f"file {i + 1} of its 'files' is {entry!r:.60}, not a path and a size"
        mtime, digest = entry.get("mtime"), entry.get("sha256")
        if (mtime is not None and type(mtime) not in (int, float)) or \
                (digest is not None and type(digest) is not str) or \
                not isinstance(entry.get("etag", ""), (str, type(None))) or \
                not isinstance(entry.get("version_id", ""), (str, type(None))):
            return (f"file {entry['path']!r:.60} has a modification time, SHA-256, ETag or "
                    "version id of the wrong type")
    return None


def read_manifest_checked(version_path: Path) -> tuple[dict | None, str | None]:
    """A version folder's manifest and None; or None and why it cannot be used (None, None
    when it has no manifest yet: an add in progress or killed)."""
    try:                 # its kind's rules, lone \\udcXX escapes allowed (file names not UTF-8)
        doc = documents.read_document(Path(version_path) / MANIFEST, documents.MANIFEST)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        why = documents.unreadable_reason(exc, documents.MANIFEST)
        return None, f"its manifest cannot be read ({why})"
    problem = manifest_problem(doc)
    return (None, f"its manifest is damaged: {problem}") if problem else (doc, None)


def read_manifest(version_path: Path) -> dict | None:
    """A version folder's manifest, or None when it has none yet (an add in progress or
    killed) or it is damaged (see manifest_problem)."""
    return read_manifest_checked(version_path)[0]


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


def file_entries(manifest: Path, needle: str = "", skip: int = 0) -> Iterator[dict]:
    """The file entries of a manifest, in order, filtered by a substring of their path, after
    the first `skip` of them (skipped without being parsed when there is no filter).

    Read line by line, since write_manifest writes one entry per line: the first 1,000
    entries cost the first 1,000 lines. A manifest written otherwise is read whole; one
    that cannot be read yields nothing."""
    try:
        fh = open_regular(manifest)                 # a FIFO named manifest.json never blocks
    except OSError:
        return
    with fh:
        head = b""
        for line in fh:
            if line.startswith(b' "files": ['):
                head = line
                break
        if not head:                                # not write_manifest's layout (one line,
            yield from itertools.islice(_file_entries_whole(manifest, needle), skip, None)
            return                                  # another tool's indent): read it whole
        if head.rstrip().endswith(b"]"):            # "files": [] on one line
            return
        raw_needle = needle.encode("utf-8") if needle else None
        for line in fh:
            text = line.strip()
            if text == b"{":                        # not one line per entry: read it whole
                yield from itertools.islice(_file_entries_whole(manifest, needle), skip, None)
                return
            if text in (b"]", b"],") or not text.startswith(b"{"):
                return
            if raw_needle is not None and raw_needle not in text:
                continue
            if skip and raw_needle is None:
                skip -= 1
                continue
            text = text.rstrip(b",")
            try:
                if documents.nesting_depth(text, documents.MAX_DEPTH) > documents.MAX_DEPTH:
                    continue
                entry = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if not isinstance(entry, dict):
                continue
            if needle and needle not in str(entry.get("path", "")):
                continue
            if skip:
                skip -= 1
                continue
            yield entry


def _file_entries_whole(manifest: Path, needle: str):
    try:
        doc = documents.read_document(manifest, documents.MANIFEST)
    except (OSError, ValueError):
        return
    files = doc.get("files") if isinstance(doc, dict) else None
    for entry in files if isinstance(files, list) else []:
        if isinstance(entry, dict) and (not needle or needle in str(entry.get("path", ""))):
            yield entry


def shown_fields(doc: dict) -> tuple[dict, str | None, list[str]]:
    """A checked manifest's metadata and description as they are indexed and shown: cut to the
    limits add_artifact writes by (MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_DESCRIPTION),
    with the notes of what was cut."""
    notes: list[str] = []
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    metadata = caps.cap_object(metadata, MAX_METADATA_BYTES, MAX_METADATA_DEPTH, "metadata", notes)
    description = doc.get("description")
    if isinstance(description, str):
        description = caps.cap_text(description, MAX_DESCRIPTION, "description", notes)
    return metadata, description, notes
