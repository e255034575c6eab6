"""The Timeline as data: runs on a wall-time axis, their sessions, forks and the versions they made.

Times are epoch seconds (floats). A run's `end` is None while it runs (the page draws it to
`now`); a lost run ends at its last heartbeat. A resumed run has one segment per session:
session k from its start to the next session's start, the last to the run's end.
Versions are those the run produced, in this project or another (found through the
`lineage` table, whose rows name both ends), each with its creation time from the catalog
of the artifact's project (`created`, whole seconds) and where its diamond sits (`at`, that
time kept on the run's bar).
"""
from __future__ import annotations

import threading
from typing import Callable

from nuboard.catalog import run_reads
from nuboard.catalog.run_doc import read_run_doc
from nuboard.files import layout
from nuboard.files.records import display_status, parse_time

LIMIT = 2000
SESSION_CACHE_SIZE = 50_000


def epoch(iso: str | None) -> float | None:
    """An ISO 8601 time of run.json or the catalog as epoch seconds (None when absent or bad)."""
    when = parse_time(iso)
    return None if when is None else round(when.timestamp(), 3)


class SessionCache:
    """Each run's sessions, read from run.json only when the run has logs of several sessions,
    and kept until run.json changes (its size and mtime, from the catalog's signature)."""

    def __init__(self, size: int = SESSION_CACHE_SIZE):
        self.size = size
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, str], tuple[str, list[dict]]] = {}

    def sessions(self, root, project: str, row: dict, start: float | None) -> list[dict]:
        """[{'session', 'start'}] in order of start; one session at the run's start when the
        run has logs of one session only (no run.json read)."""
        parts = (row.get("signature") or "").split("|")
        numbers = set()
        for part in parts:
            match = layout.LOG_PATTERN.match(part.split(":", 1)[0])
            if match and match.group(1) == "0":
                numbers.add(int(match.group(2)))
        if len(numbers) < 2:
            return [{"session": min(numbers) if numbers else 0, "start": start}]
        key = (str(root), project, row["run_id"])
        stamp = parts[0]
        with self._lock:
            found = self._seen.get(key)
        if found is not None and found[0] == stamp:
            return found[1]
        try:
            doc = read_run_doc(layout.run_dir(root, project, row["run_id"]))
        except (OSError, ValueError):
            doc = None
        listed = doc.get("sessions") if isinstance(doc, dict) else None
        out = []
        for entry in listed if isinstance(listed, list) else []:
            if not isinstance(entry, dict):
                continue
            when = epoch(entry.get("start_time")) if isinstance(entry.get("start_time"), str) \
                else None
            if when is not None:
                session = entry.get("session")
                out.append({"session": session if isinstance(session, int) else len(out),
                            "start": when})
        out.sort(key=lambda s: s["start"])
        if not out:
            out = [{"session": 0, "start": start}]
        with self._lock:
            if len(self._seen) >= self.size:
                self._seen.clear()
            self._seen[key] = (stamp, out)
        return out


def last_sign_of_life(row: dict) -> float | None:
    """The latest of the heartbeat's mtime and those of run.json and the event logs (the
    catalog's signature holds them), never before the run's start."""
    times = [float(row["heartbeat_mtime"])] if row.get("heartbeat_mtime") is not None else []
    for part in (row.get("signature") or "").split("|"):
        bits = part.rsplit(":", 2)
        if len(bits) == 3 and bits[2].isdigit():
            times.append(int(bits[2]) / 1e9)
    start = epoch(row.get("created"))
    if start is not None:
        times.append(start)
    return round(max(times), 3) if times else None


def run_end(row: dict, status: str) -> float | None:
    """Where the run's bar ends: None while running, its last sign of life when lost."""
    if status == "running":
        return None
    end = epoch(row.get("ended")) if status != "lost" else None
    return end if end is not None else last_sign_of_life(row)


def segments(sessions: list[dict], end: float | None) -> list[dict]:
    """Session k from its start to the next one's; the last to the run's end (None: now)."""
    out = []
    for i, s in enumerate(sessions):
        stop = sessions[i + 1]["start"] if i + 1 < len(sessions) else end
        out.append({"session": s["session"], "start": s["start"], "end": stop})
    return out


def version_at(created: float | None, start: float | None, stop: float | None) -> float | None:
    """Where a version's diamond sits: its creation time, kept on its run's bar (manifests
    keep whole seconds, so a version made in a run's first second reads as before it)."""
    if created is None:
        return stop if stop is not None else start
    if start is not None:
        created = max(created, start)
    if stop is not None:
        created = min(created, stop)
    return created


