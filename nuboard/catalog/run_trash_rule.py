"""The rule of removing a run, shared by `nuboard rm` and the viewer's Delete: a run is kept
while an artifact version references its files (a version stored by reference to a file in
the run's folder would lose its data) or while it still runs (a fresh heartbeat, or its process
alive on this host however old the heartbeat is).

The faces pass how they open another project's catalog (`catalog_for(project)`, a context
manager): the command line opens and closes each, the viewer lends the ones it holds.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from nuboard.errors import NuBoardError
from nuboard.files import layout

from .run_reads import reference_versions
from .sync_artifacts import sync_versions

CatalogFor = Callable[[str], AbstractContextManager]


def referencing_versions(root: Path, project: str, run_id: str,
                         catalog_for: CatalogFor) -> list[str]:
    """The linked artifact versions ('llm/best:v2') whose files lie in this run's folder.

    Every project under root is looked at (a version elsewhere may reference the run by an
    absolute path), through each project's catalog, brought up to date for versions only.
    """
    return versions_in_runs(root, project, [run_id], catalog_for)[run_id]


def versions_in_runs(root: Path, project: str, run_ids: list[str],
                     catalog_for: CatalogFor) -> dict[str, list[str]]:
    """referencing_versions of several runs of one project, each catalog looked at once:
    {run id: ['llm/best:v2', ...]} (every id given has a list)."""
    from nuboard.artifacts.paths import is_within, resolve_location

    folders = {run_id: layout.run_dir(root, project, run_id).resolve() for run_id in run_ids}
    found: dict[str, list[str]] = {run_id: [] for run_id in run_ids}
    for other in layout.find_projects(root):
        project_path = layout.project_dir(root, other)
        if not (project_path / "artifacts").is_dir():
            continue
        with catalog_for(other) as catalog:
            sync_versions(catalog)
            rows = reference_versions(catalog)
        for row in rows:
            try:
                where, unset = resolve_location(row["base"], row["location"], project_path,
                                                project_path)
            except NuBoardError:
                continue
            if unset:
                continue
            real = Path(os.path.realpath(where))
            for run_id, run_real in folders.items():
                if is_within(real, run_real):
                    found[run_id].append(f"{other}/{row['name']}:v{row['version']}")
    return found


def still_running(folder: Path) -> str | None:
    """Why the run in this folder counts as running ('its heartbeat is fresh', 'its process
    (pid N) is alive on this host'), or None when it does not."""
    from nuboard.files.status import live_process, run_status
    if run_status(folder) == "running":
        return "its heartbeat is fresh"
    pid = live_process(folder)
    if pid is not None:
        return f"its heartbeat is old, but its process (pid {pid}) is alive on this host"
    return None
