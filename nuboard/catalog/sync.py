"""Sync the catalog from the files: incremental by what changed on disk, or from nothing.

An unchanged finished run costs two stats (its folder and its run.json: a rewrite of run.json,
a new session or new files change one of them). A running run, a run with ranks other
than 0 (whose logs may still grow after rank 0 finished) and a run folder that held a temp file
is compared by the sizes and mtimes of its logs; a temp file whose writer is gone is removed
then (clean_temps), and so is a media file that no record names (sync_media). A run folder
that is half written, whose run.json is not a regular file, not JSON, comes from a newer
format or holds fields of the wrong types (run_doc.check_run_doc), is reported and skipped,
never fatal; while its folder, run.json and logs stay as they were, a later sync through the
same Catalog reports it again without reading it again.

Rows are written in batches, each in one BEGIN IMMEDIATE transaction (on a server: holding the
project's advisory lock) that first removes whatever rows the runs have (another indexer may
have written them meanwhile), so any number of processes can sync at once and the catalog never
holds a run twice. On a server, a write that loses a race anyway (a serialization failure, a
deadlock, a row made meanwhile) is redone from the files, a few times, before anyone hears of it.
"""
from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import time
from array import array
from pathlib import Path
from typing import Callable, NamedTuple

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.exc import DatabaseError, OperationalError

from nuboard.eventlog.media_read import entries_of, media_keys, rank_media
from nuboard.eventlog.reader import RunReader
from nuboard.eventlog.source import rank_scalars
from nuboard.files import caps, layout
from nuboard.files.jsonfile import TEMP_PREFIX, clean_stray_temps
from nuboard.files.names import MAX_SCALAR_NAME
from nuboard.files.status import heartbeat_mtime, hostname, read_heartbeat, run_lost_after

from . import server
from .engine import is_corruption
from .project_catalog import Catalog
from .run_doc import read_checked_run
from .statements import driver_insert, insert_or_ignore, note_change
from .sync_artifacts import delete_run_links, run_links, sync_versions
from .sync_media import MEDIA_MARK, clean_orphan_media
from .tables import config, lineage, runs, scalars, tags
from .tables import media_keys as media_table

RUN_JSON = layout.RUN_JSON
BATCH = 500
PARQUET_FROM = 4 << 20           # a rank's logs this large are summarized from data.parquet
ARROW_FROM = 4096                # min/max over this many points are taken by pyarrow
_IN_CHUNK = 900                  # names per IN (...) list, under SQLite's variable limit
MAX_CONFIG_KEY = 1024           # bytes of a flattened config key the catalog indexes
RETRIES = 8                      # a server sync redone after a lost race, at most


class SyncReport:
    """What a sync did: counts, the runs (and artifact versions) it skipped with the reason,
    and a rebuild's reason."""

    def __init__(self) -> None:
        self.added = self.updated = self.removed = self.unchanged = 0
        self.skipped: list[tuple[str, str]] = []              # (run folder name, why)
        self.skipped_versions: list[tuple[str, str]] = []     # ('artifacts/<name>/v<N>', why)
        self.rebuilt_because: str | None = None
        self.versions = {"added": 0, "updated": 0, "removed": 0}

    def as_dict(self) -> dict:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "skipped": [list(s) for s in self.skipped],
                "skipped_versions": [list(s) for s in self.skipped_versions],
                "rebuilt_because": self.rebuilt_because, "versions": dict(self.versions)}

    def __repr__(self) -> str:
        return f"SyncReport({self.as_dict()})"


class _Indexed(NamedTuple):
    run_id: str
    row: dict
    tags: list
    config: list
    scalars: list
    links: list
    media: list


# -- reading one run --------------------------------------------------------------------------

