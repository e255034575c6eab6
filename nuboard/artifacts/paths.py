"""Where a version's files are: which paths a version may take (never one in or around a
project's artifacts/ folder), how a reference's path is stored, and found again on use.

A reference is stored as one of three bases:
  'project'     relative to the project folder (runs/<run>/files/best.pt), so the project can move;
  'filesystem'  an absolute path, or one with ${VAR}s ('${NUBOARD_DATA_DIR}/fineweb-edu/2026-10'),
                expanded on the machine that uses it;
  'version'     a copy: 'files' inside the version folder;
  'url'         objects in a store ('s3://lab/fineweb/${SNAPSHOT}'), ${VAR}s kept as written:
                not a path on this machine (remote_refs.py; the local copy is object_cache.py).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from nuboard.errors import InvalidArgumentError
from nuboard.files import layout

from .manifest import MANIFEST
from .names import version_of_folder
from .version_folders import ARTIFACTS, UNLINKED

DATA_DIR_VAR = "NUBOARD_DATA_DIR"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def variables_in(text: str) -> list[str]:
    """The environment variables a path names, in order, without duplicates."""
    out: list[str] = []
    for match in _VAR.finditer(text):
        var = match.group(1) or match.group(2)
        if var not in out:
            out.append(var)
    return out


def normalize_variables(text: str) -> str:
    """Write every $VAR as ${VAR}, the form a manifest keeps."""
    return _VAR.sub(lambda m: "${" + (m.group(1) or m.group(2)) + "}", text)


def expand_variables(text: str, environ: "os._Environ[str] | dict | None" = None) -> tuple[str, list[str]]:
    """Expand ${VAR} and $VAR (and a leading ~); return (text, the variables that are unset).

    An unset variable is left as written.
    """
    env = os.environ if environ is None else environ
    unset: list[str] = []

    def sub(match: "re.Match[str]") -> str:
        var = match.group(1) or match.group(2)
        value = env.get(var)
        if value is None or value == "":
            if var not in unset:
                unset.append(var)
            return match.group(0)
        return value

    return os.path.expanduser(_VAR.sub(sub, text)), unset


def is_within(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies inside it (both already resolved)."""
    return path == folder or folder in path.parents


def check_holds_no_versions(given: str, real: Path, project_path: Path, root: Path) -> None:
    """Refuse a path for a new version of `project_path` that would hold versions: one inside a
    project's artifacts/ folder, or one that contains such a folder (the project itself, any
    project under root, root, a folder above it).

    Every project under root counts (nested ones too), the project the version is for even
    before its artifacts/ folder exists; outside root, a version folder of any project
    (artifacts/<name>/v<N>/ with its manifest.json); check_listing_holds_no_versions adds the
    versions a folder's listing reaches through links.

    Raises:
        InvalidArgumentError: naming the path, the artifacts/ folder and the rule.
    """
    top = root.resolve()
    inside = _project_artifacts_around(real, top) or _version_folder_around(real)
    if inside is not None:
        _refuse(given, "is inside", inside)
    own = (project_path / ARTIFACTS).resolve()
    held = own if is_within(own, real) else _project_artifacts_below(real, top)
    if held is not None:
        _refuse(given, "contains", held)


def check_listing_holds_no_versions(given: str, real: Path, listing: list) -> None:
    """Refuse a folder whose listing holds a version's manifest (a folder v<N>/ with a
    manifest.json that is, on its real path, artifacts/<name>/v<N>/ or an unlinked one),
    such as a project of another root, or a link to another project's versions.

    Raises:
        InvalidArgumentError: naming the path, the file and the rule.
    """
    if len(listing) == 1 and not real.is_dir():
        return                          # a file: check_holds_no_versions looked at its folders
    for rel, _ in listing:              # a million paths: one endswith each
        if not rel.endswith("/" + MANIFEST):
            continue
        parts = rel.split("/")
        if version_of_folder(parts[-2]) is None:
            continue
        folder = Path(os.path.realpath(real.joinpath(*parts[:-1])))
        if _is_version_folder(folder.parts):
            _refuse(given, "holds", folder.parents[1 if folder.parts[-3] == ARTIFACTS else 2],
                    f" (its {rel!r} is a version's manifest)")


