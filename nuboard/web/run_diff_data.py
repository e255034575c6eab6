"""The Diff of selected runs as data: what 2 to 20 runs recorded, side by side, row by row.

Read from each run's folder, as the run page's Overview reads it (the files are the truth):
run.json (through read_checked_run, the catalog's rule) for the status, group, tags, git state
(env.git: commit, branch, dirty, remote) and config (flattened with '.', each value as the Runs
table writes it: number_text's rule), and files/requirements.txt ('name==version' lines, as
capture writes them) for the packages.

A row differs when the runs that hold the section do not all hold the same value (compared
exactly: 0.3 and 0.30000001 differ though both read 0.3). A value a run lacks is None (the page
shows an em dash). A run whose run.json or requirements.txt is missing or cannot be read has
no values in the sections it feeds, and a note saying why; it is never an error of the page.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from nuboard.catalog.run_doc import NO_RUN_JSON, read_checked_run
from nuboard.catalog.sync import config_value, flatten_config
from nuboard.errors import NuBoardError
from nuboard.files import layout
from nuboard.files.names import check_folder_name
from nuboard.files.status import HeartbeatWatch, run_status

from .containment import open_file_inside
from .number_text import cell_text

MIN_RUNS, MAX_RUNS = 2, 20
CONFIG_ROWS = 5000                # per run, as the run page's Config
PACKAGES_BYTES = 1024 * 1024      # of files/requirements.txt read
CELL_CHARS = 2000                 # of one value shown (a long list in a config)
REQUIREMENTS = f"{layout.FILES}/requirements.txt"
SECTIONS = (("run", "Run"), ("git", "Git"), ("config", "Config"), ("packages", "Packages"))
GIT_FIELDS = ("commit", "branch", "dirty", "remote")


class RunsArgError(ValueError):
    """?runs= names too few or too many runs, or a name that cannot be a run id."""


def parse_run_ids(values: list[str]) -> list[str]:
    """The run ids of ?runs=a,b (repeated ?runs= add up), in order, each once.

    Raises:
        RunsArgError: fewer than MIN_RUNS or more than MAX_RUNS, or an id that cannot be one.
    """
    seen: dict[str, None] = {}
    for part in values:
        for run_id in part.split(","):
            if run_id.strip():
                seen.setdefault(run_id.strip(), None)
    ids = list(seen)
    if not MIN_RUNS <= len(ids) <= MAX_RUNS:
        raise RunsArgError(
            f"?runs= names {len(ids)} run{'' if len(ids) == 1 else 's'}; a diff compares "
            f"{MIN_RUNS} to {MAX_RUNS} runs, given as ?runs=<id>,<id>,... (select them on the "
            "Runs page).")
    for run_id in ids:
        try:
            check_folder_name(run_id, "run id")
        except NuBoardError as exc:
            raise RunsArgError(f"?runs= holds {run_id[:140]!r}, which cannot be a run id: "
                               f"{exc}") from None
    return ids


def _shown(value) -> tuple[str, str]:
    """A value as the page writes it (cell_text, cut at CELL_CHARS) and its exact form, which
    decides whether two runs differ."""
    text = cell_text(value)
    if len(text) > CELL_CHARS:
        text = text[:CELL_CHARS] + "…"
    exact = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str) \
        if not isinstance(value, str) else "s:" + value
    return text, exact


def _run_section(doc: dict, status: str) -> dict:
    tags = sorted({t for t in doc.get("tags") or [] if isinstance(t, str)})
    group = doc.get("group") if isinstance(doc.get("group"), str) else None
    return {"status": status, "group": group, "tags": ", ".join(tags) if tags else None}


def _git_section(doc: dict) -> tuple[dict, str | None]:
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    git = env.get("git")
    if not isinstance(git, dict):
        return {}, "no git state recorded"
    values = {}
    for field in GIT_FIELDS:
        value = git.get(field)
        if field == "dirty" and isinstance(value, bool):
            value = "yes" if value else "no"
        if isinstance(value, (str, int, float)):
            values[field] = value
    return values, None


def _config_section(doc: dict) -> tuple[dict, str | None]:
    flat = flatten_config(doc.get("config") or {})
    values = {c["key"]: config_value(c["type"], c["value_num"], c["value_text"])
              for c in flat[:CONFIG_ROWS]}
    note = (f"the first {CONFIG_ROWS} of its {len(flat)} config keys"
            if len(flat) > CONFIG_ROWS else None)
    return values, note


def read_packages(folder: Path) -> tuple[dict | None, str | None]:
    """{name: version} of files/requirements.txt ('name==version' lines; any other line is
    kept whole as its own name, listed), or None and why it cannot be shown."""
    if not os.path.lexists(folder / REQUIREMENTS):
        return None, "no files/requirements.txt (recorded without capture_env)"
    fh = open_file_inside(folder, REQUIREMENTS)
    if fh is None:
        return None, "files/requirements.txt cannot be read (not a regular file in the run folder)"
    try:
        with fh:
            data = fh.read(PACKAGES_BYTES + 1)
    except OSError as exc:
        return None, f"files/requirements.txt cannot be read ({exc.strerror or exc})"
    if b"\0" in data:
        return None, "files/requirements.txt is damaged (it holds binary data, not text)"
    note = (f"only the first {PACKAGES_BYTES // 1024} KB of files/requirements.txt"
            if len(data) > PACKAGES_BYTES else None)
    packages: dict[str, str] = {}
    for line in data[:PACKAGES_BYTES].decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        if sep and name.strip():
            packages.setdefault(name.strip(), version.strip())
        else:
            packages.setdefault(line, "listed")
    return packages, note


def read_run(root: Path, project: str, run_id: str, watch: HeartbeatWatch | None = None,
             now: float | None = None) -> dict:
    """One run's column: {'id', 'name', 'status', 'notes', 'sections': {section: {key: value}
    or None}, 'section_notes': {section: note}}; a section is None when it cannot be read."""
    folder = layout.run_dir(root, project, run_id)
    column = {"id": run_id, "name": run_id, "status": "unknown", "notes": [],
              "sections": {key: None for key, _ in SECTIONS}, "section_notes": {}}
    if not folder.is_dir():
        column["notes"].append(f"Run {run_id!r} not found in project {project!r}.")
        return column
    doc, why, cut = read_checked_run(folder)
    if doc is None:
        column["notes"].append(f"Run {run_id!r} not found in project {project!r}."
                               if why == NO_RUN_JSON else f"run.json cannot be shown: {why[:300]}")
    else:
        status = run_status(folder, doc, now=now if now is not None else time.time(), watch=watch)
        column["status"] = status
        column["name"] = doc.get("name") if isinstance(doc.get("name"), str) else run_id
        column["notes"].extend(f"cut: {c}" for c in cut[:5])
        sections = column["sections"]
        sections["run"] = _run_section(doc, status)
        sections["git"], column["section_notes"]["git"] = _git_section(doc)
        sections["config"], column["section_notes"]["config"] = _config_section(doc)
    packages, note = read_packages(folder)
    column["sections"]["packages"] = packages
    column["section_notes"]["packages"] = note
    column["section_notes"] = {k: v for k, v in column["section_notes"].items() if v}
    return column


def _keys(columns: list[dict], section: str) -> list[str]:
    """The section's keys, in the order the runs first hold them (packages: by name)."""
    keys: dict[str, None] = {}
    for column in columns:
        for key in column["sections"][section] or {}:
            keys.setdefault(key, None)
    if section == "packages":
        return sorted(keys, key=str.lower)
    return list(keys)


