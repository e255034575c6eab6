"""Sync a project's artifact versions and lineage edges into its catalog.

Versions: every folder artifacts/<name>/v<N>/ and artifacts/.unlinked/<name>/v<N>/ with a
manifest. An unchanged version costs one stat of its manifest (its signature is the manifest's
size and mtime, and where it is); a changed one is read again.

Lineage: each edge carries its origin, so each source of edges is replaced on its own:
  'run'       a run of this project lists a version in run.json's inputs or outputs
              (written by sync.py with the run's rows);
  'manifest'  a version of this project names its producer run (any project);
  'use'       a use note of a version of this project (a run of any project used it).
An edge crossing two projects is therefore indexed in both projects' catalogs.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import and_, delete, select, tuple_

from nuboard.artifacts.manifest import MANIFEST, read_manifest_checked, shown_fields
from nuboard.artifacts.names import MAX_VERSION, folder_problem, version_of_folder
from nuboard.artifacts.version_folders import ARTIFACTS, UNLINKED
from nuboard.files import layout
from nuboard.recording.run_links import read_uses

from .statements import insert_or_ignore, note_change
from .tables import artifacts, lineage, versions

_CHUNK = 400


class VersionReport(NamedTuple):
    added: int
    updated: int
    removed: int
    uses: int = 0            # 1 when the use notes (runs of any project using a version) changed
    skipped: tuple = ()      # ('artifacts/<name>/v<N>', why) for each folder that is not a version

    def counts(self) -> dict:
        """The counts without the skipped folders (a SyncReport's 'versions')."""
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "uses": self.uses}