def _refuse(given: str, how: str, folder: Path, extra: str = "") -> None:
    raise InvalidArgumentError(
        f"path {given!r} {how} the artifacts/ folder {str(folder)!r}{extra}: a version cannot hold "
        "versions, so a path inside a project's artifacts/ folder, or one that contains one (such "
        "as a project folder), is refused. Give the file or folder of the data itself.")


def _is_version_folder(parts: "tuple[str, ...]") -> bool:
    """Whether the path parts end in artifacts/<name>/v<N> or artifacts/.unlinked/<name>/v<N>."""
    if len(parts) < 3 or version_of_folder(parts[-1]) is None:
        return False
    return parts[-3] == ARTIFACTS or (len(parts) >= 4 and parts[-3] == UNLINKED
                                      and parts[-4] == ARTIFACTS)


def _version_folder_around(path: Path) -> Path | None:
    """The artifacts/ folder of the version folder (with its manifest) that holds `path`."""
    for folder in (path, *path.parents):
        if _is_version_folder(folder.parts) and (folder / MANIFEST).is_file():
            return folder.parents[1] if folder.parts[-3] == ARTIFACTS else folder.parents[2]
    return None


def _is_project(folder: Path) -> bool:
    """A project folder, as layout.find_projects tells one: it has runs/ or artifacts/."""
    return (folder / "runs").is_dir() or (folder / ARTIFACTS).is_dir()


def _project_artifacts_around(path: Path, root: Path) -> Path | None:
    """The artifacts/ folder of a project under root that is `path` or holds it, walking from
    root down as layout.find_projects does (not into a project's runs/, nor a dot folder)."""
    if not is_within(path, root) or path == root:
        return None
    here = root
    for part in path.relative_to(root).parts:
        if part.startswith("."):
            return None
        if here != root and _is_project(here):
            if part == ARTIFACTS:
                return here / ARTIFACTS
            if part == "runs":
                return None
        here = here / part
    return None


def _project_artifacts_below(path: Path, root: Path) -> Path | None:
    """The artifacts/ folder (there or not yet) of a project under root that `path` is or
    contains; root itself and a folder above it contain every project."""
    if is_within(root, path):
        found = layout.find_projects(root)
        return root.joinpath(*found[0].split("/"), ARTIFACTS) if found else None
    if not is_within(path, root):
        return None
    here = root
    for part in path.relative_to(root).parts:       # in a project's runs/: no project below
        if part.startswith(".") or (here != root and _is_project(here) and part == "runs"):
            return None
        here = here / part
    if _is_project(path):
        return path / ARTIFACTS
    found = layout.find_projects(path) if path.is_dir() else []
    return path.joinpath(*found[0].split("/"), ARTIFACTS) if found else None


def store_location(given: "str | os.PathLike[str]", real: Path, project_path: Path) -> tuple[str, str]:
    """How a reference to `given` (resolved to `real`) is stored: (base, location).

    Inside the project: relative to it. A path written with ${VAR}: kept as written.
    Under $NUBOARD_DATA_DIR: '${NUBOARD_DATA_DIR}/...'. Anything else: absolute.
    """
    project_real = project_path.resolve()
    if is_within(real, project_real):
        return "project", real.relative_to(project_real).as_posix() if real != project_real else "."
    text = os.fspath(given)
    if _VAR.search(text):
        return "filesystem", normalize_variables(text)
    data_dir = os.environ.get(DATA_DIR_VAR)
    if data_dir:
        data_real = Path(os.path.expanduser(data_dir)).resolve()
        if is_within(real, data_real):
            rel = real.relative_to(data_real).as_posix()
            return "filesystem", "${%s}" % DATA_DIR_VAR + ("" if rel == "." else "/" + rel)
    return "filesystem", os.path.abspath(os.path.expanduser(text))


def resolve_location(base: str, location: str, project_path: Path, version_path: Path
                     ) -> tuple[Path, list[str]]:
    """Where a stored location is on this machine: (path, the variables unset here)."""
    if base == "version":
        return version_path / location, []
    if base == "project":
        return project_path / location, []
    if base == "filesystem":
        text, unset = expand_variables(location)
        return Path(text), unset
    if base == "url":
        raise InvalidArgumentError(f"location {location!r} is in object storage, not on this machine "
                                   "(remote_refs.expand_url gives its URL).")
    raise InvalidArgumentError(f"manifest location base {base!r} is not one of project, filesystem, version, url.")