def section_rows(columns: list[dict], section: str) -> list[dict]:
    """[{'key', 'values' (a text per run; None where the run lacks it or cannot be read),
    'differs', and 'hint' where they differ but read the same}] of one section, every key."""
    rows = []
    for key in _keys(columns, section):
        values, exact = [], set()
        for column in columns:
            held = column["sections"][section]
            if held is None:
                values.append(None)
                continue
            if key not in held or held[key] is None:
                values.append(None)
                exact.add(None)
                continue
            text, same = _shown(held[key])
            values.append(text)
            exact.add(same)
        row = {"key": key, "values": values, "differs": len(exact) > 1}
        if row["differs"] and None not in exact and len({v for v in values if v is not None}) == 1:
            row["hint"] = "the values differ beyond the digits shown"
        rows.append(row)
    return rows


def run_diff(root: Path, project: str, run_ids: list[str], *, every_row: bool = False,
             watch: HeartbeatWatch | None = None) -> dict:
    """What the Diff page shows of these runs (and its JSON twin).

    Returns:
        {'runs': [{'id', 'name', 'status', 'notes', 'section_notes'}], 'all': every_row,
        'sections': [{'key', 'title', 'rows', 'total', 'differ', 'read' (per run: whether it
        could be read), 'notes' (per run, or None)}],
        'differ', 'total'}; rows are those that differ unless every_row.
    """
    now = time.time()
    columns = [read_run(root, project, run_id, watch=watch, now=now) for run_id in run_ids]
    sections = []
    for key, title in SECTIONS:
        rows = section_rows(columns, key)
        notes = [c["section_notes"].get(key)
                 or (c["notes"][0] if c["sections"][key] is None and c["notes"] else None)
                 for c in columns]
        sections.append({"key": key, "title": title, "total": len(rows),
                         "differ": sum(r["differs"] for r in rows),
                         "rows": rows if every_row else [r for r in rows if r["differs"]],
                         "read": [c["sections"][key] is not None for c in columns],
                         "notes": notes if any(notes) else None})
    return {"runs": [{k: c[k] for k in ("id", "name", "status", "notes", "section_notes")}
                     for c in columns],
            "all": every_row, "sections": sections,
            "differ": sum(s["differ"] for s in sections),
            "total": sum(s["total"] for s in sections)}
