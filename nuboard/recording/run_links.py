"""A run's artifacts: the versions it made (outputs) and used (inputs), recorded in its run.json.

run.json keeps, beside what nb.init wrote:
  "outputs": [{"project", "name", "version", "at"}]   versions this run added
  "inputs":  [{"project", "name", "version", "at"}]   versions this run used (once each)

A use is also noted in the artifact's own project, as a small file
<project>/artifacts/.uses/<name>/v<N>/<key>.json, so that project's catalog knows who used its
versions without reading every other project's runs. The note is a convenience: where that
folder cannot be written (a read-only datasets project), the run's own record still holds.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nuboard.artifacts.names import version_of_folder
from nuboard.files import layout, runjson
from nuboard.files.jsonfile import read_json, write_json_atomic

if TYPE_CHECKING:
    from nuboard.artifacts import Artifact

    from .run import Run

USES = ".uses"


def run_root(run: "Run") -> Path:
    """The experiments root a run's folder lies in (<root>/<project>/runs/<id>)."""
    project_path = run.folder.parent.parent
    return project_path.parents[len(run.project.split("/")) - 1]


def record(run: "Run", kind: str, artifact: "Artifact") -> None:
    """Add one version to the run's inputs or outputs in run.json (once), under its lock."""
    entry = {"project": artifact.project, "name": artifact.name, "version": artifact.version,
             "at": runjson.now_iso()}

    def add_link(doc: dict) -> bool:
        links = doc.setdefault(kind, [])
        if any(_same(e, entry) for e in links if isinstance(e, dict)):
            return False
        links.append(entry)
        return True

    run.update_record(add_link)


def _same(a: dict, b: dict) -> bool:
    return (a.get("project"), a.get("name"), a.get("version")) == \
        (b["project"], b["name"], b["version"])


def use_key(run_project: str, run_id: str) -> str:
    """The file name of a use note: stable for one run, safe for any project name."""
    return hashlib.sha1(f"{run_project}/{run_id}".encode()).hexdigest()[:20] + ".json"


def note_use(root: Path, run_project: str, run_id: str, artifact: "Artifact | dict") -> None:
    """Write the use note in the artifact's project; a folder we cannot write is skipped.

    artifact: an Artifact, or an inputs entry of run.json ({"project", "name", "version"}).
    """
    if isinstance(artifact, dict):
        project, name, version = artifact["project"], artifact["name"], artifact["version"]
    else:
        project, name, version = artifact.project, artifact.name, artifact.version
    folder = layout.project_dir(root, project) / "artifacts" / USES / name / f"v{version}"
    target = folder / use_key(run_project, run_id)
    if target.exists():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(target, {"project": run_project, "run_id": run_id,
                                   "at": runjson.now_iso()})
    except OSError:
        pass


def read_uses(project_path: Path) -> list[dict]:
    """Every use note of a project: {name, version, project, run_id}."""
    base = Path(project_path) / "artifacts" / USES
    found = []
    try:
        names = os.listdir(base)
    except OSError:
        return found
    for name in names:
        try:
            labels = os.listdir(base / name)
        except OSError:
            continue
        for label in labels:
            number = version_of_folder(label)
            if number is None:
                continue
            try:
                notes = os.listdir(base / name / label)
            except OSError:
                continue
            for note in notes:
                if not note.endswith(".json") or note.startswith("."):
                    continue
                try:
                    doc = read_json(base / name / label / note)
                except (OSError, ValueError):
                    continue
                if isinstance(doc, dict) and isinstance(doc.get("project"), str) \
                        and isinstance(doc.get("run_id"), str):
                    found.append({"name": name, "version": number,
                                  "project": doc["project"], "run_id": doc["run_id"]})
    return found


def add(run: "Run", name: str, path: Any, **options: Any) -> "Artifact":
    """Run.add_artifact: 'name' in the run's project, or 'project/name' in another."""
    from nuboard.artifacts import add_artifact
    from nuboard.artifacts.names import split_artifact_name
    project, bare = split_artifact_name(name, run.project)
    artifact = add_artifact(project, bare, path, dir=run_root(run),
                            producer={"project": run.project, "run_id": run.id}, **options)
    record(run, "outputs", artifact)
    return artifact


def use(run: "Run", spec: str, stacklevel: int = 3) -> "Artifact":
    """Run.use_artifact: find the version, record the use, check its files (warn once)."""
    from nuboard.artifacts import get_artifact
    root = run_root(run)
    artifact = get_artifact(spec, project=run.project, dir=root)
    record(run, "inputs", artifact)
    note_use(root, run.project, run.id, artifact)
    artifact.warn_if_changed(stacklevel=stacklevel)
    return artifact
