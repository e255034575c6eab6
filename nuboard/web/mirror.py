"""A bucket served by the viewer: `nuboard up s3://lab/experiments` serves a local mirror of it,
pulled again by a thread while the viewer runs (docs/viewer.md, "A bucket").

    mirror = Mirror("s3://lab/exp", mirror_folder("s3://lab/exp"))
    mirror.pull()                    # the first pull: StorageError when the store fails
    mirror.start()                   # then every BUSY_EVERY s while a run runs, else IDLE_EVERY s
    mirror.header()                  # "Mirror of s3://lab/exp · pulled 4 s ago"
    mirror.stop()

The mirror is an ordinary experiments folder (`<project>/runs/<id>/`, as `nuboard sync pull`
leaves it), so every page, query and catalog (team mode's too) reads it unchanged; the viewer
refuses every edit over it, since an edit of the copy would never reach the bucket. A pull that
fails keeps the last mirror served: the header says when the last pull failed and why, and the
terminal says it once per outage.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from nuboard.errors import InvalidArgumentError, NuBoardError
from nuboard.files import layout, runjson
from nuboard.files.status import HeartbeatWatch, run_status
from nuboard.remote.urls import shown

BUSY_EVERY = 5.0                # seconds between pulls while a mirrored run is running
IDLE_RATIO = 12                 # ... and this many times as long otherwise (60 s)
INTERVAL_ENV = "NUBOARD_MIRROR_INTERVAL"
MIRRORS = "mirrors"             # the folder of mirrors under the cache folder
REASON_CHARS = 300              # of a failed pull's reason, in the header
STOP_WAIT = 10.0                # seconds stop() waits for a pull under way


def mirror_name(url: str) -> str:
    """A folder name for the URL, the same on every start: its readable part and a digest of it
    ('s3-lab-exp-1f0c2a9b7d3e'), so that two URLs never share a mirror."""
    text = shown(url).rstrip("/")
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60].rstrip("-.") or "bucket"
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def mirror_folder(url: str) -> Path:
    """Where the mirror of `url` lives: $NUBOARD_CACHE_DIR/mirrors/<mirror_name> (the cache
    folder as the catalogs find it: ~/.cache/nuboard unless the variable is set)."""
    return Path(os.path.abspath(layout.cache_dir())) / MIRRORS / mirror_name(url)


def pull_interval(environ: "dict[str, str] | None" = None) -> float:
    """Seconds between pulls while a run is running: $NUBOARD_MIRROR_INTERVAL, else 5.

    Raises:
        InvalidArgumentError: the variable is not a positive number of seconds.
    """
    text = (os.environ if environ is None else environ).get(INTERVAL_ENV, "").strip()
    if not text:
        return BUSY_EVERY
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < 1e6:
        raise InvalidArgumentError(f"{INTERVAL_ENV}={text!r} is not a number of seconds between pulls: "
                         "give one such as 5 (or unset it).")
    return seconds


def span(seconds: float) -> str:
    """'4 s', '3 min', '2 h', '5 days'."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def ago(seconds: float) -> str:
    """'4 s ago', '3 min ago'."""
    return f"{span(seconds)} ago"


