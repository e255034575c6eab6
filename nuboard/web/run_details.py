"""What the run details page shows, read from the run's folder (the files are the truth)."""
from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from nuboard.catalog.run_doc import NO_RUN_JSON, read_checked_run
from nuboard.catalog.sync import config_value, flatten_config
from nuboard.files import layout
from nuboard.files.records import format_duration, parse_time, run_duration
from nuboard.files.status import HeartbeatWatch, heartbeat_mtime, run_status

from .console_text import render_console
from .containment import open_file_inside

TEXT_LIMIT = 256 * 1024
TAIL_BYTES = 256 * 1024     # of files/output.log searched for a crash's traceback
ERROR_CHARS = 2000          # of an exception's message shown
TRACEBACK = "Traceback (most recent call last):"
CONFIG_ROWS = 5000           # a config of a million keys still opens at once
SUMMARY_ROWS = 5000          # of run.json's summary (nuboard.wandb's run.summary)
ALERTS_SHOWN = 100           # the newest of run.json's alerts (nuboard.wandb's alert)
ALERT_CHARS = 2000           # of an alert's title or text shown
SHOWN_CHARS = 4096           # of a summary's text value shown


class RunMissing(LookupError):
    """The run's folder or its run.json is not there."""


class RunUnreadable(ValueError):
    """The run's run.json is there but cannot be shown (not JSON, wrong types, too deep)."""


def read_capped(folder: Path, sub: str, limit: int = TEXT_LIMIT) -> tuple[str | None, bool]:
    """The first `limit` bytes of a text file inside the run folder (None when absent or when
    the path leads outside it) and whether it was cut."""
    fh = open_file_inside(folder, sub)
    if fh is None:
        return None, False
    try:
        with fh:
            data = fh.read(limit + 1)
    except OSError:
        return None, False
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def artifact_state(root: Path, ref: dict) -> str:
    """'linked', 'unlinked' or 'missing' for a {project, name, version} of run.json."""
    try:
        base = layout.project_dir(root, ref["project"]) / "artifacts"
        folder = f"{ref['name']}/v{int(ref['version'])}"
    except (KeyError, TypeError, ValueError):
        return "missing"
    if (base / folder).is_dir():
        return "linked"
    if (base / ".unlinked" / folder).is_dir():
        return "unlinked"
    return "missing"


def recorded_error(doc: dict) -> dict | None:
    """run.json's `error` of a crashed run ({'type', 'message'}), when it is well formed."""
    error = doc.get("error")
    if (isinstance(error, dict) and isinstance(error.get("type"), str)
            and isinstance(error.get("message"), str)):
        return {"type": error["type"][:300], "message": error["message"][:ERROR_CHARS]}
    return None


def console_error(folder: Path) -> dict | None:
    """The exception line of the last traceback in files/output.log (its last TAIL_BYTES):
    what a run that crashed before run.json recorded `error` shows instead."""
    fh = open_file_inside(folder, f"{layout.FILES}/output.log")
    if fh is None:
        return None
    try:
        with fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - TAIL_BYTES))
            text = fh.read(TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = render_console(text)
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if not starts:
        return None
    for line in lines[starts[-1] + 1:]:    # frames and their code are indented; the exception
        if line.strip() and not line[0].isspace():   # line is the first one that is not
            kind, sep, message = line.partition(": ")
            if not sep and line.endswith(":"):
                kind = line[:-1]
            return {"type": kind.strip()[:300], "message": message.strip()[:ERROR_CHARS]}
    return None


def crash_line(folder: Path, doc: dict, status: str) -> dict | None:
    """A crashed run's exception: {'type', 'message', 'line' ('ValueError: lr must be
    positive'), 'source' ('run.json' or 'console')}; None for any other run."""
    if status != "crashed":
        return None
    error, source = recorded_error(doc), "run.json"
    if error is None:
        error, source = console_error(folder), "console"
    if error is None:
        return None
    line = f"{error['type']}: {error['message']}" if error["message"] else error["type"]
    return {**error, "line": line, "source": source}


def last_seen(folder: Path, status: str, now: float) -> dict | None:
    """A lost run's last sign of life (its heartbeat file's mtime, else run.json's):
    {'time' (ISO, UTC), 'ago_s'}; None for any other run."""
    seen = heartbeat_mtime(folder) if status == "lost" else None
    if seen is None:
        return None
    iso = dt.datetime.fromtimestamp(seen, dt.timezone.utc).isoformat(timespec="milliseconds")
    return {"time": iso.replace("+00:00", "Z"), "ago_s": max(0.0, now - seen),
            "ago": format_duration(max(0.0, now - seen))}


def _unreadable(run_id: str, why: str) -> str:
    return (f"Run {run_id!r} cannot be shown: {why[:300]}. Its files are still under Files; "
            "fix or remove its run.json ('nuboard ls' lists it as skipped).")


SOURCE_TOOLS = {"tensorboard": "TensorBoard", "mlflow": "MLflow"}


def import_source(doc: dict) -> dict | None:
    """Where an imported run came from (run.json's `source`, written by nuboard import):
    {"tool": 'TensorBoard', "uri", "key"}, or None for a run NuBoard recorded itself."""
    source = doc.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("tool"), str):
        return None
    text = {k: source.get(k) if isinstance(source.get(k), str) else None for k in ("uri", "key")}
    return {"tool": SOURCE_TOOLS.get(source["tool"], source["tool"]), **text}


