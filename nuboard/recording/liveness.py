"""Whether a run's rank is being written by a live process, so that no stranger resumes it.

Judged as `nuboard rm` judges a run still running (files.status): run.json says 'running' and
its writer shows life. Rank 0's writer is the process of the run's last recorded session (and
of the heartbeat, when the heartbeat is that session's). On this host its pid answers: alive,
not this process, and not a pid that a process started since has taken. On another host, a
heartbeat (or a session start) newer than the run's lost-after time (two minutes, or three
heartbeat intervals) does. A finished, crashed, killed or lost run has no live writer. Another
rank's writer is the process its newest session log's META record names, judged by its pid on
this host only (ranks other than 0 keep no heartbeat).
"""
from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from nuboard.errors import RunExistsError
from nuboard.files import layout
from nuboard.files.status import hostname, lost_after, read_heartbeat

from .processes import process_alive, process_start

REUSE_SLACK = 2.0          # seconds a live pid's start may follow its writer's last sign of life


class Writer(NamedTuple):
    """The live process that writes a rank of a run: its pid, host, and why it counts as live."""
    pid: int
    host: str
    why: str


def live_writer(folder: Path, doc: object, rank: int) -> Writer | None:
    """The live process (other than this one) that writes `rank` of the run, or None.

    doc: the run's run.json as just read (under the run's lock where it matters).
    """
    if rank != 0:
        return _live_rank_writer(folder, rank)
    if not isinstance(doc, dict) or doc.get("status") != "running":
        return None
    beat = read_heartbeat(folder)
    limit = lost_after(beat)
    signs = []
    sessions = doc.get("sessions")
    last = sessions[-1] if isinstance(sessions, list) and sessions else None
    if beat is not None and (not isinstance(last, dict) or beat.get("session") == last.get("session")):
        try:                          # an earlier session's heartbeat says nothing of the last
            signs.append((beat.get("pid"), beat.get("host"),
                          os.stat(folder / layout.HEARTBEAT).st_mtime, "its heartbeat was written"))
        except OSError:
            pass
    if isinstance(last, dict):
        signs.append((last.get("pid"), last.get("host"), _epoch(last.get("start_time")),
                      f"its session {last.get('session')!r} started"))
    here, now = hostname(), time.time()
    for pid, host, when, what in signs:
        if isinstance(pid, bool) or not isinstance(pid, int) or not isinstance(host, str):
            continue
        if host == here:
            if _alive_since(pid, when):
                return Writer(pid, host, "its process is alive on this host")
        elif when is not None and now - when <= limit:
            return Writer(pid, host, f"{what} {max(0.0, now - when):.0f} s ago, and a run is "
                                     f"lost only after {limit:.0f} s without a heartbeat")
    return None


def refuse_live(run_id: str, project: str, rank: int, writer: Writer) -> RunExistsError:
    """The error of a resume that would write into a run another live process writes."""
    return RunExistsError(
        f"Run {run_id!r} in project {project!r} is being written by another live process "
        f"(pid {writer.pid} on host {writer.host!r}, rank {rank}: {writer.why}); resuming it "
        "would mix two processes' points. Wait for it to end or stop it, or leave run_id out to "
        "start a new run.")


def _live_rank_writer(folder: Path, rank: int) -> Writer | None:
    """The live process on this host that writes this rank's newest session log, or None."""
    from nuboard.eventlog.logfile import LogReader
    logs = layout.list_logs(folder, rank)
    if not logs:
        return None
    reader = LogReader(logs[-1][2])
    frames = reader.read_iter()
    next(frames, None)                   # the META record comes first
    frames.close()
    meta = reader.meta if isinstance(reader.meta, dict) else {}
    pid, host, started = meta.get("pid"), meta.get("host"), meta.get("start_time")
    if isinstance(pid, bool) or not isinstance(pid, int) or host != hostname():
        return None
    when = started if isinstance(started, (int, float)) and not isinstance(started, bool) else None
    return Writer(pid, host, "its process is alive on this host") if _alive_since(pid, when) \
        else None


def _alive_since(pid: int, when: float | None) -> bool:
    """Whether pid, on this host, is a live process other than this one that was already
    running at `when` (a pid that a later process took is not the writer)."""
    if pid == os.getpid() or not process_alive(pid):
        return False
    started = process_start(pid)
    return when is None or started is None or started <= when + REUSE_SLACK


def _epoch(text: object) -> float | None:
    """Seconds since the epoch of an ISO time as run.json writes it, or None."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