class Mirror:
    """The local mirror of a bucket's experiments, and the thread that keeps it fresh.

    Args:
        url: the experiments in the store ('s3://lab/experiments').
        folder: the local mirror (mirror_folder(url)).
        busy_every: seconds between pulls while a mirrored run is running; IDLE_RATIO times
            as long otherwise.
        log: where the lines about an outage go (default: stderr).
    """

    def __init__(self, url: str, folder: Path, *, busy_every: float = BUSY_EVERY,
                 log: Callable[[str], None] | None = None):
        self.url = url
        self.folder = Path(folder)
        self.busy_every = busy_every
        self.idle_every = busy_every * IDLE_RATIO
        self._log = log or _to_stderr
        self._lock = threading.Lock()
        self.pulled_at: float | None = None         # time.time() of the last pull that worked
        self.failed_at: float | None = None         # ... of a failed pull since then, if any
        self.reason: str | None = None              # why that one failed
        self._outage_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch = HeartbeatWatch()
        self._store = None                          # the opened nuboard.remote Store
        self._statuses: dict[Path, tuple[tuple[int, int], str | None]] = {}

    # -- pulling ------------------------------------------------------------------------------
    def pull(self, progress: Callable[[int, int, str], None] | None = None):
        """Pull the bucket into the mirror once (nuboard.sync.pull); return its SyncSummary.

        Raises:
            StorageError: the store failed, or objects were damaged (the mirror keeps what it
                had of those runs).
            SyncConflictError: a run of the mirror and one of the bucket share an id.
        """
        from nuboard.remote.store import open_store
        from nuboard.sync import pull
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            if self._store is None:          # one client while pulls work: opening one costs 0.1 s
                self._store = open_store(self.url)
            summary = pull(self.url, self.folder, progress=progress, store=self._store)
        except Exception as exc:
            self._store = None               # made afresh after a failure
            self._failed(exc)
            raise
        self._pulled()
        return summary

    def _pulled(self) -> None:
        with self._lock:
            now = time.time()
            if self._outage_since is not None:
                self._log(f"nuboard: pulled {shown(self.url)} again, after "
                          f"{span(now - self._outage_since)} of failed pulls.")
            self.pulled_at, self.failed_at, self.reason, self._outage_since = now, None, None, None

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            now = time.time()
            self.failed_at, self.reason = now, _reason(exc)
            if self._outage_since is None and self.pulled_at is not None:   # once per outage
                self._outage_since = now
                self._log(f"nuboard: warning: {self.reason}; the viewer serves the mirror "
                          f"pulled {ago(now - self.pulled_at)} and tries again every "
                          f"{self.busy_every:g} s.")

    # -- the thread ---------------------------------------------------------------------------
    def start(self) -> None:
        """Pull again in the background until stop()."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name="nuboard-mirror")
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread, waiting a little for a pull under way (it is a daemon thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.wait()):
            try:
                self.pull()
            except Exception:                 # noqa: BLE001 - said once, in the log and header
                pass

    def wait(self) -> float:
        """Seconds until the next pull: short while a run is running or a pull failed."""
        if self.failed_at is not None or self.running():
            return self.busy_every
        return self.idle_every

    def running(self) -> bool:
        """Whether a run of the mirror is running (by its heartbeat, as the viewer shows it).
        A run.json is read again only when it changed."""
        seen: dict[Path, tuple[tuple[int, int], str | None]] = {}
        busy = False
        for project in layout.find_projects(self.folder) if self.folder.is_dir() else ():
            try:
                entries = list(os.scandir(layout.runs_dir(self.folder, project)))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                folder = Path(entry.path)
                try:
                    stat = os.stat(folder / layout.RUN_JSON)
                except OSError:
                    continue
                key = (stat.st_mtime_ns, stat.st_size)
                old = self._statuses.get(folder)
                status = old[1] if old is not None and old[0] == key else _stored_status(folder)
                seen[folder] = (key, status)
                if status == "running" and run_status(folder, watch=self._watch) == "running":
                    busy = True
        self._statuses = seen
        return busy

    # -- what the page header says ------------------------------------------------------------
    def header(self, now: float | None = None) -> dict:
        """The header's words: {'url', 'pulled' ('Mirror of URL · pulled 4 s ago'), 'failed'
        ('last pull failed 30 s ago: <reason>', or None)}."""
        now = time.time() if now is None else now
        with self._lock:
            pulled_at, failed_at, reason = self.pulled_at, self.failed_at, self.reason
        url = shown(self.url)
        pulled = f"Mirror of {url} · " + ("pulled " + ago(now - pulled_at) if pulled_at
                                          else "not pulled yet")
        failed = None
        if failed_at is not None:
            failed = f"last pull failed {ago(now - failed_at)}: {reason}"
        return {"url": url, "pulled": pulled, "failed": failed, "folder": str(self.folder)}

    def refusal(self, what: str) -> str:
        """The one line that refuses an edit of the mirror."""
        return (f"{shown(self.url)} is served read-only: {what}; edit where the runs are "
                "written, then 'nuboard sync push'.")


def _stored_status(folder: Path) -> str | None:
    """The status run.json records (None when it cannot be read)."""
    try:
        doc = runjson.read_run(folder)
    except (OSError, ValueError):
        return None
    return doc.get("status") if isinstance(doc, dict) else None


def _reason(exc: BaseException) -> str:
    """A failed pull's reason in one line, cut to REASON_CHARS."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if not isinstance(exc, (NuBoardError, OSError)):
        text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
