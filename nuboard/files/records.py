"""A run as people read it: its status with 'lost', times, durations, and the ls record.

Pure functions shared by the command line and the viewer; nothing here touches the disk.
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Any, Mapping, Sequence

from .status import LOST_AFTER


def display_status(status: str, heartbeat_mtime: float | None, now: float,
                   lost_after: float | None = None) -> str:
    """The status to show: 'lost' for a running run whose heartbeat is over `lost_after` seconds
    old (the catalog's runs.lost_after: 120 s, or three of the run's heartbeat intervals)."""
    limit = LOST_AFTER if lost_after is None else max(LOST_AFTER, lost_after)
    if status == "running" and heartbeat_mtime is not None and now - heartbeat_mtime > limit:
        return "lost"
    return status


def parse_time(iso: str | None) -> dt.datetime | None:
    """An ISO 8601 time as run.json writes it ('2026-12-02T16:53:45.786Z') to an aware datetime."""
    if not iso:
        return None
    try:
        when = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def format_local_time(iso: str | None, tz: dt.tzinfo | None = None) -> str:
    """'2026-12-02 17:53' in local time (or in tz); '-' when there is no time."""
    when = parse_time(iso)
    if when is None:
        return "-"
    return when.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def format_duration(seconds: float | None) -> str:
    """'42s', '3m 05s', '1h 02m', '2d 03h'; '-' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def run_duration(row: Mapping[str, Any], status: str, now: float) -> float | None:
    """Seconds a run took; a running run so far, a lost one up to its last heartbeat."""
    if row.get("duration_s") is not None:
        return float(row["duration_s"])
    start = parse_time(row.get("created"))
    if start is None:
        return None
    if status == "running":
        return max(0.0, now - start.timestamp())
    if status == "lost" and row.get("heartbeat_mtime") is not None:
        return max(0.0, float(row["heartbeat_mtime"]) - start.timestamp())
    end = parse_time(row.get("ended"))
    return (end - start).total_seconds() if end is not None else None


def run_record(row: Mapping[str, Any], tags: Sequence[str], project: str, now: float) -> dict:
    """A catalog row of `runs` (with its tags) as the JSON object `nuboard ls --json` prints."""
    status = display_status(row["status"], row.get("heartbeat_mtime"), now, row.get("lost_after"))
    duration = run_duration(row, status, now)
    return {
        "project": project,
        "id": row["run_id"],
        "name": row["name"],
        "status": status,
        "group": row.get("group_name"),
        "tags": list(tags),
        "start": row.get("created") or None,
        "end": row.get("ended"),
        "duration_s": None if duration is None else round(duration, 3),
        "host": row.get("host"),
        "notes": row.get("notes"),
        "cut": row.get("cut"),
    }
