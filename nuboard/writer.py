"""The background writer: per-scalar buffers, drained into one rank's event log.

The training thread appends a point with three `array.append` calls (step, wall time,
value, in that order). The writer takes `n = len(values)` first, copies the first n items
of each array and deletes them (`del a[:n]`). Each of those is one C call under the GIL, so
a point appended while the writer works stays in the buffer for the next drain: nothing is
lost to the race between swapping and appending.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from array import array
from pathlib import Path

from . import events
from .jsonfile import write_json_atomic
from .sigterm import block_signals, defer_sigterm, pending as sigterm_pending

SERIES_CAP = 1 << 18        # points buffered per scalar before add_scalar waits for the writer
RECORD_POINTS = 1 << 16     # points per POINTS record at most


class Series:
    """One scalar's buffer on the training thread."""
    __slots__ = ("key_id", "name", "steps", "walls", "values", "last_step")

    def __init__(self, key_id: int, name: str, last_step: int = -1):
        self.key_id = key_id
        self.name = name
        self.steps = array("q")
        self.walls = array("d")
        self.values = array("d")
        self.last_step = last_step


class EventWriter:
    """Owns one event log file and the thread that drains the run's buffers into it."""

    def __init__(self, path: Path, series: dict, meta: dict, flush_interval: float,
                 heartbeat: "Heartbeat | None" = None):
        self.path = path
        self.series = series
        self.flush_interval = flush_interval
        self.heartbeat = heartbeat
        self.dropped_points = 0
        self.written_points = 0
        self._warned = False
        self._wake = threading.Event()
        self._stop = False
        self._drained = threading.Condition()
        self._drain_count = 0
        self._lock = threading.Lock()          # one drain at a time (thread, finish, waiters)
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)   # claimed by nb.init
        self.fd = os.open(path, flags, 0o644)
        self.size = 0
        head = events.FILE_HEADER + events.meta_record(meta)
        self._pending = b"" if self._write(head) else head   # a full disk: retry with the next write
        self._thread = threading.Thread(target=self._loop, name="nuboard-writer", daemon=True)
        self._thread.start()

    # -- the training thread's side -------------------------------------------------------
    def wait_for_room(self, series: Series) -> None:
        """Block until the writer has drained a full buffer (the disk is slower than logging)."""
        if not self._thread.is_alive():
            self.drain()
            return
        with defer_sigterm, self._drained:
            seen = self._drain_count
            self._wake.set()
            while len(series.values) >= SERIES_CAP and self._drain_count == seen \
                    and self._thread.is_alive() and not sigterm_pending():
                self._drained.wait(0.5)

    def flush(self) -> None:
        """Write everything buffered now, from the calling thread."""
        self.drain()

    # -- the writer thread ----------------------------------------------------------------
    def _loop(self) -> None:
        """Drain every flush_interval (or when woken), beat every heartbeat interval."""
        block_signals()                  # a SIGTERM must reach the main thread, to wake it
        now = time.monotonic()
        next_flush = now + self.flush_interval
        next_beat = now + (self.heartbeat.interval if self.heartbeat else float("inf"))
        while not self._stop:
            woken = self._wake.wait(max(0.0, min(next_flush, next_beat) - time.monotonic()))
            self._wake.clear()
            if self._stop:
                break
            now = time.monotonic()
            if woken or now >= next_flush:
                self.drain()
                next_flush = now + self.flush_interval
            if self.heartbeat is not None and now >= next_beat:
                self.heartbeat.beat()
                next_beat = now + self.heartbeat.interval

    def drain(self) -> None:
        """Take what every buffer holds, pack it, and append it in one write."""
        with defer_sigterm, self._lock:   # on the main thread, a SIGTERM waits for the lock
            parts: list[bytes] = []
            taken = 0
            for s in list(self.series.values()):
                vals = s.values
                n = len(vals)
                if not n:
                    continue
                # Each batch names its keys again: a damaged KEY record costs one batch, not a file.
                parts.append(events.key_record(s.key_id, s.name))
                steps, walls = s.steps, s.walls
                for lo in range(0, n, RECORD_POINTS):
                    hi = min(n, lo + RECORD_POINTS)
                    parts.append(events.points_record(s.key_id, steps[lo:hi], walls[lo:hi], vals[lo:hi]))
                del steps[:n]
                del walls[:n]
                del vals[:n]
                taken += n
            if parts:
                if self._write(self._pending + b"".join(parts)):
                    self._pending = b""
                    self.written_points += taken
                else:
                    self.dropped_points += taken
        with defer_sigterm, self._drained:
            self._drain_count += 1
            self._drained.notify_all()

    def _write(self, data: bytes) -> bool:
        """Append bytes; on an I/O error cut back to the last whole record and warn once."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            try:
                os.ftruncate(self.fd, self.size)
            except OSError:
                pass
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"nuboard: cannot write to {self.path.parent} ({exc.strerror or exc}); "
                    "points are being dropped and counted until it can be written again. "
                    "Training goes on.", RuntimeWarning, stacklevel=2)
            return False
        self.size += len(data)
        return True

    def close(self) -> None:
        """Stop the thread, write what is left, fsync and close the file."""
        self._stop = True
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self.drain()
        try:
            os.fsync(self.fd)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass
        if self.heartbeat is not None:
            self.heartbeat.beat()

    def abandon(self) -> None:
        """In a forked child: forget the inherited file without writing to it."""
        try:
            os.close(self.fd)
        except OSError:
            pass


class Heartbeat:
    """The heartbeat file of a run: a counter that changes every interval."""

    def __init__(self, path: Path, interval: float, host: str, session: int):
        self.path = path
        self.interval = interval
        self.host = host
        self.session = session
        self.seq = 0

    def beat(self) -> None:
        self.seq += 1
        doc = {"seq": self.seq, "time": time.time(), "host": self.host, "pid": os.getpid(),
               "session": self.session, "interval": self.interval}
        try:
            write_json_atomic(self.path, doc)
        except OSError:
            pass
