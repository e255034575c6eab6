"""Sync the catalog from the files: incremental by what changed on disk, or from nothing.

An unchanged finished run costs one stat of its folder (a rewrite of run.json, a new session
or new files change the folder's mtime). A running run is also judged by its logs' sizes.
A run folder that is half written, whose run.json is not JSON or comes from a newer format,
is reported and skipped, never fatal.
"""
from __future__ import annotations

import json
import math
import os
from array import array
from pathlib import Path
from typing import Callable

from sqlalchemy import delete, select, update

from .. import layout
from ..scalars import RunReader, read_scalars
from .store import Catalog
from .tables import config, runs, scalars, tags

RUN_FORMAT = 1
BATCH = 500


class SyncReport:
    """What a sync did: counts, and the runs it skipped with the reason."""

    def __init__(self) -> None:
        self.added = self.updated = self.removed = self.unchanged = 0
        self.skipped: list[tuple[str, str]] = []

    def as_dict(self) -> dict:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "skipped": [list(s) for s in self.skipped]}

    def __repr__(self) -> str:
        return f"SyncReport({self.as_dict()})"


def flatten_config(doc, prefix: str = "") -> list[dict]:
    """Nested config to rows {key, type, value_num, value_text}, keys joined with '.'."""
    out: list[dict] = []
    if isinstance(doc, dict) and (doc or not prefix):
        for key, value in doc.items():
            out.extend(flatten_config(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(doc, bool):
        out.append({"key": prefix, "type": "bool", "value_num": float(doc), "value_text": json.dumps(doc)})
    elif isinstance(doc, (int, float)):
        kind = "int" if isinstance(doc, int) else "float"
        num = float(doc) if math.isfinite(float(doc)) else None
        out.append({"key": prefix, "type": kind, "value_num": num, "value_text": json.dumps(doc)})
    elif isinstance(doc, str):
        out.append({"key": prefix, "type": "str", "value_num": None, "value_text": doc})
    elif doc is None:
        out.append({"key": prefix, "type": "null", "value_num": None, "value_text": "null"})
    else:
        out.append({"key": prefix, "type": "list" if isinstance(doc, list) else "dict",
                    "value_num": None, "value_text": json.dumps(doc, ensure_ascii=False)})
    return out


def _min_max(values: array) -> tuple[float | None, float | None]:
    finite = values if len(values) < 64 else None
    if finite is not None:
        good = [v for v in values if v == v]
        return (min(good), max(good)) if good else (None, None)
    import pyarrow as pa
    import pyarrow.compute as pc
    arr = pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])
    result = pc.min_max(arr)
    return result["min"].as_py(), result["max"].as_py()


def _num(v: float | None) -> float | None:
    return None if v is None or v != v else v


def summarize(run_dir: Path) -> list[dict]:
    """Per scalar and rank: last value, min, max, count, last step."""
    rows = []
    for rank in sorted({r for r, _, _ in layout.list_logs(run_dir)}):
        if rank == 0:
            found = read_scalars(run_dir, rank=0)
        else:
            reader = RunReader(run_dir, rank)
            reader.refresh()
            found = reader.scalars()
        for name, s in found.items():
            if not len(s.values):
                continue
            lo, hi = _min_max(s.values)
            rows.append({"rank": rank, "name": name, "last": _num(s.values[-1]), "min": lo, "max": hi,
                         "count": len(s.values), "last_step": s.steps[-1]})
    return rows


