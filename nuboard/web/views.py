"""Saved views: a name for a query, its columns, its sort and its chart selection.

They live in the project's `views.json` (so they travel with the project), replaced
atomically under a lock; the catalog's `views` table mirrors them for SQL.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

from .. import layout
from ..errors import NuBoardError
from ..catalog.engine import file_lock
from ..jsonfile import write_json_atomic

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
    try:
        doc = json.loads(views_path(root, project).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    views = doc.get("views") if isinstance(doc, dict) else None
    return [v for v in views if isinstance(v, dict) and isinstance(v.get("name"), str)] \
        if isinstance(views, list) else []


def find_view(root: Path, project: str, name: str) -> dict | None:
    return next((v for v in read_views(root, project) if v["name"] == name), None)


def make_view(name: str, query: str, columns: list[str], sort: str, desc: bool,
              runs: list[str], x: str = "step") -> dict:
    """A view checked: a name of 1-100 characters without control characters, bounded parts."""
    name = name.strip()
    if not name or len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise ViewError(f"view name {name[:40]!r} is not allowed: give 1-{MAX_NAME} characters, "
                        "no line breaks.")
    if len(query) > MAX_QUERY:
        raise ViewError(f"the query is too long to save ({len(query)} characters, at most "
                        f"{MAX_QUERY}).")
    if len(runs) > MAX_RUNS:
        raise ViewError(f"too many runs selected to save ({len(runs)}, at most {MAX_RUNS}).")
    return {"name": name, "query": query, "columns": list(columns), "sort": sort,
            "desc": bool(desc), "runs": list(runs), "x": x}


def save_view(root: Path, project: str, view: dict) -> list[dict]:
    """Add the view, or replace the one of the same name; return every view."""
    path = views_path(root, project)
    with _writing(path):
        views = [v for v in read_views(root, project) if v["name"] != view["name"]]
        if len(views) >= MAX_VIEWS:
            raise ViewError(f"project {project!r} has {len(views)} saved views, the most it "
                            "keeps; delete some first.")
        views.append(view)
        write_json_atomic(path, {"format": 1, "views": views})
    return views


def delete_view(root: Path, project: str, name: str) -> bool:
    path = views_path(root, project)
    with _writing(path):
        views = read_views(root, project)
        kept = [v for v in views if v["name"] != name]
        if len(kept) == len(views):
            return False
        write_json_atomic(path, {"format": 1, "views": kept})
    return True


def index_views(catalog, views: list[dict]) -> None:
    """Mirror the saved views into the catalog's `views` table (for `nuboard sql`)."""
    from sqlalchemy import delete
    from ..catalog.tables import views as table
    with catalog.writer.begin() as conn:
        conn.execute(delete(table).where(table.c.project_id == catalog.project_id))
        for v in views:
            conn.execute(table.insert().values(
                project_id=catalog.project_id, name=v["name"], query=v.get("query") or "",
                columns=json.dumps(v.get("columns") or []),
                sort=("-" if v.get("desc") else "") + (v.get("sort") or "start")))


@contextlib.contextmanager
def _writing(path: Path):
    """views.json's lock held while it is read and replaced; a folder that cannot be written
    is one clear ViewError, and views.json stays as it was."""
    try:
        with file_lock(path.with_name(".views.json.lock")):
            yield
    except OSError as exc:
        raise ViewError(f"cannot save views in {str(path.parent)!r} ({exc.strerror or exc}): "
                        "the project folder must be writable.") from None
