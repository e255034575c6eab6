"""The background writer: per-scalar buffers, drained into one rank's event log.

The training thread appends a point with three `array.append` calls (step, wall time,
value, in that order). The writer takes `n = len(values)` first, copies the first n items
of each array and deletes them (`del a[:n]`). Each of those is one C call under the GIL, so
a point appended while the writer works stays in the buffer for the next drain: nothing is
lost to the race between swapping and appending.

run.log of a dict whose keys come again in the same order appends to the dict shape's
Group instead: one step and one wall time per row, the row's values in one C call. While a
group holds a scalar, nothing else appends to that scalar's own buffer; a scalar changes
buffer only under the drain lock (form_group, release_group), and a drain takes the own
buffers before the groups, so each scalar's points reach the file in the order logged.

A log removed while the run logs (rm -rf of the run folder, a cleanup job) would take writes
into its unlinked inode without an error. So each drain first asks the file's link count (one
fstat, about a microsecond, once a flush_interval: nothing on add_scalar's path); at 0 the
writer warns once and from then on counts every point it takes as dropped, unwritten.
"""
from __future__ import annotations

import os
import struct
import threading
import time
import warnings
from array import array
from pathlib import Path

from nuboard.files.jsonfile import write_json_atomic
from nuboard.files.sigterm import block_signals, defer_sigterm, start_blocked
from nuboard.files.sigterm import pending as sigterm_pending

from . import logfile

SERIES_CAP = 1 << 18        # points buffered per scalar before add_scalar waits for the writer
RECORD_POINTS = 1 << 16     # points per POINTS record at most


class ScalarBuffer:
    """One scalar's buffer on the training thread; `group` is the Group that holds its new
    points instead, if any (its last_step is then the group's)."""
    __slots__ = ("key_id", "name", "steps", "walls", "values", "last_step", "group")

    def __init__(self, key_id: int, name: str, last_step: int = -1):
        self.key_id = key_id
        self.name = name
        self.steps = array("q")
        self.walls = array("d")
        self.values = array("d")
        self.last_step = last_step
        self.group: Group | None = None


class Group:
    """The buffer of one dict shape of run.log: a step and a wall time per row, and the
    rows' values one after the other (row-major, in the order of `series`).

    `pack(*values)` turns a row into bytes of doubles in one C call, or raises.
    """
    __slots__ = ("keys", "series", "steps", "walls", "values", "last_step", "pack")

    def __init__(self, keys: tuple, series: "list[ScalarBuffer]"):
        self.keys = keys
        self.series = series
        self.steps = array("q")
        self.walls = array("d")
        self.values = array("d")
        self.last_step = max(s.last_step for s in series)
        self.pack = struct.Struct(f"{len(series)}d").pack