def fork_time(parent: dict, step: int | None, last_step: int | None, child_start: float | None,
              now: float) -> float | None:
    """Where a fork leaves its parent's bar: placed by step over the parent's span (step over
    its last step), never after the fork's own start; the fork's start when no step is known."""
    p_start = parent["start"]
    p_end = parent["end"] if parent["end"] is not None else now
    if p_start is None:
        return child_start
    if step is not None and last_step:
        when = p_start + (p_end - p_start) * min(1.0, max(0.0, step / last_step))
    else:
        when = p_end
    if child_start is not None:
        when = min(when, child_start)
    return round(max(p_start, when), 3)


def produced_versions(catalog, run_ids: set[str],
                      other_catalog: Callable[[str], object | None]) -> dict[str, list[dict]]:
    """Versions each run made, by run id: in this project (the versions' producer) and in
    others (lineage 'produced' edges of this project's runs), with type, time and state.
    """
    project = catalog.project
    wanted: dict[tuple[str, str, int], set[str]] = {}
    for run_id, a_project, name, number in run_reads.produced_refs(catalog):
        if run_id in run_ids:
            wanted.setdefault((a_project, name, number), set()).add(run_id)
    details: dict[tuple[str, str, int], dict] = {}
    by_project: dict[str, set[str]] = {}
    for a_project, name, _ in wanted:
        by_project.setdefault(a_project, set()).add(name)
    for a_project, names in by_project.items():
        other = catalog if a_project == project else other_catalog(a_project)
        if other is not None:
            details.update(run_reads.version_facts(other, names))
    out: dict[str, list[dict]] = {}
    for key in sorted(wanted):
        a_project, name, number = key
        found = details.get(key)
        item = {"project": a_project, "name": name, "version": number,
                "label": f"{a_project}/{name}:v{number}",
                "type": found["type"] if found else None,
                "created": epoch(found["created"]) if found else None,
                "state": ("unlinked" if found["unlinked"] else "linked") if found else "missing"}
        for run_id in wanted[key]:
            out.setdefault(run_id, []).append(dict(item))
    for items in out.values():
        items.sort(key=lambda v: (v["created"] is None, v["created"] or 0.0, v["label"]))
    return out


def timeline(catalog, *, query: str = "", now: float, sessions: SessionCache,
             other_catalog: Callable[[str], object | None] = lambda project: None,
             limit: int = LIMIT) -> dict:
    """The project's runs (those the query matches, hidden ones left out: run_reads) as the
    Timeline draws them.

    Returns:
        {'total', 'shown', 'limit', 'capped', 'now', 'live', 'runs': [...]}, runs sorted by
        start, each {'id', 'name', 'status', 'start', 'end', 'duration_s', 'sessions',
        'parent', 'versions'}; at most `limit` runs, the newest.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    fields = ("id", "run_id", "name", "status", "created", "ended", "heartbeat_mtime",
              "lost_after", "parent_run_id", "parent_step", "host", "group_name", "world_size",
              "signature")
    total = run_reads.count_runs(catalog, query, now=now)
    rows = run_reads.find_runs(catalog, query, now=now, limit=limit, fields=fields)
    rows.reverse()
    by_id = {r["run_id"]: r for r in rows}
    made = produced_versions(catalog, set(by_id), other_catalog)
    parents = [by_id[r["parent_run_id"]]["id"] for r in rows if r["parent_run_id"] in by_id]
    last_steps = run_reads.last_steps(catalog, sorted(set(parents))) if parents else {}
    out = []
    placed: dict[str, dict] = {}
    for row in rows:
        status = display_status(row["status"], row["heartbeat_mtime"], now, row["lost_after"])
        start = epoch(row["created"])
        end = run_end(row, status)
        stop = end if end is not None else (now if status == "running" else None)
        item = {"id": row["run_id"], "name": row["name"], "status": status,
                "start": start, "end": end,
                "duration_s": (round(stop - start, 3) if stop is not None and start is not None
                               else None),
                "group": row["group_name"], "host": row["host"], "world_size": row["world_size"],
                "sessions": segments(sessions.sessions(catalog.root, catalog.project, row, start),
                                     end),
                "parent": None, "versions": made.get(row["run_id"], [])}
        for version in item["versions"]:
            version["at"] = version_at(version["created"], start, stop)
        placed[row["run_id"]] = item
        out.append(item)
    for row in rows:
        parent_id = row["parent_run_id"]
        if not parent_id:
            continue
        item = placed[row["run_id"]]
        parent = placed.get(parent_id)
        link = {"id": parent_id, "step": row["parent_step"], "shown": parent is not None,
                "time": None}
        if parent is not None:
            parent_row = by_id[parent_id]
            link["time"] = fork_time(parent, row["parent_step"], last_steps.get(parent_row["id"]),
                                     item["start"], now)
        item["parent"] = link
    return {"total": total, "shown": len(out), "limit": limit, "capped": total > len(out),
            "now": round(now, 3), "live": any(r["status"] == "running" for r in out),
            "runs": out}