def flatten_config(doc, prefix: str = "") -> list[dict]:
    """Nested config to rows {key, type, value_num, value_text}, keys joined with '.'.

    A key met twice ({'a.b': 1, 'a': {'b': 2}}) keeps its first value. An empty dict
    below the top is kept as a value ('{}').
    """
    out: list[dict] = []
    seen: set[str] = set()
    stack = [(prefix, doc)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict) and (value or (not key and not prefix)):
            items = [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
            stack.extend(reversed(items))
            continue
        if key in seen:
            continue
        seen.add(key)
        out.append(_config_value(key, value))
    return out


def _config_value(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value_num": float(value),
                "value_text": json.dumps(value)}
    if isinstance(value, (int, float)):
        kind = "int" if isinstance(value, int) else "float"
        try:
            num = float(value)
        except OverflowError:                    # an int beyond a double
            num = None
        num = num if num is not None and math.isfinite(num) else None
        return {"key": key, "type": kind, "value_num": num, "value_text": json.dumps(value)}
    if isinstance(value, str):
        return {"key": key, "type": "str", "value_num": None, "value_text": value}
    if value is None:
        return {"key": key, "type": "null", "value_num": None, "value_text": "null"}
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = None
    return {"key": key, "type": "list" if isinstance(value, list) else "dict",
            "value_num": None, "value_text": text}


def config_value(kind: str, num: float | None, text: str | None):
    """A config value as logged, from the (type, value_num, value_text) _config_value wrote:
    the one decoder of a config cell (the Runs table, the run page and the run table's records
    use it). An int is read from its text, exactly (value_num is its nearest double: 2**53 + 1
    would read 2**53); a float from value_num, or from its text when not finite; a text that
    is not JSON (a catalog written by hand) as it is."""
    if kind == "str":
        return text
    if kind == "float" and num is not None:
        return num
    if kind == "null" or text is None:
        return None
    try:
        return json.loads(text)           # int, bool, list, dict, and NaN or inf
    except ValueError:
        return text


def _min_max(values: array) -> tuple[float | None, float | None]:
    """The smallest and largest value, NaN ignored (None, None when all are NaN)."""
    if len(values) >= ARROW_FROM:
        import pyarrow as pa
        import pyarrow.compute as pc
        arr = pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])
        result = pc.min_max(arr)
        return _num(result["min"].as_py()), _num(result["max"].as_py())
    total = sum(values)
    if total == total:                           # no NaN (nor inf and -inf together)
        return min(values), max(values)
    good = [v for v in values if v == v]
    return (min(good), max(good)) if good else (None, None)


def _num(v: float | None) -> float | None:
    return None if v is None or v != v else v


def _read_rank(run_dir: Path, rank: int, logs: list) -> tuple[dict, list]:
    """One rank's scalars and media entries: small logs read once for both, large ones'
    scalars from a current data.parquet (which holds no media: the logs give those)."""
    size = 0
    for _, _, path in logs:
        try:
            size += path.stat().st_size
        except OSError:
            pass
    if size >= PARQUET_FROM:
        return rank_scalars(run_dir, rank, parquet=True), rank_media(run_dir, rank)
    reader = RunReader(run_dir, rank)
    reader.refresh()
    return reader.scalars(), entries_of(reader)


def summarize(run_dir: Path) -> tuple[list[dict], list[dict]]:
    """Per scalar and rank: last value, min, max (NaN ignored), count, last step; and per media
    key and rank: kind, count, first and last step (media_read.media_keys).

    Small logs are read directly (cheaper than opening data.parquet); large ones' scalars from
    a data.parquet that is current, else from the logs.
    """
    by_rank: dict[int, list] = {}
    for rank, session, path in layout.list_logs(run_dir):
        by_rank.setdefault(rank, []).append((rank, session, path))
    rows, media = [], []
    for rank in sorted(by_rank):
        found, entries = _read_rank(run_dir, rank, by_rank[rank])
        for name, s in found.items():
            if not len(s.values):
                continue
            lo, hi = _min_max(s.values)
            rows.append({"rank": rank, "name": name, "last": _num(s.values[-1]), "min": lo,
                         "max": hi, "count": len(s.values), "last_step": s.steps[-1]})
        for key, info in media_keys(entries).items():
            media.append({"rank": rank, "key": key, **info})
    return rows, media


def _stat_part(name: str, st: os.stat_result) -> str:
    return f"{name}:{st.st_size}:{st.st_mtime_ns}"


TEMPS_MARK = "~temp"              # the signature's last part while a temp file is in the folder
STALE_TEMP = 600.0                # seconds after which any dead writer's temp file is removed


def signature(folder: Path, names: list[str] | None = None) -> str:
    """What changes when the run does: run.json first, then each log (name, size, mtime),
    and TEMPS_MARK last while a temp file is there (so the next sync looks again).

    names: the folder's entries, when the caller has listed it.
    """
    parts = []
    names = sorted(os.listdir(folder) if names is None else names)
    for name in [layout.RUN_JSON] + [n for n in names if n != layout.RUN_JSON]:
        if name == layout.RUN_JSON or name.startswith("events.") or name == layout.PARQUET:
            try:
                st = os.stat(folder / name)
            except OSError:
                continue
            parts.append(_stat_part(name, st))
    if any(n.startswith(TEMP_PREFIX) for n in names):
        parts.append(TEMPS_MARK)
    return "|".join(parts)


