"""Is a run alive? Its status in run.json, and 'lost' judged from its heartbeat.

A run whose run.json says 'running' is lost when its heartbeat has not changed for two
minutes and for three of the run's own heartbeat intervals (the heartbeat file records
its interval: a run started with heartbeat_interval=300 is lost after 15 minutes). A
one-shot reader judges that by the heartbeat file's modification time, which the file
system that stores it sets, never by the time the writer wrote inside it: a
writer on another host whose clock is off by an hour is not shown as lost. A reader that
looks again and again (the viewer) passes a HeartbeatWatch, which judges by the heartbeat's
counter changing, timed by the reader's own monotonic clock.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from . import documents, layout, runjson

LOST_AFTER = 120.0
LOST_INTERVALS = 3           # ... and older than this many of the run's heartbeat intervals


def lost_after(beat: dict | None) -> float:
    """Seconds a heartbeat may stand still before its run is lost: 120 s, or 3 of its intervals."""
    interval = beat.get("interval") if isinstance(beat, dict) else None
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
        return LOST_AFTER
    return max(LOST_AFTER, LOST_INTERVALS * float(min(interval, 1e9)))


class HeartbeatWatch:
    """Remembers when each run's heartbeat counter last changed, on the reader's clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._seen: dict[str, tuple[object, float]] = {}

    def unchanged_for(self, key: str, beat: object, age: float) -> float:
        """Seconds the heartbeat `beat` of `key` has stood still.

        On first sight that is `age` (the file's age); once it was seen, the reader's clock
        counts from the last change it saw, and a change counts as fresh.
        """
        now = self.clock()
        last = self._seen.get(key)
        if last is None:
            self._seen[key] = (beat, now - max(0.0, age))
        elif last[0] != beat:
            self._seen[key] = (beat, now)
        return now - self._seen[key][1]


def read_heartbeat(run_dir: Path) -> dict | None:
    """The run's heartbeat record; None when it has none or it breaks the heartbeat's rules
    (documents.HEARTBEAT: a regular file of at most 64 kB, nested at most 100 levels, JSON, an
    object): then the run is judged by the file's mtime alone."""
    try:
        doc = documents.read_document(Path(run_dir) / layout.HEARTBEAT, documents.HEARTBEAT)
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def heartbeat_mtime(run_dir: "str | os.PathLike[str]") -> float | None:
    """When the run last showed life: its heartbeat file's mtime, else run.json's (or None)."""
    for name in (layout.HEARTBEAT, layout.RUN_JSON):
        try:
            return os.stat(Path(run_dir) / name).st_mtime
        except OSError:
            continue
    return None


def run_status(run_dir: "str | os.PathLike[str]", doc: dict | None = None, *,
               now: float | None = None, watch: HeartbeatWatch | None = None) -> str:
    """'running', 'lost', 'finished', 'crashed', 'killed' or 'failed' (or 'unknown')."""
    run_dir = Path(run_dir)
    if doc is None:
        try:
            doc = runjson.read_run(run_dir)
        except (OSError, ValueError):
            return "unknown"
    status = doc.get("status", "unknown") if isinstance(doc, dict) else "unknown"
    if status != "running":
        return status
    mtime = heartbeat_mtime(run_dir)
    if mtime is None:
        return "unknown"
    age = (time.time() if now is None else now) - mtime
    beat = read_heartbeat(run_dir)
    if watch is not None:
        mark = None if beat is None else (beat.get("seq"), beat.get("session"), beat.get("pid"))
        age = watch.unchanged_for(str(run_dir.resolve()), mark, age)
    return "lost" if age > lost_after(beat) else "running"


def run_lost_after(run_dir: "str | os.PathLike[str]") -> float:
    """lost_after of the run's heartbeat file (120 s without one)."""
    return lost_after(read_heartbeat(Path(run_dir)))


def live_process(run_dir: "str | os.PathLike[str]", host: str | None = None) -> int | None:
    """The pid of the run's process when it is alive on this host (by its heartbeat), else None.

    Only a run that run.json says is 'running' (lost or not) has one; a pid reused by another
    process since errs on the side of keeping the run.
    """
    run_dir = Path(run_dir)
    try:
        doc = runjson.read_run(run_dir)
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and doc.get("status") != "running":
        return None
    beat = read_heartbeat(run_dir)
    pid = beat.get("pid") if beat else None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    if beat.get("host") != (host if host is not None else hostname()):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid                    # alive, another user's
    except OSError:
        return None
    return pid


def hostname() -> str:
    """This machine's name, as run.json and the heartbeat record it."""
    try:
        return os.uname().nodename
    except AttributeError:
        import socket
        return socket.gethostname()
