"""Projects under the root, as the command line finds and names them."""
from __future__ import annotations

from pathlib import Path

from nuboard.errors import NuBoardError
from nuboard.files import layout
from nuboard.files.layout import SKIP_INSIDE_PROJECT, find_projects  # noqa: F401 (the commands' import)
from nuboard.files.names import check_project


class ProjectNotFoundError(NuBoardError, ValueError):
    """A project named on the command line has no folder with runs under the root."""


class RootNotFoundError(NuBoardError, ValueError):
    """The experiments root does not exist."""


def check_root(root: Path) -> None:
    """Raise RootNotFoundError, saying what to do, when the root is not a folder."""
    if not root.is_dir():
        raise RootNotFoundError(
            f"No experiments folder {str(root)!r}: pass --dir DIR or set NUBOARD_DIR to the folder "
            "that holds your projects.")


def _known(root: Path) -> str:
    names = find_projects(root) if root.is_dir() else []
    if not names:
        return f"there are no projects under {str(root)!r}"
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f"projects under {str(root)!r}: {shown}"


def check_project_exists(root: Path, project: str) -> str:
    """The project's name, checked: a valid name whose folder has `runs/` or `artifacts/`."""
    check_root(root)
    project = check_project(project)
    if not layout.runs_dir(root, project).is_dir() and \
            not (layout.project_dir(root, project) / "artifacts").is_dir():
        raise ProjectNotFoundError(
            f"Project {project!r} not found: there is no folder "
            f"{str(layout.runs_dir(root, project))!r} ({_known(root)}). "
            "Check the name, or pass --dir DIR.")
    return project


def pick_project(root: Path, project: str | None) -> str:
    """The project named, or the only project under root (else an error listing them)."""
    if project is not None:
        return check_project_exists(root, project)
    check_root(root)
    names = find_projects(root)
    if len(names) == 1:
        return names[0]
    if not names:
        raise ProjectNotFoundError(f"There are no projects under {str(root)!r}: "
                                   "pass --dir DIR or set NUBOARD_DIR.")
    raise ProjectNotFoundError(f"Several projects under {str(root)!r}; pass --project with one "
                               f"of them ({_known(root)}).")


def open_catalog(root: Path, project: str):
    """The project's Catalog (opened, migrated), imported here so the CLI starts fast."""
    from nuboard.catalog.project_catalog import Catalog
    return Catalog(root, project)