def clean_temps(folder: Path, mtime_ns: int) -> tuple[list[str], int]:
    """Remove the temp files a killed writer left in a run folder (a kill inside finish()
    leaves up to the size of the run's data in `.tmp-data.parquet.<pid>.<hex>`); return the
    folder's entries left and its mtime after.

    The run's own process on this host (its heartbeat's pid) is known dead at once; a temp
    file of any other process (another host's, a viewer's edit) goes once it is STALE_TEMP
    seconds old (jsonfile.clean_stray_temps). Media files that no record names are removed
    after it, on the same terms (sync_media.clean_orphan_media).

    mtime_ns: the folder's mtime, taken before this lists it; after a removal it is taken
    again, before the folder is listed again, so a change made meanwhile is seen next time.
    """
    names = os.listdir(folder)
    if any(n.startswith(TEMP_PREFIX) for n in names):
        beat = read_heartbeat(folder) or {}
        writer = beat.get("pid") if beat.get("host") == hostname() else None
        if clean_stray_temps(folder, names, writer=writer if isinstance(writer, int) else None,
                             stale_after=STALE_TEMP):
            mtime_ns = os.stat(folder).st_mtime_ns
            names = os.listdir(folder)
    return names, mtime_ns


def _duration(doc: dict) -> float | None:
    import datetime as dt
    try:
        start = dt.datetime.fromisoformat(doc["start_time"].replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(doc["end_time"].replace("Z", "+00:00"))
        return (end - start).total_seconds()
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


class ReadRun(NamedTuple):
    """run.json as indexed: the document cut to the API's limits and the notes of what was cut
    (cap_run_doc); or no document and the reason the run is skipped."""
    doc: dict | None
    why: str | None
    cut: list[str]


def read_run(folder: Path) -> ReadRun:
    """run.json of a folder, capped, or the reason it is skipped: run_doc.read_checked_run, the
    reader the run page uses too (a regular file of at most 64 MB, nested at most 100 levels,
    JSON without a lone surrogate escape, of a known format, with fields of the right types)."""
    return ReadRun(*read_checked_run(folder))


def _text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        -(1 << 63) <= value < (1 << 63) else None


def run_row(doc: dict, folder: Path, project_id: int, mtime_ns: int, sig: str,
            cut: list[str] = ()) -> dict:
    """The runs row of a run document (capped: cap_run_doc), with the notes of what was cut."""
    parent = doc.get("parent") if isinstance(doc.get("parent"), dict) else {}
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    git = env.get("git") if isinstance(env.get("git"), dict) else {}
    heartbeat = heartbeat_mtime(folder)
    return {
        "project_id": project_id, "run_id": folder.name, "name": _text(doc.get("name")) or "run",
        "group_name": _text(doc.get("group")), "notes": _text(doc.get("notes")),
        "status": _text(doc.get("status")) or "unknown", "heartbeat_mtime": heartbeat,
        "lost_after": run_lost_after(folder),
        "host": _text(doc.get("host")), "python": _text(doc.get("python")),
        "platform": _text(doc.get("platform")), "created": _text(doc.get("start_time")) or "",
        "ended": _text(doc.get("end_time")), "duration_s": _duration(doc),
        "world_size": _int(doc.get("world_size")), "parent_run_id": _text(parent.get("run_id")),
        "parent_step": _int(parent.get("step")), "git_commit": _text(git.get("commit")),
        "cut": "; ".join(caps.cap_notes(cut)) or None, "folder_mtime_ns": mtime_ns, "signature": sig,
    }


def index_run(folder: Path, project_id: int, mtime_ns: int, sig: str
              ) -> tuple[_Indexed | None, str | None]:
    """Every row of one run folder, or the reason it is skipped."""
    doc, why, cut = read_run(folder)
    if doc is None:
        return None, why
    try:
        summaries, media = summarize(folder)
    except Exception as exc:      # a log we cannot read is reported, not fatal
        return None, f"its logs cannot be read ({exc})"
    long = sum(1 for s in summaries if len(s["name"]) > MAX_SCALAR_NAME)
    if long:           # only a hand-made log holds one; a b-tree entry on PostgreSQL could not
        summaries = [s for s in summaries if len(s["name"]) <= MAX_SCALAR_NAME]
        cut = [*cut, f"{long} scalar{'s' * (long != 1)} with a name over {MAX_SCALAR_NAME} "
                     "characters not indexed"]
    long = sum(1 for m in media if len(m["key"]) > MAX_SCALAR_NAME)
    if long:           # media keys follow the scalar naming rule
        media = [m for m in media if len(m["key"]) <= MAX_SCALAR_NAME]
        cut = [*cut, f"{long} media key{'s' * (long != 1)} over {MAX_SCALAR_NAME} "
                     "characters not indexed"]
    config_doc = doc.get("config")
    config_rows = flatten_config(config_doc if isinstance(config_doc, dict) else {})
    long = sum(1 for c in config_rows if len(c["key"]) > MAX_CONFIG_KEY // 4
               and len(c["key"].encode("utf-8", "surrogatepass")) > MAX_CONFIG_KEY)
    if long:           # past what an index entry on PostgreSQL holds beside the value
        config_rows = [c for c in config_rows if len(c["key"]) <= MAX_CONFIG_KEY // 4
                       or len(c["key"].encode("utf-8", "surrogatepass")) <= MAX_CONFIG_KEY]
        cut = [*cut, f"{long} config key{'s' * (long != 1)} longer than {MAX_CONFIG_KEY} bytes "
                     "not indexed"]
    tags = doc.get("tags") or []               # capped: distinct strings (cap_run_doc)
    return _Indexed(folder.name, run_row(doc, folder, project_id, mtime_ns, sig, cut), tags,
                    config_rows, summaries, run_links(doc), media), None


# -- the sync ---------------------------------------------------------------------------------

def sync(catalog: Catalog, *, full: bool = False,
         progress: Callable[[int, int], None] | None = None) -> SyncReport:
    """Bring the catalog up to date with the run folders of its project.

    A catalog deleted or replaced since it was opened is reopened first; one found damaged
    while in use is set aside and rebuilt from the files.

    Args:
        full: read every run again, as if the catalog were empty (nuboard reindex).
        progress: called with (done, total) as runs are looked at.
    """
    catalog.reopen_if_gone()
    if catalog.on_server:
        return _sync_on_server(catalog, full, progress)
    try:
        return _sync(catalog, full, progress)
    except (DatabaseError, sqlite3.DatabaseError) as exc:
        if not is_corruption(exc):
            raise
        reason = str(getattr(exc, "orig", None) or exc)
    catalog.rebuild(reason)
    report = _sync(catalog, True, progress)
    report.rebuilt_because = reason
    return report


def _sync_on_server(catalog: Catalog, full: bool, progress) -> SyncReport:
    """The sync on a server: redone when it loses a race with another host's (the files are the
    truth, so the redo writes the same rows), and the schema made again when it was dropped."""
    rebuilt = None
    for attempt in range(RETRIES + 1):
        try:
            report = _sync(catalog, full or rebuilt is not None, progress)
            report.rebuilt_because = rebuilt
            return report
        except DatabaseError as exc:
            state = server.sqlstate(exc)
            if state == server.NO_RIGHTS:
                raise server.refused(exc, catalog.url, catalog.schema) from None
            if state in server.GONE_STATES and rebuilt is None:
                rebuilt = f"its schema or a table was gone ({state})"
                catalog.rebuild(rebuilt)
                continue
            if isinstance(exc, OperationalError) and state not in server.RETRY_STATES:
                # the server stopped or the connection broke: one line, not the SQL it ran
                raise server.unreachable(exc, catalog.url) from None
            if state not in server.RETRY_STATES or attempt == RETRIES:
                raise
        time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")


class _Known(NamedTuple):
    status: str
    folder_mtime_ns: int
    signature: str
    heartbeat_mtime: float | None


def _known(catalog: Catalog) -> dict[str, _Known]:
    """What the catalog holds of each run, read as the driver's tuples (10,000 runs through
    SQLAlchemy's row objects took 30 ms more of a sync that finds nothing changed)."""
    with catalog.reader.connect() as conn:
        result = conn.execute(
            select(runs.c.run_id, runs.c.status, runs.c.folder_mtime_ns, runs.c.signature,
                   runs.c.heartbeat_mtime).where(runs.c.project_id == catalog.project_id))
        try:
            rows = result.cursor.fetchall() if result.cursor is not None else []
        finally:
            result.close()
        return {r[0]: _Known(r[1], r[2], r[3], r[4]) for r in rows}


def _sync(catalog: Catalog, full: bool, progress) -> SyncReport:
    report = SyncReport()
    runs_dir = layout.runs_dir(catalog.root, catalog.project)
    try:
        entries = [e for e in os.scandir(runs_dir) if not e.name.startswith(".") and e.is_dir()]
    except FileNotFoundError:
        entries = []
    known = _known(catalog)
    seen: set[str] = set()
    drop: list[str] = []                       # indexed before, skipped now
    pending: list[_Indexed] = []
    beats: list[dict] = []
    total = len(entries)
    for done, entry in enumerate(entries, 1):
        name = entry.name
        try:
            mtime_ns = entry.stat().st_mtime_ns
        except OSError:
            continue                           # gone since the listing: removed below
        seen.add(name)
        old = None if full else known.get(name)
        if old is not None and old.folder_mtime_ns == mtime_ns and old.status != "running" \
                and not _other_ranks(old.signature) \
                and not old.signature.endswith((TEMPS_MARK, MEDIA_MARK)):
            try:
                head = _stat_part(layout.RUN_JSON, os.stat(os.path.join(entry.path, RUN_JSON)))
            except OSError:
                head = None
            if head is not None and old.signature.split("|", 1)[0] == head:
                report.unchanged += 1
                _progress(progress, done, total)
                continue
        folder = Path(entry.path)
        try:
            names, mtime_ns = clean_temps(folder, mtime_ns)
            sig = signature(folder, names)
        except OSError:
            seen.discard(name)
            continue
        if (old is None or old.signature != sig) and clean_orphan_media(
                catalog, folder, names, sig, stale_after=STALE_TEMP, full=full):
            sig += "|" + MEDIA_MARK      # looked at by the next sync too (sync_media)
        if old is not None and old.signature == sig and old.folder_mtime_ns == mtime_ns:
            report.unchanged += 1
            _note_heartbeat(folder, name, old, beats)
        elif not full and catalog.skips.get(name, (None,))[0] == (sig, mtime_ns):
            report.skipped.append((name, catalog.skips[name][1]))   # unchanged since skipped
        else:
            indexed, why = index_run(folder, catalog.project_id, mtime_ns, sig)
            catalog.skips.pop(name, None)
            if indexed is None:
                report.skipped.append((name, why))
                catalog.skips[name] = ((sig, mtime_ns), why)
                if name in known:
                    drop.append(name)
            else:
                pending.append(indexed)
                if name in known:
                    report.updated += 1
                else:
                    report.added += 1
        if len(pending) >= BATCH:
            _write_or_skip(catalog, pending, report, known, drop)
            pending = []
        _progress(progress, done, total)
    _write_or_skip(catalog, pending, report, known, drop)
    for name in [n for n in catalog.skips if n not in seen]:
        del catalog.skips[name]
    for name in [n for n in catalog.media_checked if n not in seen]:
        del catalog.media_checked[name]
    gone = [n for n in known if n not in seen] + drop
    if gone or beats:
        with catalog.writer.begin() as conn:
            if gone:
                note_change(conn, catalog.project_id)
            _delete_runs(conn, catalog.project_id, gone)
            delete_run_links(conn, catalog.project, gone)
            if beats:
                conn.execute(update(runs).where(runs.c.project_id == catalog.project_id,
                                                runs.c.run_id == bindparam("b_run_id"))
                             .values(heartbeat_mtime=bindparam("b_mtime")), beats)
    report.removed = len(gone) - len(drop)
    versions = sync_versions(catalog, full)
    report.versions = versions.counts()
    report.skipped_versions.extend(versions.skipped)          # damaged versions, with the reason
    if not catalog.on_server:
        bound_wal(catalog)
    return report


WAL_LIMIT = 8 * 1024 * 1024


def bound_wal(catalog: Catalog, limit: int | None = None) -> None:
    """Keep the -wal file bounded: once past `limit`, checkpoint and truncate it.

    SQLite's automatic checkpoint cannot go past a long-running reader's snapshot, so a
    viewer holding a long read lets the WAL grow; the next sync after that read ends brings
    it back. A checkpoint blocked by a reader is simply tried again next time.
    """
    wal = Path(str(catalog.path) + "-wal")
    limit = WAL_LIMIT if limit is None else limit
    try:
        if wal.stat().st_size <= limit:
            return
    except OSError:
        return
    raw = catalog.writer.raw_connection()      # outside a transaction, as a checkpoint must be
    try:
        raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError:
        pass                                    # busy: next time
    finally:
        raw.close()


def _other_ranks(sig: str) -> bool:
    """Whether a signature names logs of ranks other than 0.

    Only rank 0 rewrites run.json, so the last points of another rank, flushed after rank 0
    finished, change neither the folder nor run.json: such runs are always compared in full.
    """
    return sig.count("events.r") != sig.count("events.r0.")


def _progress(progress, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _note_heartbeat(folder: Path, name: str, old: _Known, beats: list) -> None:
    if old.status != "running":
        return
    mtime = heartbeat_mtime(folder)
    if mtime is not None and mtime != old.heartbeat_mtime:
        beats.append({"b_run_id": name, "b_mtime": mtime})


def _delete_runs(conn, project_id: int, names: list[str]) -> None:
    """Delete the runs of these names (their tags, config, scalars and media keys go by
    cascade)."""
    for i in range(0, len(names), _IN_CHUNK):
        conn.execute(delete(runs).where(runs.c.project_id == project_id,
                                        runs.c.run_id.in_(names[i:i + _IN_CHUNK])))


_RUN_COLUMNS = [c.name for c in runs.columns]
_TAG_COLUMNS = [c.name for c in tags.columns]
_CONFIG_COLUMNS = [c.name for c in config.columns]
_SCALAR_COLUMNS = [c.name for c in scalars.columns]
_MEDIA_COLUMNS = [c.name for c in media_table.columns]


def _write_or_skip(catalog: Catalog, pending: list[_Indexed], report: SyncReport,
                   known: dict, drop: list[str]) -> None:
    """Write a batch; when the server refuses a row of it (a value past what PostgreSQL can
    index, say, from a run.json written by hand), write its runs one by one and skip, with
    the server's reason, those it refuses, so one hostile folder never stops a project's sync."""
    try:
        _write(catalog, pending)
        return
    except DatabaseError as exc:
        if not catalog.on_server or server.sqlstate(exc) not in server.ROW_REFUSED_STATES:
            raise
    for p in pending:
        try:
            _write(catalog, [p])
        except DatabaseError as exc:
            if server.sqlstate(exc) not in server.ROW_REFUSED_STATES:
                raise
            why = f"the catalog server refused its rows ({server.driver_text(exc, first_line=True, limit=200)})"
            report.skipped.append((p.run_id, why))
            catalog.skips[p.run_id] = ((p.row["signature"], p.row["folder_mtime_ns"]), why)
            if p.run_id in known:
                report.updated -= 1
                drop.append(p.run_id)
            else:
                report.added -= 1


def _write(catalog: Catalog, pending: list[_Indexed]) -> None:
    """Replace the rows of these runs, in one transaction.

    Rows go in by executemany of plain tuples: a full rebuild inserts hundreds of
    thousands, and building SQLAlchemy parameters for each cost more than SQLite did.
    """
    if not pending:
        return
    with catalog.writer.begin() as conn:
        note_change(conn, catalog.project_id)
        _delete_runs(conn, catalog.project_id, [p.run_id for p in pending])
        delete_run_links(conn, catalog.project, [p.run_id for p in pending])
        next_id = (conn.execute(select(func.max(runs.c.id))).scalar() or 0) + 1
        run_rows, tag_rows, config_rows, scalar_rows, media_rows = [], [], [], [], []
        for pk, p in enumerate(pending, next_id):
            row = dict(p.row, id=pk)
            run_rows.append(tuple(row.get(c) for c in _RUN_COLUMNS))
            for t in p.tags:
                tag = {"run": pk, "tag": t}
                tag_rows.append(tuple(tag.get(k) for k in _TAG_COLUMNS))
            for seq, c in enumerate(p.config):
                c["run"], c["seq"] = pk, seq
                config_rows.append(tuple(c.get(k) for k in _CONFIG_COLUMNS))
            for seq, s in enumerate(p.scalars):
                s["run"], s["seq"] = pk, seq
                scalar_rows.append(tuple(s.get(k) for k in _SCALAR_COLUMNS))
            for seq, m in enumerate(p.media):
                m["run"], m["seq"] = pk, seq
                media_rows.append(tuple(m.get(k) for k in _MEDIA_COLUMNS))
        for table, rows in ((runs, run_rows), (tags, tag_rows), (config, config_rows),
                            (scalars, scalar_rows), (media_table, media_rows)):
            if rows:
                conn.exec_driver_sql(driver_insert(conn, table), rows)
        links = [dict(link, run_project=catalog.project, run_id=p.run_id)
                 for p in pending for link in p.links]
        if links:
            conn.execute(insert_or_ignore(conn, lineage), links)