class EventWriter:
    """Owns one event log file and the thread that drains the run's buffers into it."""

    def __init__(self, path: Path, series: dict, meta: dict, flush_interval: float,
                 heartbeat: "Heartbeat | None" = None, groups: "dict | None" = None):
        self.path = path
        self.series = series                   # every ScalarBuffer of the run, by name
        self.groups = {} if groups is None else groups   # every Group, by its keys
        self.flush_interval = flush_interval
        self.heartbeat = heartbeat
        self.dropped_points = 0
        self.written_points = 0
        self.vanished = False                  # the log lost its last link: points are dropped
        self._warned = False
        self._wake = threading.Event()
        self._stop = False
        self._drained = threading.Condition()
        self._drain_count = 0
        self._lock = threading.Lock()          # one drain at a time (thread, finish, waiters)
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)   # claimed by nb.init
        self.fd = os.open(path, flags, 0o644)
        self.size = 0
        self.salt = salt = logfile.new_salt()     # frames of this file check out only with it
        head = logfile.file_header(salt) + logfile.meta_record(meta, salt)
        self._pending = b"" if self._write(head) else head   # a full disk: retry with the next write
        self._thread = threading.Thread(target=self._loop, name="nuboard-writer", daemon=True)
        start_blocked(self._thread)

    # -- the training thread's side -------------------------------------------------------
    def wait_for_room(self, steps: array) -> None:
        """Block until the writer has drained a full buffer (the disk is slower than logging).

        `steps` is the steps array of the ScalarBuffer or Group that holds SERIES_CAP points.
        """
        if not self._thread.is_alive():
            self.drain()
            return
        with defer_sigterm, self._drained:
            seen = self._drain_count
            self._wake.set()
            while len(steps) >= SERIES_CAP and self._drain_count == seen \
                    and self._thread.is_alive() and not sigterm_pending():
                self._drained.wait(0.5)

    def form_group(self, keys: tuple, series: "list[ScalarBuffer]") -> Group:
        """Make the Group of a dict shape; from now on it holds these scalars' new points."""
        with defer_sigterm, self._lock:
            group = Group(keys, series)
            for s in series:
                s.group = group
            self.groups[keys] = group
        return group

    def release_group(self, group: Group) -> None:
        """Move a group's points to its scalars' own buffers, after what those hold, and
        forget the group: its scalars are logged one by one from now on."""
        with defer_sigterm, self._lock:
            k = len(group.series)
            rows = len(group.values) // k
            steps, walls = group.steps[:rows], group.walls[:rows]
            for i, s in enumerate(group.series):
                s.steps.extend(steps)
                s.walls.extend(walls)
                s.values.extend(group.values[i:rows * k:k])
                s.last_step = group.last_step
                s.group = None
            del group.steps[:], group.walls[:], group.values[:]
            self.groups.pop(group.keys, None)

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
        """Take what every buffer holds, pack it, and append it in one write; once the log
        has vanished, count it as dropped instead.

        The scalars' own buffers go first, then the groups: a scalar's points in its own
        buffer are older than those in its group (see the module's docstring).
        """
        with defer_sigterm, self._lock:   # on the main thread, a SIGTERM waits for the lock
            keep = not (self.vanished or self._check_vanished())
            parts: list[bytes] = []
            taken = 0
            for s in list(self.series.values()):
                vals = s.values
                n = len(vals)
                if not n:
                    continue
                steps, walls = s.steps, s.walls
                if keep:
                    _pack_points(parts, s, steps, walls, vals, n, self.salt)
                del steps[:n]
                del walls[:n]
                del vals[:n]
                taken += n
            for g in list(self.groups.values()):
                vals = g.values
                k = len(g.series)
                rows = len(vals) // k              # the values of a row are appended last
                if not rows:
                    continue
                steps, walls = g.steps, g.walls
                if keep:
                    for i, s in enumerate(g.series):
                        _pack_points(parts, s, steps, walls, vals[i:rows * k:k], rows, self.salt)
                del steps[:rows]
                del walls[:rows]
                del vals[:rows * k]
                taken += rows * k
            if not keep:
                self.dropped_points += taken
            elif parts:
                if self._write(self._pending + b"".join(parts)):
                    self._pending = b""
                    self.written_points += taken
                else:
                    self.dropped_points += taken
        with defer_sigterm, self._drained:
            self._drain_count += 1
            self._drained.notify_all()

    def append(self, record: bytes) -> bool:
        """Append one whole framed record (a media entry) between drains, from any thread;
        False when it could not be written (a full disk, a vanished log)."""
        with defer_sigterm, self._lock:
            if self.vanished or self._check_vanished():
                return False
            if self._write(self._pending + record):
                self._pending = b""
                return True
            return False

    def _check_vanished(self) -> bool:
        """Whether the log has lost its last link (removed with its folder, or alone): then
        mark it vanished, for good, and warn once. One fstat, about a microsecond."""
        try:
            if os.fstat(self.fd).st_nlink:
                return False
        except OSError:                  # the write that follows says what is wrong
            return False
        self.vanished = True
        folder = self.path.parent
        what = f"{self.path.name} was removed" if folder.is_dir() else "the folder was removed"
        self._warn_once(f"nuboard: cannot write to {folder} ({what}); its points are dropped "
                        "from now on and counted in run.dropped_points. Training goes on.")
        return True

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
            self._warn_once(f"nuboard: cannot write to {self.path.parent} ({exc.strerror or exc}); "
                            "points are being dropped and counted until it can be written again. "
                            "Training goes on.")
            return False
        self.size += len(data)
        return True

    def _warn_once(self, message: str) -> None:
        """The writer's one RuntimeWarning (a full disk, a vanished log), whatever comes after."""
        if self._warned:
            return
        self._warned = True
        try:
            warnings.warn(message, RuntimeWarning, stacklevel=3)   # _warn_once, its caller, drain
        except Exception:            # warnings made errors (-W error) must not stop the writer
            pass

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
        """In a forked child: forget the inherited file and groups without writing them."""
        self.groups.clear()
        try:
            os.close(self.fd)
        except OSError:
            pass


def _pack_points(parts: list, s: ScalarBuffer, steps: array, walls: array, values: array,
                 n: int, salt: int) -> None:
    """Append the records of a scalar's first n points (steps, walls, values) to parts."""
    # Each batch names its keys again: a damaged KEY record costs one batch, not a file.
    parts.append(logfile.key_record(s.key_id, s.name, salt))
    for lo in range(0, n, RECORD_POINTS):
        hi = min(n, lo + RECORD_POINTS)
        parts.append(logfile.points_record(s.key_id, steps[lo:hi], walls[lo:hi], values[lo:hi], salt))


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