def summary_rows(doc: dict) -> tuple[list[dict], int]:
    """run.json's `summary` (what nuboard.wandb's run.summary keeps) as rows {key, value},
    nested keys joined with '.' as the Config's; and how many more rows there are. A summary
    that is not an object shows nothing."""
    summary = doc.get("summary")
    if not isinstance(summary, dict) or not summary:
        return [], 0
    flat = flatten_config(summary)
    rows = []
    for c in flat[:SUMMARY_ROWS]:
        value = config_value(c["type"], c["value_num"], c["value_text"])
        if isinstance(value, str):
            value = value[:SHOWN_CHARS]
        rows.append({"key": c["key"][:SHOWN_CHARS], "value": value})
    return rows, max(0, len(flat) - SUMMARY_ROWS)


def alert_list(doc: dict) -> tuple[list[dict], int]:
    """run.json's `alerts` (nuboard.wandb's alert), newest first: the well-formed ones among
    the last ALERTS_SHOWN, each {time, level, title, text}; and how many older ones are left out."""
    alerts = doc.get("alerts")
    if not isinstance(alerts, list):
        return [], 0
    shown = []
    for entry in reversed(alerts[-ALERTS_SHOWN:]):
        if not isinstance(entry, dict):
            continue
        item = {k: entry.get(k) if isinstance(entry.get(k), str) else None
                for k in ("time", "level", "title", "text")}
        if item["title"] is None and item["text"] is None:
            continue
        shown.append({k: v[:ALERT_CHARS] if v is not None else None for k, v in item.items()})
    return shown, max(0, len(alerts) - ALERTS_SHOWN)


def step_metrics(doc: dict) -> list[dict]:
    """run.json's `metrics` (nuboard.wandb's define_metric) that name a step metric: each
    {name, step_metric}, the x axis its charts are meant to have (Charts' x=scalar:NAME)."""
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        return []
    return [{"name": str(name)[:SHOWN_CHARS], "step_metric": m["step_metric"][:SHOWN_CHARS]}
            for name, m in list(metrics.items())[:SUMMARY_ROWS]
            if isinstance(m, dict) and isinstance(m.get("step_metric"), str) and m["step_metric"]]


def run_overview(root: Path, project: str, run_id: str, watch: HeartbeatWatch | None = None
                 ) -> dict:
    """Everything the Overview tab shows, as plain data (also the page's JSON twin)."""
    folder = layout.run_dir(root, project, run_id)
    doc, why, cut = read_checked_run(folder)     # as the catalog reads it: one rule for both
    if doc is None:
        if why == NO_RUN_JSON:
            raise RunMissing(f"Run {run_id!r} not found in project {project!r}.")
        raise RunUnreadable(_unreadable(run_id, why))
    now = time.time()
    status = run_status(folder, doc, now=now, watch=watch)
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    row = {"created": doc.get("start_time"), "ended": doc.get("end_time"),
           "heartbeat_mtime": heartbeat_mtime(folder)}
    duration = run_duration(row, status, now)
    flat = flatten_config(doc.get("config") or {})
    config = [{"key": c["key"], "value": config_value(c["type"], c["value_num"],
                                                      c["value_text"]), "type": c["type"]}
              for c in flat[:CONFIG_ROWS]]
    summary, summary_more = summary_rows(doc)
    alerts, alerts_more = alert_list(doc)
    command, _ = read_capped(folder, f"{layout.FILES}/command.txt")
    packages, _ = read_capped(folder, f"{layout.FILES}/requirements.txt")
    patch, patch_cut = read_capped(folder, f"{layout.FILES}/git.patch")
    ranks = layout.list_ranks(folder)
    sessions = [s for s in doc.get("sessions") or [] if isinstance(s, dict)]
    links = {}
    for kind in ("inputs", "outputs"):
        links[kind] = [dict(ref, state=artifact_state(root, ref))
                       for ref in doc.get(kind) or [] if isinstance(ref, dict)]
    return {
        "project": project, "id": run_id, "name": doc.get("name"), "status": status,
        "tags": [t for t in doc.get("tags") or [] if isinstance(t, str)],
        "notes": doc.get("notes"), "group": doc.get("group"), "host": doc.get("host"),
        "python": doc.get("python"), "platform": doc.get("platform"),
        "start": doc.get("start_time"), "end": doc.get("end_time"),
        "duration_s": duration, "duration": format_duration(duration),
        "config": config, "config_more": max(0, len(flat) - CONFIG_ROWS),
        "summary": summary, "summary_more": summary_more, "step_metrics": step_metrics(doc),
        "alerts": alerts, "alerts_more": alerts_more,
        "git": env.get("git") if isinstance(env.get("git"), dict) else None,
        "patch": patch, "patch_cut": patch_cut, "command": command,
        "packages": [p for p in (packages or "").splitlines() if p.strip()],
        "gpus": [g for g in env.get("gpus") or [] if isinstance(g, dict)],
        "world_size": doc.get("world_size"), "ranks": ranks, "sessions": sessions,
        "prefixes": doc.get("prefixes") or {},
        "parent": doc.get("parent") if isinstance(doc.get("parent"), dict) else None,
        "source": import_source(doc),
        "inputs": links["inputs"], "outputs": links["outputs"],
        "dropped_points": doc.get("dropped_points"), "cut": cut,
        "error": crash_line(folder, doc, status), "last_seen": last_seen(folder, status, now),
        "started_ts": (parse_time(doc.get("start_time")).timestamp()
                       if parse_time(doc.get("start_time")) else None),
    }
