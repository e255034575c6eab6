"""The version folders of an artifact: claiming numbers, listing, unlinking and restoring.

  <project>/artifacts/<name>/v<N>/manifest.json   a version (complete once the manifest is there)
  <project>/artifacts/<name>/.last-version        the highest number ever claimed
  <project>/artifacts/<name>/.lock                flock'd while numbers are claimed or folders moved
  <project>/artifacts/.unlinked/<name>/v<N>/      an unlinked version

A number is claimed with an atomic mkdir of v<N>, above every number in use, unlinked or
recorded in .last-version, so it is never handed out twice, also after an unlink or a
version folder removed by hand. The lock (released by the kernel when its holder dies)
keeps a claim from racing an unlink or restore that moves a folder between the two places.
Where the file system has no locks (jsonfile.flock warns once), numbers stay unique (the
mkdir), but a claim racing an unlink or restore of the same name can reuse a moved number.
"""
from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Iterator

from nuboard.files.jsonfile import clean_stray_temps, flock, fsync_dir, read_json, write_json_atomic

from .errors import ArtifactNotFoundError, VersionStateError
from .manifest import MANIFEST
from .names import MAX_VERSION, version_label, version_of_folder

ARTIFACTS = "artifacts"
UNLINKED = ".unlinked"
LAST = ".last-version"
LOCK = ".lock"

def artifacts_dir(project_path: Path) -> Path:
    return Path(project_path) / ARTIFACTS


def name_dir(project_path: Path, name: str) -> Path:
    return artifacts_dir(project_path) / name


def unlinked_dir(project_path: Path, name: str) -> Path:
    return artifacts_dir(project_path) / UNLINKED / name


@contextlib.contextmanager
def name_lock(project_path: Path, name: str) -> Iterator[None]:
    """Hold the lock of one artifact name (a no-op where the file system has no locks)."""
    folder = name_dir(project_path, name)
    folder.mkdir(parents=True, exist_ok=True)
    with flock(folder / LOCK):
        yield


def _numbers(folder: Path) -> list[int]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [n for n in (version_of_folder(x) for x in names) if n is not None]


def _last_recorded(project_path: Path, name: str) -> int:
    try:
        value = read_json(name_dir(project_path, name) / LAST)
    except (OSError, ValueError):
        return 0
    number = value.get("version") if isinstance(value, dict) else None
    return number if isinstance(number, int) and 0 <= number < MAX_VERSION else 0


def next_version(project_path: Path, name: str) -> int:
    """The number the next add of this name would get (a peek: nothing is claimed)."""
    folder = name_dir(project_path, name)
    return max([0, _last_recorded(project_path, name), *_numbers(folder),
                *_numbers(unlinked_dir(project_path, name))]) + 1


def claim_version(project_path: Path, name: str) -> tuple[int, Path]:
    """Claim the next version number with an atomic mkdir; return (number, its folder)."""
    folder = name_dir(project_path, name)
    with name_lock(project_path, name):
        clean_stray_temps(folder)
        number = max([0, _last_recorded(project_path, name), *_numbers(folder),
                      *_numbers(unlinked_dir(project_path, name))]) + 1
        while True:
            path = folder / version_label(number)
            try:
                os.mkdir(path)
                break
            except FileExistsError:
                number += 1
        fsync_dir(folder)
        write_json_atomic(folder / LAST, {"version": number})
    return number, path


def version_dir(project_path: Path, name: str, number: int, *, unlinked: bool = False) -> Path:
    base = unlinked_dir(project_path, name) if unlinked else name_dir(project_path, name)
    return base / version_label(number)


def is_complete(path: Path) -> bool:
    """Whether a version folder has its manifest (an add finished)."""
    return (Path(path) / MANIFEST).is_file()


def list_versions(project_path: Path, name: str, *, unlinked: bool = False) -> list[int]:
    """The complete versions of a name, oldest first (linked ones, or the unlinked ones)."""
    base = unlinked_dir(project_path, name) if unlinked else name_dir(project_path, name)
    return sorted(n for n in _numbers(base) if is_complete(base / version_label(n)))


def list_names(project_path: Path, *, unlinked: bool = False) -> list[str]:
    """The artifact names of a project with at least one complete version, sorted."""
    base = artifacts_dir(project_path) / UNLINKED if unlinked else artifacts_dir(project_path)
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return sorted(n for n in names if not n.startswith(".")
                  and list_versions(project_path, n, unlinked=unlinked))


def latest_version(project_path: Path, name: str) -> int | None:
    """The highest complete, linked version, or None."""
    versions = list_versions(project_path, name)
    return versions[-1] if versions else None


def _move(project_path: Path, name: str, number: int, *, to_unlinked: bool,
          project: str | None = None) -> Path:
    src = version_dir(project_path, name, number, unlinked=not to_unlinked)
    dst = version_dir(project_path, name, number, unlinked=to_unlinked)
    label = f"{project + '/' if project else ''}{name}:{version_label(number)}"
    with name_lock(project_path, name):
        if not is_complete(src):
            if is_complete(dst):
                state = "already unlinked" if to_unlinked else "not unlinked"
                where = f" in project {project!r}" if project else f" in {project_path}"
                raise VersionStateError(f"Version {label} is {state}{where}; nothing was moved.")
            raise ArtifactNotFoundError(
                f"Version {label} not found in {project_path}. List the versions with "
                f"'nuboard artifact ls{' ' + project if project else ''}"
                f"{' --unlinked' if not to_unlinked else ''}'.")
        if os.path.lexists(dst):
            raise VersionStateError(
                f"Cannot move version {label}: {dst} is in the way. Move or remove it by hand.")
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(src, dst)          # one atomic step: all or nothing
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise VersionStateError(f"Cannot move version {label}: {dst} is in the way.") from exc
            raise
        fsync_dir(src.parent)
        fsync_dir(dst.parent)
    return dst


def unlink_folder(project_path: Path, name: str, number: int, *, project: str | None = None) -> Path:
    """Move a version folder to artifacts/.unlinked/<name>/; return where it now is.

    project, when given, names the version in the messages ('datasets/x:v3')."""
    return _move(project_path, name, number, to_unlinked=True, project=project)


def restore_folder(project_path: Path, name: str, number: int, *, project: str | None = None) -> Path:
    """Move an unlinked version folder back; return where it now is."""
    return _move(project_path, name, number, to_unlinked=False, project=project)