def _found_versions(project_path: Path, skipped: list | None = None
                    ) -> dict[tuple[str, int], tuple[Path, bool, str]]:
    """(name, number) -> (version folder, unlinked, signature), for versions with a manifest.

    A folder named like a version with a number no version gets (beyond 2**63-1) is not one:
    appended to skipped as (its path in the project, why)."""
    found: dict[tuple[str, int], tuple[Path, bool, str]] = {}
    base = project_path / ARTIFACTS
    for unlinked, folder in ((False, base), (True, base / UNLINKED)):
        try:
            names = [e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")]
        except OSError:
            continue
        for name in names:
            try:
                labels = os.listdir(folder / name)
            except OSError:
                continue
            for label in labels:
                number = version_of_folder(label)
                if number is None:
                    why = folder_problem(label)
                    if why is not None and skipped is not None:
                        skipped.append((_shown(unlinked, name, label), why))
                    continue
                path = folder / name / label
                try:
                    st = os.stat(path / MANIFEST)
                except OSError:
                    continue                          # an add in progress, or killed
                key = (name, number)
                if key in found:
                    continue                          # linked and unlinked at once: linked wins
                found[key] = (path, unlinked, f"{int(unlinked)}:{st.st_size}:{st.st_mtime_ns}")
    return found


def _shown(unlinked: bool, name: str, label: str) -> str:
    return f"{ARTIFACTS}/{UNLINKED + '/' if unlinked else ''}{name}/{label}"[:200]


def file_list_digest(files: list) -> str:
    """A fingerprint of a version's file list: paths, sizes, and SHA-256 or modification time.

    Two versions with the same digest hold the same files (the viewer's same-as-latest check).
    """
    digest = hashlib.sha256()
    for f in files:
        if not isinstance(f, dict):
            continue
        mark = f.get("sha256") or repr(f.get("mtime"))
        digest.update(f"{f.get('path')}\0{f.get('size')}\0{mark}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def _version_row(doc: dict, artifact_id: int, number: int, unlinked: bool, path: Path,
                 signature: str) -> dict:
    producer = doc.get("producer") if isinstance(doc.get("producer"), dict) else {}
    try:
        mtime_ns = os.stat(path).st_mtime_ns
    except OSError:
        mtime_ns = 0
    meta, description, cut = shown_fields(doc)
    return {
        "artifact": artifact_id, "version": number, "type": _s(doc.get("type")),
        "digest": file_list_digest(doc.get("files") or []), "size": _i(doc.get("total_bytes")),
        "files": _i(doc.get("file_count")), "storage": _s(doc.get("storage")),
        "base": _s(doc.get("base")), "location": _s(doc.get("location")),
        "description": _s(description), "cut": "; ".join(cut) or None,
        "metadata": _s(json.dumps(meta, ensure_ascii=False))
        if isinstance(doc.get("metadata"), dict) else None,
        "producer_project": _s(producer.get("project")), "producer_run": _s(producer.get("run_id")),
        "created": _s(doc.get("created_at")), "created_by": _s(doc.get("created_by")),
        "unlinked": unlinked, "folder_mtime_ns": mtime_ns, "signature": signature,
    }


def _run_exists(root: Path, project: str, run_id: str) -> bool:
    """Whether the run of a use note is still there (a removed run's notes are ignored)."""
    try:
        return (layout.project_dir(root, project) / "runs" / run_id / layout.RUN_JSON).is_file()
    except (ValueError, OSError):
        return False


def _s(value) -> str | None:
    """A text for the catalog; a lone surrogate (a file name that was not UTF-8) as \\udcXX."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _i(value) -> int | None:
    """An int the catalog can hold (SQLite's int64), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and -MAX_VERSION - 1 <= value <= MAX_VERSION else None


def _artifact_ids(conn, project_id: int) -> dict[str, int]:
    rows = conn.execute(select(artifacts.c.name, artifacts.c.id)
                        .where(artifacts.c.project_id == project_id))
    return {name: pk for name, pk in rows}


def sync_versions(catalog, full: bool = False) -> VersionReport:
    """Bring the versions, artifacts and 'manifest'/'use' lineage rows up to date."""
    project_path = Path(catalog.project_dir)
    skipped: list[tuple[str, str]] = []
    found = _found_versions(project_path, skipped)
    with catalog.reader.connect() as conn:
        known = {(r.name, r.version): r.signature for r in conn.execute(
            select(artifacts.c.name, versions.c.version, versions.c.signature)
            .join(versions, versions.c.artifact == artifacts.c.id)
            .where(artifacts.c.project_id == catalog.project_id))}
        old_uses = set(conn.execute(
            select(lineage.c.artifact_name, lineage.c.version, lineage.c.run_project, lineage.c.run_id)
            .where(lineage.c.origin == "use", lineage.c.artifact_project == catalog.project)).all())
    changed = [k for k, v in found.items() if full or known.get(k) != v[2]]
    gone = [k for k in known if k not in found]
    uses = {(u["name"], u["version"], u["project"], u["run_id"]) for u in read_uses(project_path)
            if _i(u["version"]) is not None and _s(u["name"]) == u["name"]
            and _s(u["project"]) == u["project"] and _s(u["run_id"]) == u["run_id"]
            and _run_exists(catalog.root, u["project"], u["run_id"])}
    if not changed and not gone and uses == old_uses:
        return VersionReport(0, 0, 0, skipped=tuple(skipped))
    docs = {}
    for key in changed:
        doc, why = read_manifest_checked(found[key][0])
        if doc is not None:
            docs[key] = doc
        elif why is not None:                 # damaged: not indexed, read again next sync
            name, number = key
            skipped.append((_shown(found[key][1], name, f"v{number}"), why))
    with catalog.writer.begin() as conn:
        ids = _artifact_ids(conn, catalog.project_id)
        note_change(conn, catalog.project_id)
        # every changed version, known or not: another process may have indexed it since
        # `known` was read, and deleting a row that is not there costs nothing
        drop = gone + changed
        _delete_versions(conn, catalog, ids, drop)
        for (name, number), doc in sorted(docs.items()):
            kind = _s(doc.get("type"))
            if name not in ids:
                ids[name] = conn.execute(artifacts.insert().values(
                    project_id=catalog.project_id, name=name, type=kind)).inserted_primary_key[0]
            path, unlinked, sig = found[(name, number)]
            conn.execute(versions.insert().values(
                _version_row(doc, ids[name], number, unlinked, path, sig)))
            producer = doc.get("producer")
            if isinstance(producer, dict) and _s(producer.get("project")) and _s(producer.get("run_id")):
                conn.execute(insert_or_ignore(conn, lineage).values(
                    kind="produced", run_project=producer["project"], run_id=producer["run_id"],
                    artifact_project=catalog.project, artifact_name=name, version=number,
                    origin="manifest"))
        _refresh_types(conn, catalog.project_id)
        if uses != old_uses:
            conn.execute(delete(lineage).where(lineage.c.origin == "use",
                                               lineage.c.artifact_project == catalog.project))
            rows = [{"kind": "used", "run_project": p, "run_id": r, "artifact_project": catalog.project,
                     "artifact_name": n, "version": v, "origin": "use"} for n, v, p, r in sorted(uses)]
            if rows:
                conn.execute(insert_or_ignore(conn, lineage), rows)
    added = sum(1 for k in docs if k not in known)
    return VersionReport(added, len(docs) - added, len(gone), int(uses != old_uses), tuple(skipped))


def _delete_versions(conn, catalog, ids: dict[str, int], keys: list[tuple[str, int]]) -> None:
    for i in range(0, len(keys), _CHUNK):
        chunk = [(ids[n], v) for n, v in keys[i:i + _CHUNK] if n in ids]
        if chunk:
            conn.execute(delete(versions).where(tuple_(versions.c.artifact, versions.c.version).in_(chunk)))
        named = keys[i:i + _CHUNK]
        if named:
            conn.execute(delete(lineage).where(
                lineage.c.origin == "manifest", lineage.c.artifact_project == catalog.project,
                tuple_(lineage.c.artifact_name, lineage.c.version).in_(named)))


def _refresh_types(conn, project_id: int) -> None:
    """Each artifact takes its newest version's type; one left without versions goes."""
    rows = conn.execute(select(artifacts.c.id).where(artifacts.c.project_id == project_id)).scalars().all()
    for pk in rows:
        newest = conn.execute(select(versions.c.type).where(versions.c.artifact == pk)
                              .order_by(versions.c.version.desc()).limit(1)).first()
        if newest is None:
            conn.execute(delete(artifacts).where(artifacts.c.id == pk))
        else:
            conn.execute(artifacts.update().where(artifacts.c.id == pk).values(type=newest[0]))


def run_links(doc: dict) -> list[dict]:
    """The lineage rows (origin 'run', without run_project/run_id) of a run document."""
    rows = []
    for key, kind in (("outputs", "produced"), ("inputs", "used")):
        found = doc.get(key)
        if not isinstance(found, list):
            continue
        for entry in found:
            if not isinstance(entry, dict):
                continue
            project, name, version = entry.get("project"), entry.get("name"), entry.get("version")
            if isinstance(project, str) and isinstance(name, str) and _i(version) is not None:
                rows.append({"kind": kind, "artifact_project": project, "artifact_name": name,
                             "version": version, "origin": "run"})
    return rows


def delete_run_links(conn, project: str, run_ids: list[str]) -> None:
    """Remove the 'run' edges of these runs of `project`."""
    for i in range(0, len(run_ids), _CHUNK):
        conn.execute(delete(lineage).where(and_(
            lineage.c.origin == "run", lineage.c.run_project == project,
            lineage.c.run_id.in_(run_ids[i:i + _CHUNK]))))