def signature(folder: Path) -> str:
    """What changes when the run does: run.json and every log (name, size, mtime)."""
    parts = []
    for name in sorted(os.listdir(folder)):
        if name == layout.RUN_JSON or name.startswith("events.") or name == layout.PARQUET:
            try:
                st = os.stat(folder / name)
            except OSError:
                continue
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def _duration(doc: dict) -> float | None:
    import datetime as dt
    try:
        start = dt.datetime.fromisoformat(doc["start_time"].replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(doc["end_time"].replace("Z", "+00:00"))
        return (end - start).total_seconds()
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def read_run(folder: Path) -> tuple[dict | None, str | None]:
    """run.json of a folder, or the reason it is skipped."""
    path = folder / layout.RUN_JSON
    if not path.exists():
        return None, "no run.json (a half-written run folder)"
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"run.json is not readable JSON ({exc})"
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
        return None, "run.json is not a run document"
    fmt = doc.get("format")
    if not isinstance(fmt, int) or fmt > RUN_FORMAT:
        return None, f"run.json has format {fmt!r}; this NuBoard reads up to {RUN_FORMAT}: upgrade nuboard"
    return doc, None


def run_row(doc: dict, folder: Path, project_id: int, mtime_ns: int, sig: str) -> dict:
    parent = doc.get("parent") or {}
    heartbeat = None
    try:
        heartbeat = os.stat(folder / layout.HEARTBEAT).st_mtime
    except OSError:
        pass
    return {
        "project_id": project_id, "run_id": folder.name, "name": str(doc.get("name") or "run"),
        "group_name": doc.get("group"), "notes": doc.get("notes"),
        "status": str(doc.get("status") or "unknown"), "heartbeat_mtime": heartbeat,
        "host": doc.get("host"), "python": doc.get("python"), "platform": doc.get("platform"),
        "created": str(doc.get("start_time") or ""), "ended": doc.get("end_time"),
        "duration_s": _duration(doc), "world_size": doc.get("world_size"),
        "parent_run_id": parent.get("run_id") if isinstance(parent, dict) else None,
        "parent_step": parent.get("step") if isinstance(parent, dict) else None,
        "git_commit": ((doc.get("env") or {}).get("git") or {}).get("commit")
        if isinstance(doc.get("env"), dict) else None,
        "folder_mtime_ns": mtime_ns, "signature": sig,
    }


def sync(catalog: Catalog, *, full: bool = False,
         progress: Callable[[int, int], None] | None = None) -> SyncReport:
    """Bring the catalog up to date with the run folders of its project.

    Args:
        full: forget what the catalog holds and index every run again (nuboard reindex).
        progress: called with (done, total) as runs are looked at.
    """
    report = SyncReport()
    runs_dir = layout.runs_dir(catalog.root, catalog.project)
    try:
        entries = [e for e in os.scandir(runs_dir) if not e.name.startswith(".") and e.is_dir()]
    except FileNotFoundError:
        entries = []
    with catalog.reader.connect() as conn:
        known = {r.run_id: r for r in conn.execute(
            select(runs.c.id, runs.c.run_id, runs.c.status, runs.c.folder_mtime_ns, runs.c.signature,
                   runs.c.heartbeat_mtime).where(runs.c.project_id == catalog.project_id))}
    if full:
        with catalog.writer.begin() as conn:
            conn.execute(delete(runs).where(runs.c.project_id == catalog.project_id))
        known = {}
    seen = set()
    pending: list[tuple[str, dict, list, list, list]] = []
    beats: list[tuple[int, float]] = []
    total = len(entries)
    for done, entry in enumerate(entries, 1):
        name = entry.name
        seen.add(name)
        try:
            mtime_ns = entry.stat().st_mtime_ns
        except OSError:
            continue
        old = known.get(name)
        if old is not None and old.folder_mtime_ns == mtime_ns and old.status != "running":
            report.unchanged += 1
        else:
            folder = Path(entry.path)
            sig = signature(folder)
            if old is not None and old.signature == sig and old.folder_mtime_ns == mtime_ns:
                report.unchanged += 1
                _note_heartbeat(folder, old, beats)
            else:
                doc, why = read_run(folder)
                if doc is None:
                    report.skipped.append((name, why))
                else:
                    try:
                        summaries = summarize(folder)
                    except Exception as exc:      # a log we cannot read is reported, not fatal
                        report.skipped.append((name, f"its logs cannot be read ({exc})"))
                        continue
                    row = run_row(doc, folder, catalog.project_id, mtime_ns, sig)
                    tag_rows = [{"tag": t} for t in doc.get("tags") or [] if isinstance(t, str)]
                    pending.append((name, row, tag_rows, flatten_config(doc.get("config") or {}),
                                    summaries))
                    if old is None:
                        report.added += 1
                    else:
                        report.updated += 1
        if len(pending) >= BATCH:
            _write(catalog, pending, known)
            pending = []
        if progress is not None:
            progress(done, total)
    _write(catalog, pending, known)
    gone = [r.id for n, r in known.items() if n not in seen]
    with catalog.writer.begin() as conn:
        if gone:
            conn.execute(delete(runs).where(runs.c.id.in_(gone)))
        for pk, mtime in beats:
            conn.execute(update(runs).where(runs.c.id == pk).values(heartbeat_mtime=mtime))
    report.removed = len(gone)
    return report


def _note_heartbeat(folder: Path, old, beats: list) -> None:
    if old.status != "running":
        return
    try:
        mtime = os.stat(folder / layout.HEARTBEAT).st_mtime
    except OSError:
        return
    if mtime != old.heartbeat_mtime:
        beats.append((old.id, mtime))


def _write(catalog: Catalog, pending: list, known: dict) -> None:
    if not pending:
        return
    with catalog.writer.begin() as conn:
        stale = [known[name].id for name, *_ in pending if name in known]
        if stale:
            conn.execute(delete(runs).where(runs.c.id.in_(stale)))
        for _name, row, tag_rows, config_rows, summary_rows in pending:
            pk = conn.execute(runs.insert().values(**row)).inserted_primary_key[0]
            if tag_rows:
                conn.execute(tags.insert(), [dict(t, run=pk) for t in tag_rows])
            if config_rows:
                conn.execute(config.insert(), [dict(c, run=pk) for c in config_rows])
            if summary_rows:
                conn.execute(scalars.insert(), [dict(s, run=pk) for s in summary_rows])
