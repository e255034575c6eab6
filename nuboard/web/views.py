"""Saved views: a name for a query, its columns (in their order, with the widths a user gave
them), its sort, its grouping key and its chart selection.

They live in the project's `views.json` (so they travel with the project), replaced
atomically under a lock; the catalog's `views` table mirrors them for SQL.
"""
from __future__ import annotations

from pathlib import Path

from nuboard.catalog.run_groups import check_group_key
from nuboard.catalog.run_writes import mirror_views
from nuboard.errors import NuBoardError
from nuboard.files import documents, layout
from nuboard.files.jsonfile import replacing, write_json_atomic

from . import runs_shape

VIEWS_FILE = "views.json"
MAX_VIEWS = 500
MAX_NAME = 100
MAX_QUERY = 10_000
MAX_RUNS = 200


class ViewError(NuBoardError, ValueError):
    """A saved view that cannot be kept as given."""


def views_path(root: Path, project: str) -> Path:
    return layout.project_dir(root, project) / VIEWS_FILE


def read_views(root: Path, project: str) -> list[dict]:
    """The project's saved views, in the order they were saved; [] when none or unreadable."""
    return read_views_noted(root, project)[0]


def read_views_noted(root: Path, project: str) -> tuple[list[dict], str | None]:
    """The usable saved views, and a note saying what of views.json was ignored (or None).

    views.json is read with its kind's rules (documents.VIEWS: a regular file of at most 16 MB,
    nested at most 100 levels, JSON without a lone surrogate escape); a file that breaks them
    or is not of the shape {"views": [{"name": str, ...}]}, and each view whose parts have the
    wrong types, is ignored, never an error. A part that is null is taken as absent.
    """
    path = views_path(root, project)
    try:
        doc = documents.read_document(path, documents.VIEWS)
    except FileNotFoundError:
        return [], None
    except (OSError, ValueError) as exc:
        why = documents.unreadable_reason(exc, documents.VIEWS)
        return [], f"{VIEWS_FILE} cannot be read ({why}); its saved views are ignored."
    views = doc.get("views") if isinstance(doc, dict) else None
    if not isinstance(views, list):
        return [], f"{VIEWS_FILE} is not of the shape {{\"views\": [...]}}; it is ignored."
    views = [{k: v for k, v in view.items() if v is not None} if isinstance(view, dict) else view
             for view in views]                  # "runs": null is no runs, not a 500
    problems = [view_problem(v) for v in views]
    kept = [v for v, problem in zip(views, problems) if problem is None]
    bad = [problem for problem in problems if problem is not None]
    if not bad:
        return kept, None
    return kept, (f"{len(bad)} saved view(s) in {VIEWS_FILE} are ignored (the first: {bad[0]}).")


_VIEW_TYPES = {"name": str, "query": str, "sort": str, "desc": bool, "x": str,
               "columns": list, "runs": list, "group": str, "widths": dict}


def view_problem(view) -> str | None:
    """Why one entry of views.json is not a usable view (None when it is)."""
    if not isinstance(view, dict):
        return f"{view!r:.40} is not an object"
    if not isinstance(view.get("name"), str):
        return "a view has no name"
    for key, kind in _VIEW_TYPES.items():
        value = view.get(key)
        if value is not None and not isinstance(value, kind):
            return f"view {view['name'][:40]!r} has {key} {value!r:.40}"
        if kind is list and value is not None and not all(isinstance(v, str) for v in value):
            return f"view {view['name'][:40]!r} has {key} that are not all strings"
    for column, px in (view.get("widths") or {}).items():
        problem = runs_shape.width_problem(column, px)
        if problem:
            return f"view {view['name'][:40]!r}: {problem}"
    if view.get("group") and not check_group_key(view["group"]):
        return f"view {view['name'][:40]!r} has group {view['group']!r:.40}"
    return None


def find_view(root: Path, project: str, name: str) -> dict | None:
    return next((v for v in read_views(root, project) if v["name"] == name), None)


def make_view(name: str, query: str, columns: list[str], sort: str, desc: bool,
              runs: list[str], x: str = "step", *, widths: dict[str, int] | None = None,
              group: str = "") -> dict:
    """A view checked: a name of 1-100 characters without control characters, bounded parts.

    columns: the Runs table's columns in the order shown; widths: {column: px} of those a
    user resized (runs_shape.check_widths); group: the key its rows are grouped by, or ''."""
    name = name.strip()
    if not name or len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise ViewError(f"view name {name[:40]!r} is not allowed: give 1-{MAX_NAME} characters, "
                        "no line breaks.")
    if len(query) > MAX_QUERY:
        raise ViewError(f"the query is too long to save ({len(query)} characters, at most "
                        f"{MAX_QUERY}).")
    if len(runs) > MAX_RUNS:
        raise ViewError(f"too many runs selected to save ({len(runs)}, at most {MAX_RUNS}).")
    try:
        widths = runs_shape.check_widths(dict(widths or {}))
        group = runs_shape.check_group(group)
    except runs_shape.ShapeError as exc:
        raise ViewError(str(exc)) from None
    return {"name": name, "query": query, "columns": list(columns), "sort": sort,
            "desc": bool(desc), "runs": list(runs), "x": x, "widths": widths, "group": group}


def save_view(root: Path, project: str, view: dict) -> list[dict]:
    """Add the view, or replace the one of the same name; return every view."""
    path = views_path(root, project)
    with replacing(path, ViewError, "save views"):
        views, note = read_views_noted(root, project)
        if note is not None and not views and path.exists():
            raise ViewError(f"{note} Fix or remove {str(path)!r} to save views.")
        views = [v for v in views if v["name"] != view["name"]]
        if len(views) >= MAX_VIEWS:
            raise ViewError(f"project {project!r} has {len(views)} saved views, the most it "
                            "keeps; delete some first.")
        views.append(view)
        write_json_atomic(path, {"format": 1, "views": views})
    return views


def delete_view(root: Path, project: str, name: str) -> bool:
    path = views_path(root, project)
    with replacing(path, ViewError, "save views"):
        views = read_views(root, project)
        kept = [v for v in views if v["name"] != name]
        if len(kept) == len(views):
            return False
        write_json_atomic(path, {"format": 1, "views": kept})
    return True


def index_views(catalog, views: list[dict]) -> None:
    """Mirror the saved views into the catalog's `views` table (for `nuboard sql`)."""
    mirror_views(catalog, views)
