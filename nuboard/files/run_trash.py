"""A project's trash: run folders deleted from the viewer (or `nuboard rm --trash`), kept whole
under `<project>/runs/.trash/<run_id>/` until restored.

The move is one rename inside `runs/`, so every file stays as it was, byte for byte, and a
restore is the rename back. A name starting with a dot is never a run id (names.check_folder_name)
and the catalog's sync and every scan of `runs/` pass over such names, so a run in the trash is
in no list and no catalog. Whether a run may go (an artifact version references its files, it
still runs) is the caller's check (catalog/run_trash_rule.py); this module moves folders.

A restore claims `runs/<run_id>` with an atomic mkdir first and renames the trashed folder over
that empty claim, so it never replaces a run made meanwhile with that id: then it is refused
(RunExistsError) and the trashed folder stays where it is.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from nuboard.errors import NuBoardError, RunExistsError, RunNotFoundError

from . import layout
from .jsonfile import fsync_dir
from .names import check_folder_name

TRASH = ".trash"


class TrashError(NuBoardError, OSError):
    """A run folder that cannot be moved to or from the trash (a run of that id is in the
    trash already, the folder cannot be written)."""


def trash_dir(root: Path, project: str) -> Path:
    """`<project>/runs/.trash/`."""
    return layout.runs_dir(root, project) / TRASH


def trashed_dir(root: Path, project: str, run_id: str) -> Path:
    """Where a run lies while in the trash."""
    return trash_dir(root, project) / check_folder_name(run_id, "run id")


def move_to_trash(root: Path, project: str, run_id: str) -> Path:
    """Move the run's folder into the trash whole (a link to a folder moves as the link);
    return where it is now.

    Raises:
        RunNotFoundError: no folder of that run.
        TrashError: a run of that id is in the trash already, or the folder cannot be moved.
    """
    folder = layout.run_dir(root, project, check_folder_name(run_id, "run id"))
    target = trashed_dir(root, project, run_id)
    if not os.path.isdir(folder):
        raise RunNotFoundError(f"Run {run_id!r} not found in project {project!r}: nothing was "
                               "moved to the trash.")
    if os.path.lexists(target):
        raise TrashError(f"A run {run_id!r} is in the trash of project {project!r} already: "
                         f"restore it, or remove {str(target)!r}, first. Nothing was moved.")
    try:
        target.parent.mkdir(exist_ok=True)
        os.rename(folder, target)
    except OSError as exc:
        raise TrashError(f"Run {run_id!r} could not be moved to {str(target)!r} "
                         f"({exc.strerror or exc}); the folder must be writable. Nothing was "
                         "moved.") from None
    fsync_dir(target.parent)
    fsync_dir(folder.parent)
    return target


def restore_from_trash(root: Path, project: str, run_id: str) -> Path:
    """Move a run from the trash back to `runs/<run_id>`; return its folder.

    Raises:
        RunNotFoundError: the trash holds no run of that id.
        RunExistsError: a run of that id exists again (nothing is moved).
        TrashError: the folder cannot be moved.
    """
    source = trashed_dir(root, project, run_id)
    folder = layout.run_dir(root, project, run_id)
    if not os.path.isdir(source):
        raise RunNotFoundError(f"Run {run_id!r} is not in the trash of project {project!r}.")
    if os.path.islink(source):
        return _restore_link(source, folder, project, run_id)
    _claim(lambda: os.mkdir(folder), folder, project, run_id)   # fails when the id is taken again
    try:
        os.rename(source, folder)              # over the empty claim
    except OSError as exc:
        try:
            os.rmdir(folder)
        except OSError:
            pass
        why = "a run was made there meanwhile" if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) \
            else exc.strerror or str(exc)
        raise TrashError(f"Run {run_id!r} could not be restored to {str(folder)!r} ({why}). "
                         "Nothing was moved.") from None
    fsync_dir(folder.parent)
    fsync_dir(source.parent)
    return folder


def _claim(make, folder: Path, project: str, run_id: str) -> None:
    """Claim `runs/<run_id>` for a restore with make() (an mkdir, or the link itself): an id
    taken again is RunExistsError, another failure TrashError; nothing is moved either way."""
    try:
        make()
    except FileExistsError:
        raise RunExistsError(f"A run {run_id!r} exists again in project {project!r}, so the one "
                             "in the trash cannot be restored beside it: delete or rename one "
                             "of them first. Nothing was moved.") from None
    except OSError as exc:
        raise TrashError(f"Run {run_id!r} could not be restored to {str(folder)!r} "
                         f"({exc.strerror or exc}). Nothing was moved.") from None


def _restore_link(source: Path, folder: Path, project: str, run_id: str) -> Path:
    """Restore a run folder that is a link (to a folder elsewhere): a link cannot be renamed
    over an empty claim, so the link itself is the claim, made beside the others with the
    same target (it fails when the id is taken again), and the trashed link is removed."""
    _claim(lambda: os.symlink(os.readlink(source), folder, target_is_directory=True), folder,
           project, run_id)
    os.unlink(source)
    fsync_dir(folder.parent)
    fsync_dir(source.parent)
    return folder


def list_trash(root: Path, project: str) -> list[dict]:
    """The runs in the project's trash, the last moved first: {'id', 'trashed' (epoch seconds
    of the move: the folder's ctime, which a later change of the folder's metadata moves too),
    'path'}. Entries whose name cannot be a run id are left
    out (nothing NuBoard put there)."""
    base = trash_dir(root, project)
    out = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        try:
            check_folder_name(entry.name, "run id")
            if not entry.is_dir():
                continue
            when = entry.stat(follow_symlinks=False).st_ctime
        except (NuBoardError, OSError):
            continue
        out.append({"id": entry.name, "trashed": when, "path": entry.path})
    out.sort(key=lambda r: (-r["trashed"], r["id"]))
    return out
