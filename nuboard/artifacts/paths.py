"""Where a version's files are: how a reference's path is stored, and found again on use.

A reference is stored as one of three bases:
  'project'     relative to the project folder (runs/<run>/files/best.pt), so the project can move;
  'filesystem'  an absolute path, or one with ${VAR}s ('${NUBOARD_DATA_DIR}/fineweb-edu/2026-10'),
                expanded on the machine that uses it;
  'version'     a copy: 'files' inside the version folder.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from nuboard.errors import InvalidArgumentError

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
    raise InvalidArgumentError(f"manifest location base {base!r} is not one of project, filesystem, version.")
