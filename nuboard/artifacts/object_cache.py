"""The local copy of a URL reference's objects, under $NUBOARD_CACHE_DIR/objects/ (default
~/.cache/nuboard/objects/; the folder above also holds catalogs).

    folder = cache_folder("s3://lab/fineweb/2026-10", entries)
    fill(url, single, entries, current, folder)     # downloads only what the folder lacks

One folder per URL; a version whose objects have version ids gets its own folder (the URL and
those ids), so two versions of an overwritten object never share a file. `.nuboard-objects.json`
in the folder records, for each key, what its file holds: the version id, or else the ETag (the
size and write time where a store gives no ETag). A file is trusted only when that record matches
what the version wants and its size is right, so a second use downloads nothing. Each object is
downloaded into `.partial/` and renamed into place, and recorded only after the rename: a download
killed half way leaves a temp file (removed by the next fill), never a torn file that is trusted.
Fills of one folder take turns (a flock).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, NamedTuple

from nuboard.errors import StorageError
from nuboard.files import layout
from nuboard.files.jsonfile import flock, write_bytes_atomic
from nuboard.remote.store import ObjectInfo, open_store, storage_error
from nuboard.remote.urls import scheme, shown

from .listing import Progress, Ticker

OBJECTS = "objects"
INDEX = ".nuboard-objects.json"
PARTIAL = ".partial"
LOCK = ".lock"
WORKERS = 16                    # downloads at once (small objects cost a round trip each)
INDEX_EVERY = 2.0               # seconds between two writes of the index during a fill
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_folder(url: str, entries: list[dict]) -> Path:
    """The folder that holds the local copy of the objects of `url` (the expanded URL)."""
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass"))
    versions = [(e.get("path"), e.get("version_id")) for e in entries if e.get("version_id")]
    for path, version in versions:
        digest.update(f"\0{path}\0{version}".encode("utf-8", "surrogatepass"))
    proto = scheme(url) or "url"
    rest = url.split("://", 1)[-1].strip("/")
    bucket, _, prefix = rest.partition("/")
    leaf = prefix.rsplit("/", 1)[-1] if prefix else "_"
    name = f"{_SAFE.sub('_', leaf)[:60]}-{digest.hexdigest()[:16]}"
    return layout.cache_dir() / OBJECTS / f"{proto}-{_SAFE.sub('_', bucket)[:80]}" / name


def wanted(entry: dict, now: ObjectInfo | None) -> str | None:
    """What the local file of one entry must hold: 'v:<version id>' (the recorded version's
    bytes), else 'e:<ETag>' of the object now; None when it cannot be had (gone, no version)."""
    if entry.get("version_id"):
        return "v:" + entry["version_id"]
    if now is None:
        return None
    if now.etag:
        return "e:" + now.etag
    return f"s:{now.size}:{now.mtime}"


class Filled(NamedTuple):
    """What a fill did: objects and bytes downloaded, objects already there, objects that could
    not be had (missing from a bucket without versions)."""
    downloaded: int
    bytes: int
    kept: int
    unavailable: list


def read_index(folder: Path) -> dict[str, list]:
    try:
        doc = json.loads((folder / INDEX).read_bytes())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def holds_recorded(folder: Path, entries: list[dict]) -> bool:
    """Whether the local copy holds every object as the version recorded it (by its version id,
    else its recorded ETag, and its size): then it can be used without the store."""
    index = read_index(folder)
    for entry in entries:
        record = index.get(entry["path"])
        want = "v:" + entry["version_id"] if entry.get("version_id") else \
            ("e:" + entry["etag"] if entry.get("etag") else None)
        if want is None or not isinstance(record, list) or record[:1] != [want] \
                or _size_of(folder, entry["path"]) != entry["size"]:
            return False
    return True


def fill(url: str, single: bool, entries: list[dict], current: dict[str, ObjectInfo],
         folder: Path, progress: Progress | None = None) -> Filled:
    """Download into `folder` every object whose local file is not what the version wants.

    current: the listing just made by the check (the objects as they are now).

    Raises:
        StorageError: the store failed (what was downloaded before stays, recorded).
    """
    folder.mkdir(parents=True, exist_ok=True)
    with flock(folder / LOCK):
        partial = folder / PARTIAL
        shutil.rmtree(partial, ignore_errors=True)      # a killed fill's temp files: never trusted
        index = read_index(folder)
        todo, kept, unavailable = [], 0, []
        for entry in entries:
            rel = entry["path"]
            want = wanted(entry, current.get(rel))
            if want is None:
                unavailable.append(rel)
                continue
            size = entry["size"] if entry.get("version_id") else current[rel].size
            record = index.get(rel)
            if isinstance(record, list) and record[:1] == [want] and _size_of(folder, rel) == size:
                kept += 1
                continue
            todo.append((rel, want, size, entry.get("version_id")))
        if not todo:
            return Filled(0, 0, kept, unavailable)
        partial.mkdir(exist_ok=True)
        try:
            done = _download(url, single, todo, folder, partial, index, progress)
        finally:
            _write_index(folder, index)
            shutil.rmtree(partial, ignore_errors=True)
    return Filled(len(todo), done, kept, unavailable)


def _size_of(folder: Path, rel: str) -> int | None:
    try:
        return os.stat(os.path.join(folder, rel)).st_size
    except OSError:
        return None


def _write_index(folder: Path, index: dict) -> None:
    write_bytes_atomic(folder / INDEX, json.dumps(index, separators=(",", ":")).encode())


def _download(url: str, single: bool, todo: list, folder: Path, partial: Path, index: dict,
              progress: Progress | None) -> int:
    """Download `todo` [(key, want, size, version id)] with a few threads; record each in
    `index` once it is renamed into place. Returns the bytes downloaded."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
    versioned = any(version for *_, version in todo)
    store = open_store(url, version_aware=versioned and scheme(url) in ("s3", "s3a"))
    total = sum(size for _, _, size, _ in todo)
    bar, stop_bar = (progress, None) if progress is not None else terminal_bar(len(todo), total)
    tick = Ticker(bar, "downloading", total) if bar is not None else None
    lock = threading.Lock()
    state = {"bytes": 0, "saved": time.monotonic()}
    stop = threading.Event()
    queue = iter(todo)

    def one(rel: str, want: str, size: int, version: str | None) -> None:
        rpath = store.root if single else store.key(rel)
        tmp = partial / uuid.uuid4().hex
        kwargs = {"version_id": version} if version else {}
        try:
            store.fs.get_file(rpath, str(tmp), **kwargs)
        except Exception as exc:
            raise storage_error(exc, url if single else f"{url}/{rel}", "read") from exc
        got = tmp.stat().st_size
        if got != size:
            raise StorageError(f"cannot read {shown(url if single else f'{url}/{rel}')}: "
                               f"{got:,} of {size:,} bytes came (the object changed or the "
                               "transfer was cut); nothing of it was kept")
        dest = folder.joinpath(*rel.split("/"))
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        with lock:
            index[rel] = [want, size]
            state["bytes"] += size
            if time.monotonic() - state["saved"] > INDEX_EVERY:
                state["saved"] = time.monotonic()
                _write_index(folder, dict(index))

    def worker() -> None:
        while not stop.is_set():
            with lock:
                item = next(queue, None)
            if item is None:
                return
            one(*item)

    try:
        with ThreadPoolExecutor(min(WORKERS, len(todo)), thread_name_prefix="nuboard-get") as pool:
            futures = [pool.submit(worker) for _ in range(min(WORKERS, len(todo)))]
            try:
                pending = futures
                while pending:
                    finished, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
                    for future in finished:
                        future.result()
                    if tick is not None:
                        tick(state["bytes"])
            except BaseException:
                stop.set()
                raise
        if tick is not None:
            tick.finish(state["bytes"])
    finally:
        if stop_bar is not None:
            stop_bar()
    return state["bytes"]


def terminal_bar(count: int, total: int) -> "tuple[Progress | None, Callable[[], None] | None]":
    """A progress line on stderr for a download (a terminal only; nothing otherwise), and its
    closer. Plain text redrawn with '\\r': `import nuboard` keeps rich out (pyproject.toml)."""
    stream = sys.stderr
    if not stream.isatty():
        return None, None
    what = f"Downloading {count:,} object{'s' if count != 1 else ''}"
    started = time.monotonic()

    def progress(phase: str, done: int, total: int | None) -> None:
        rate = done / max(time.monotonic() - started, 1e-6)
        share = f" ({100 * done // total}%)" if total else ""
        stream.write(f"\r\x1b[K{what}: {_size(done)} of {_size(total or 0)}{share}, {_size(rate)}/s")
        stream.flush()

    def close() -> None:
        stream.write("\r\x1b[K")
        stream.flush()

    return progress, close


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
