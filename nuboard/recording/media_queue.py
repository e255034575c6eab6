"""The media queue: entries logged on the training thread, encoded and stored on a thread of
their own, then named in the rank's event log.

The training thread checks and copies (the nb.Image constructor), then `put` appends the
entry to a bounded queue and returns. The thread `nuboard-media` takes entries in the order
logged: a kind kept in the log (a histogram, short text) becomes its record at once; any other
is encoded (PNG, WAV, Parquet), written whole as a file under media/ (files/media_store.py),
and only then named by a MEDIA record, appended through the EventWriter between its drains.
So a kill at any moment leaves no record naming a half-written file; a file whose record was
not written yet is an orphan that the catalog's cleanup removes.

The queue holds at most MAX_ENTRIES entries and MAX_BYTES of pixels, samples and cells (an
entry bigger than that alone is taken when the queue is empty): when the disk or the encoder
cannot keep up, `put` waits, as add_scalar waits for a full scalar buffer, rather than
dropping entries or growing without bound. The thread starts with the first entry: a run that
logs no media pays nothing.
"""
from __future__ import annotations

import collections
import threading
import warnings
from pathlib import Path
from typing import Any

from nuboard.eventlog import logfile
from nuboard.eventlog.writer import EventWriter
from nuboard.files import media_store
from nuboard.files.sigterm import block_signals, defer_sigterm, start_blocked
from nuboard.media import Media

MAX_ENTRIES = 64            # entries queued before run.log waits for the media thread
MAX_BYTES = 512 << 20       # bytes of queued media before run.log waits


class MediaQueue:
    """One rank's queue of media entries and the thread that stores them."""

    def __init__(self, run_dir: Path, writer: EventWriter):
        self.run_dir = run_dir
        self.writer = writer
        self.written = 0                 # entries named in the log
        self.dropped = 0                 # entries that could not be stored (counted, warned)
        self._items: collections.deque = collections.deque()
        self._bytes = 0
        self._busy = False
        self._stop = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._warned = False

    # -- the training thread's side ---------------------------------------------------------
    def put(self, key: str, media: Media, step: int, wall: float) -> None:
        """Queue one entry; wait while the queue is full."""
        size = _size(media)
        with defer_sigterm, self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="nuboard-media", daemon=True)
                start_blocked(self._thread)
            while self._items and (len(self._items) >= MAX_ENTRIES or self._bytes + size > MAX_BYTES) \
                    and self._thread.is_alive():
                self._cond.wait(0.5)
            self._items.append((key, media, step, wall, size))
            self._bytes += size
            self._cond.notify_all()

    def join(self) -> None:
        """Wait until every entry queued so far is stored and named in the log."""
        with defer_sigterm, self._cond:
            while (self._items or self._busy) and self._thread is not None and self._thread.is_alive():
                self._cond.wait(0.5)
        if self._items:                 # the thread is gone (a fork, a crash): store them here
            self._run_pending()

    def close(self) -> None:
        """Store what is queued, then stop the thread."""
        self.join()
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def abandon(self) -> None:
        """In a forked child: forget the queue without storing it. No lock is taken: the
        parent's media thread may have held it at the fork, and it is not in the child."""
        self._items = collections.deque()
        self._cond = threading.Condition()
        self._thread = None
        self._stop = True

    # -- the media thread --------------------------------------------------------------------
    def _loop(self) -> None:
        block_signals()
        while True:
            with self._cond:
                while not self._items and not self._stop:
                    self._cond.wait()
                if not self._items:
                    return
                item = self._items[0]
                self._busy = True
            try:
                self._store(*item[:4])
            finally:
                with self._cond:
                    self._items.popleft()
                    self._bytes -= item[4]
                    self._busy = False
                    self._cond.notify_all()

    def _run_pending(self) -> None:
        while self._items:
            item = self._items.popleft()
            self._bytes -= item[4]
            self._store(*item[:4])

    def _store(self, key: str, media: Media, step: int, wall: float) -> None:
        """Encode one entry, write its file, then append its record; count and warn on failure."""
        try:
            doc: dict[str, Any] = {"key": key, "step": step, "wall": wall, "kind": media.kind}
            if media.in_log:
                doc.update(media.record())
            else:
                stem = str(step)
                cells: list[str] = []

                def store_cell(image: Any) -> str:
                    encoded = image.encode()
                    cells.append(media_store.store(self.run_dir, key, f"{stem}-cell{len(cells)}",
                                                   encoded.ext, encoded.data))
                    return cells[-1]

                encoded = media.encode(store_cell) if media.kind == "table" else media.encode()
                doc["file"] = media_store.store(self.run_dir, key, stem, encoded.ext, encoded.data)
                if cells:
                    doc["cells"] = cells
                doc["format"] = encoded.ext
                doc["bytes"] = len(encoded.data)
                doc.update({k: v for k, v in encoded.meta.items() if v is not None})
            record = logfile.media_record(doc, self.writer.salt)
        except Exception as exc:         # a full disk, a vanished folder, an encoder's error
            self._drop(f"cannot store the {media.kind} at {key!r} step {step} ({exc})")
            return
        if self.writer.append(record):
            self.written += 1
        else:
            self.dropped += 1

    def _drop(self, message: str) -> None:
        self.dropped += 1
        if self._warned:
            return
        self._warned = True
        try:
            warnings.warn(f"nuboard: {message}; media are being dropped and counted in "
                          "run.dropped_media. Training goes on.", RuntimeWarning, stacklevel=2)
        except Exception:
            pass


def _size(media: Media) -> int:
    """What an entry holds in memory until it is stored (0 when the kind does not say)."""
    size = getattr(media, "nbytes", None)
    if isinstance(size, int):
        return size
    samples = getattr(media, "_samples", None)
    return int(getattr(samples, "nbytes", 0) or 0)
