"""What travels between an experiments folder and a bucket, in which units and in which order.

The bucket mirrors the folder (URL/<project>/...):

    <project>/runs/<id>/...                  every file of a run folder that has a run.json
    <project>/artifacts/<name>/v<N>/...      every file of a version that has its manifest.json
    <project>/views.json, colours.json, hidden.json    the project's own documents

Never: the catalog (<project>/.nuboard/), trashed runs (runs/.trash), unlinked versions
(artifacts/.unlinked), locks, claim folders and a run's or version's other dot entries at its
top, and temp files (.tmp-...) anywhere. Inside a run or version, files under files/ and media/
travel whatever their names (a user's .hydra/ folder included), temp files apart.

A unit (Unit) is one run, one version or one document: it travels in the order `rank` gives,
data first and the records that name it last (media and other files, then event logs, then
the heartbeat, then run.json; a version's files before its manifest.json), so a reader of
either side never sees a record before its data.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from nuboard.files import layout
from nuboard.files.jsonfile import TEMP_PREFIX
from nuboard.files.names import check_folder_name, check_project

DOCS = ("views.json", "colours.json", "hidden.json")
MANIFEST = "manifest.json"
_VERSION = re.compile(r"v[1-9][0-9]{0,18}\Z")
RUN, VERSION, DOC = "run", "version", "doc"


class Unit(NamedTuple):
    """One run, artifact version or project document: `kind` (RUN, VERSION, DOC), its project,
    `name` (the run id, 'name/vN', or the document's file name) and `prefix`, its key below
    the URL ('llm/runs/<id>', 'llm/artifacts/ds/v2', 'llm/views.json')."""
    kind: str
    project: str
    name: str
    prefix: str

    def shown(self) -> str:
        """How a message names it: 'run llm/<id>', 'artifact llm/ds:v2', 'llm/views.json'."""
        if self.kind == RUN:
            return f"run {self.project}/{self.name}"
        if self.kind == VERSION:
            name, _, version = self.name.rpartition("/")
            return f"artifact {self.project}/{name}:{version}"
        return self.prefix


def rank(kind: str, rel: str) -> int:
    """The place of a file (its path inside its unit) in the order a unit travels."""
    if kind == RUN:
        if rel == layout.RUN_JSON:
            return 3
        if rel == layout.HEARTBEAT:
            return 2
        if layout.parse_log_name(rel) is not None:
            return 1
        return 0
    if kind == VERSION:
        return 1 if rel == MANIFEST else 0
    return 0


def is_log(kind: str, rel: str) -> bool:
    return kind == RUN and layout.parse_log_name(rel) is not None


# -- the local side -------------------------------------------------------------------------------

def local_units(root: Path, projects: "list[str] | None") -> dict[Unit, dict[str, Path]]:
    """Every unit of the projects (all of them for None) in the folder, each with its files:
    {path inside the unit: local path}."""
    out: dict[Unit, dict[str, Path]] = {}
    names = layout.find_projects(root) if projects is None else projects
    for project in names:
        folder = layout.project_dir(root, project)
        for doc in DOCS:
            path = folder / doc
            if path.is_file():
                out[Unit(DOC, project, doc, f"{project}/{doc}")] = {"": path}
        runs = folder / "runs"
        for entry in _dirs(runs):
            files = unit_files(runs / entry)
            if layout.RUN_JSON in files:
                out[Unit(RUN, project, entry, f"{project}/runs/{entry}")] = files
        artifacts = folder / "artifacts"
        for name in _dirs(artifacts):
            for version in _dirs(artifacts / name):
                if not _VERSION.match(version):
                    continue
                files = unit_files(artifacts / name / version)
                if MANIFEST in files:
                    out[Unit(VERSION, project, f"{name}/{version}",
                             f"{project}/artifacts/{name}/{version}")] = files
    return out


def unit_files(folder: Path) -> dict[str, Path]:
    """The files of a run or version folder that travel: {path inside it: local path}."""
    found: dict[str, Path] = {}
    top = str(folder)
    for here, subdirs, files in os.walk(folder):
        at_top = here == top
        subdirs[:] = [d for d in subdirs if not (at_top and d.startswith("."))]
        rel_dir = os.path.relpath(here, top).replace(os.sep, "/")
        for name in files:
            if name.startswith(TEMP_PREFIX) or (at_top and name.startswith(".")):
                continue
            path = Path(here) / name
            try:
                if not path.is_file():           # a FIFO, a socket, a broken link
                    continue
            except OSError:
                continue
            found[name if rel_dir == "." else f"{rel_dir}/{name}"] = path
    return found


def _dirs(folder: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder)
                      if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


# -- the bucket's side ----------------------------------------------------------------------------

def parse_key(key: str) -> tuple[Unit, str] | None:
    """The unit a key below the URL belongs to, and the file's path inside it; None for a key
    that is no part of the layout (or one that would lead outside the folder)."""
    parts = key.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        return None
    if any(p.startswith(TEMP_PREFIX) for p in parts):
        return None
    for i in range(1, len(parts)):
        if parts[i] in ("runs", "artifacts"):
            break
    else:
        if len(parts) >= 2 and parts[-1] in DOCS:
            project = _project("/".join(parts[:-1]))
            return (Unit(DOC, project, parts[-1], key), "") if project else None
        return None
    project = _project("/".join(parts[:i]))
    if project is None:
        return None
    if len(parts) > i + 1 and not _folder_name(parts[i + 1]):
        return None                      # a run id or artifact name no run or version has
    if parts[i] == "runs":
        if len(parts) < i + 3 or parts[i + 1].startswith(".") or parts[i + 2].startswith("."):
            return None
        run_id = parts[i + 1]
        return Unit(RUN, project, run_id, f"{project}/runs/{run_id}"), "/".join(parts[i + 2:])
    if len(parts) < i + 4 or parts[i + 1].startswith(".") or not _VERSION.match(parts[i + 2]) \
            or parts[i + 3].startswith("."):
        return None
    name = f"{parts[i + 1]}/{parts[i + 2]}"
    return Unit(VERSION, project, name, f"{project}/artifacts/{name}"), "/".join(parts[i + 3:])


def _folder_name(text: str) -> bool:
    try:
        check_folder_name(text, "name")
    except ValueError:
        return False
    return True


def _project(text: str) -> str | None:
    try:
        return check_project(text)
    except ValueError:
        return None


def remote_units(listing: dict, projects: "list[str] | None") -> dict[Unit, dict]:
    """A listing of the URL ({key: ObjectInfo}) grouped by unit: {unit: {path inside: info}};
    only the projects asked for (all for None)."""
    wanted = None if projects is None else set(projects)
    out: dict[Unit, dict] = {}
    for key, info in listing.items():
        parsed = parse_key(key)
        if parsed is None:
            continue
        unit, rel = parsed
        if wanted is not None and unit.project not in wanted:
            continue
        out.setdefault(unit, {})[rel] = info
    return out


def local_path(root: Path, unit: Unit, rel: str) -> Path:
    """Where a unit's file lives in the folder."""
    folder = layout.project_dir(root, unit.project)
    if unit.kind == DOC:
        return folder / unit.name
    base = folder / ("runs" if unit.kind == RUN else "artifacts") / unit.name
    return base.joinpath(*rel.split("/"))


def key_of(unit: Unit, rel: str) -> str:
    """A unit's file's key below the URL."""
    return unit.prefix if unit.kind == DOC else f"{unit.prefix}/{rel}"
