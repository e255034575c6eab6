"""What the Artifacts pages show, from the projects' catalogs and the versions' manifests.

The list and a version's facts come from the catalogs (one row per version, lineage edges,
through catalog/artifact_reads.py); a version's files are read from its manifest a page at a
time (manifest.file_entries reads it line by line: the first 1,000 files of a million-file
version cost the first 1,000 lines, not the whole 80 MB).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from nuboard.artifacts.manifest import MANIFEST, file_entries
from nuboard.artifacts.paths import resolve_location
from nuboard.artifacts.remote_refs import URL_BASE, expand_url
from nuboard.artifacts.version_folders import version_dir
from nuboard.catalog import artifact_reads
from nuboard.files import layout
from nuboard.files.records import display_status

PAGE = 1000


class VersionMissing(LookupError):
    """No such version in the project (linked or unlinked)."""


def artifact_list(catalogs, project: str | None = None, *, unlinked: bool = False) -> list[dict]:
    """Every artifact (of one project, and those its runs used from others), newest first.

    Each: project, name, type, latest (the newest version's number), versions (how many),
    created (the newest version's), and with unlinked=True the unlinked versions instead.
    """
    names = [project] if project is not None else catalogs.projects()
    found: dict[tuple[str, str], dict] = {}
    for name in names:
        _collect(catalogs.get(name), name, found, unlinked)
    if project is not None and not unlinked:
        used = artifact_reads.used_from_other_projects(catalogs.get(project), project)
        for other, artifact in used:
            if other in catalogs.projects() and (other, artifact) not in found:
                _collect(catalogs.get(other), other, found, False, only=artifact,
                         used_from=project)
    ordered = sorted(found.values(), key=lambda a: (a["created"] or "", a.pop("_order") or 0),
                     reverse=True)
    return ordered


def _collect(catalog, project: str, found: dict, unlinked: bool, only: str | None = None,
             used_from: str | None = None) -> None:
    for row in artifact_reads.version_rows(catalog, unlinked=unlinked, name=only):
        key = (project, row["name"])
        entry = found.get(key)
        if entry is None:
            found[key] = {"project": project, "name": row["name"], "type": row["type"],
                          "latest": row["version"], "versions": 1, "created": row["created"],
                          "size": row["size"], "files": row["files"], "storage": row["storage"],
                          "unlinked": bool(row["unlinked"]), "used_from": used_from,
                          "numbers": [row["version"]], "_order": row["folder_mtime_ns"]}
        else:
            entry["versions"] += 1
            entry["numbers"].append(row["version"])


def version_numbers(catalog, name: str) -> list[int]:
    """The numbers of an artifact's versions, linked and unlinked, newest first."""
    return [r["version"] for r in artifact_reads.version_rows(catalog, name=name)]


def version_info(catalogs, project: str, name: str, number: int) -> dict:
    """One version's facts: the catalog row, its metadata, producer, users and where it is."""
    catalog = catalogs.get(project)
    every = artifact_reads.version_rows(catalog, name=name)
    rows = [r for r in every if r["version"] == number]
    if not rows:
        raise VersionMissing(f"There is no version {name}:v{number} in project {project!r}.")
    row = rows[0]
    project_path = layout.project_dir(catalogs.root, project)
    folder = version_dir(project_path, name, number, unlinked=bool(row["unlinked"]))
    try:
        if row["base"] == URL_BASE:          # objects in a store: never contacted by a page
            where, unset = expand_url(row["location"] or "")
        else:
            where, unset = resolve_location(row["base"], row["location"], project_path, folder)
    except Exception:
        where, unset = None, []
    used = artifact_reads.used_by(catalog, project, name, number)
    producer = None
    if row["producer_project"] and row["producer_run"]:
        producer = run_card(catalogs, row["producer_project"], row["producer_run"])
    others = [v["version"] for v in every if not v["unlinked"]]
    try:
        metadata = json.loads(row["metadata"]) if row["metadata"] else {}
    except ValueError:
        metadata = {}
    return {
        "project": project, "name": name, "version": number, "type": row["type"],
        "storage": row["storage"], "created": row["created"], "created_by": row["created_by"],
        "size": row["size"], "files": row["files"], "description": row["description"],
        "metadata": metadata, "unlinked": bool(row["unlinked"]), "digest": row["digest"],
        "cut": row.get("cut"),
        "producer": producer,
        "used_by": sorted((run_card(catalogs, p, r) for p, r in used),
                          key=lambda c: (c["project"], c["name"], c["run_id"])),
        "used_count": len(used), "location": row["location"], "base": row["base"],
        "where": str(where) if where is not None else None, "unset": unset,
        "spec": f"{project}/{name}:v{number}", "versions": sorted(others, reverse=True),
        "manifest": str(folder / MANIFEST),
    }


def run_card(catalogs, project: str, run_id: str) -> dict:
    """A run as a link: its name and status when its project's catalog knows it."""
    card = {"project": project, "run_id": run_id, "name": run_id, "status": "missing"}
    if project not in catalogs.projects():
        return card
    row = artifact_reads.run_summaries(catalogs.get(project), [run_id]).get(run_id)
    if row is not None:
        card.update(name=row.name, status=display_status(row.status, row.heartbeat_mtime,
                                                         time.time(), row.lost_after))
    return card


def files_page(manifest: Path, *, offset: int = 0, limit: int = PAGE, needle: str = ""
               ) -> dict:
    """Files offset..offset+limit of a manifest (those whose path holds `needle`, if given).

    Returns {'files': [{path, size, sha256|None, etag|None, version_id|None}], 'offset',
    'next' (None at the end), 'matched' (how many matched so far, when a filter is set)}.
    The ETag and version id are a URL reference's (objects in a store).
    """
    needle = needle.strip()
    rows: list[dict] = []
    more = False
    for entry in file_entries(manifest, needle, skip=offset):
        if len(rows) == limit:
            more = True
            break
        rows.append({"path": entry.get("path"), "size": entry.get("size"),
                     "sha256": entry.get("sha256"), "etag": _text(entry.get("etag")),
                     "version_id": _text(entry.get("version_id"))})
    return {"files": rows, "offset": offset, "next": offset + len(rows) if more else None}


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
