"""The catalog writes the faces make besides the sync: removing runs' rows (`nuboard rm`) and
mirroring saved views into the `views` table (the viewer, for `nuboard sql`)."""
from __future__ import annotations

import json

from sqlalchemy import delete

from .sync_artifacts import delete_run_links
from .tables import runs, views


def delete_runs(catalog, run_ids: list[str]) -> None:
    """Delete these runs' rows (their tags, config and scalars go with them) and their lineage
    'run' edges, in one transaction."""
    with catalog.writer.begin() as conn:
        conn.execute(delete(runs).where(runs.c.project_id == catalog.project_id,
                                        runs.c.run_id.in_(run_ids)))
        delete_run_links(conn, catalog.project, run_ids)


def mirror_views(catalog, saved: list[dict]) -> None:
    """Replace the project's rows of the `views` table by these saved views, in one transaction."""
    with catalog.writer.begin() as conn:
        conn.execute(delete(views).where(views.c.project_id == catalog.project_id))
        for v in saved:
            conn.execute(views.insert().values(
                project_id=catalog.project_id, name=v["name"], query=v.get("query") or "",
                columns=json.dumps(v.get("columns") or []),
                sort=("-" if v.get("desc") else "") + (v.get("sort") or "start")))
