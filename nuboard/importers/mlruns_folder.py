"""An `mlruns` folder (MLflow's file store) checked before MLflow reads it, without opening a file.

MLflow's FileStore opens each file of a run (meta.yaml, metrics, params, tags, inputs) to list
it, and one search reads every run of an experiment: a FIFO anywhere blocks it for ever, and
one malformed file fails the whole search. `scan_store` walks what MLflow reads (an experiment's
meta.yaml, tags, datasets and models; a run's meta.yaml, metrics, params, tags, inputs and
outputs; never an `artifacts` folder) and says, for each experiment folder and each of its run
folders, what would stop MLflow: an entry that is neither a folder nor a regular file (a FIFO,
a socket, a device, a dangling or looping link), or a name that is not UTF-8.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .source_runs import printable
from .tfrecord import file_kind

META = "meta.yaml"
TRASH = ".trash"
ARTIFACTS = "artifacts"
RESERVED = frozenset({"tags", "datasets", "traces", "models"})   # FileStore's, not run folders
READ_FOR_RUNS = frozenset({META, "tags", "datasets", "models"})  # of an experiment folder
RUN_PARTS = frozenset({META, "metrics", "params", "tags", "inputs", "outputs"})   # of a run folder


@dataclass
class ExperimentFolder:
    """One experiment folder of the store: its own problem, and each run folder's (None: none)."""
    name: str
    problem: str | None = None
    runs: dict = field(default_factory=dict)


def scan_store(root: Path) -> list[ExperimentFolder]:
    """Each experiment folder (a folder of root with a meta.yaml, the trash aside), by name."""
    found = []
    for entry in _entries(root):
        if entry.name == TRASH or entry.name == "models" or not _is_dir(entry) \
                or not os.path.lexists(os.path.join(entry.path, META)):
            continue
        folder = ExperimentFolder(entry.name)
        if printable(entry.name) != entry.name:
            folder.problem = "its folder name is not UTF-8"
        else:
            folder.problem = _experiment_problem(Path(entry.path), folder)
        found.append(folder)
    return sorted(found, key=lambda f: f.name)


def _experiment_problem(path: Path, folder: ExperimentFolder) -> str | None:
    """Fill folder.runs; the problem of the experiment's own files (meta.yaml, tags, datasets)."""
    for entry in _entries(path):
        is_run = entry.name not in RESERVED and _is_dir(entry) \
            and os.path.lexists(os.path.join(entry.path, META))
        if is_run:
            folder.runs[entry.name] = "its folder name is not UTF-8" \
                if printable(entry.name) != entry.name else _parts_problem(Path(entry.path), RUN_PARTS)
    return _parts_problem(path, READ_FOR_RUNS)


def _parts_problem(folder: Path, parts: frozenset) -> str | None:
    """The first entry MLflow reads of folder (those named in parts, and all under them, their
    `artifacts` folders aside) that it could not read; None when there is none."""
    for entry in _entries(folder):
        if entry.name in parts:
            problem = _entry_problem(entry, folder) or \
                (tree_problem(Path(entry.path), folder) if _is_dir(entry) else None)
            if problem is not None:
                return problem
    return None


def tree_problem(folder: Path, base: Path | None = None) -> str | None:
    """The first entry under folder (its `artifacts` folders aside) that MLflow could not read."""
    base = base or folder
    stack = [folder]
    while stack:
        current = stack.pop()
        for entry in _entries(current):
            problem = _entry_problem(entry, base)
            if problem is not None:
                return problem
            if entry.name != ARTIFACTS and entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return None


def _entry_problem(entry: os.DirEntry, base: Path) -> str | None:
    where = printable(os.path.relpath(entry.path, base))
    if printable(entry.name) != entry.name:
        return f"the name of {where!r} is not UTF-8"
    try:
        mode = entry.stat(follow_symlinks=True).st_mode
    except OSError as exc:
        return f"{where!r} cannot be read: {exc.strerror or exc}"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{where!r} is {file_kind(mode)}, not a regular file"
    return None


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
