"""The reads of the `media_keys` table that the faces make (the run page's Media tab, the
Charts page's media panels, `nuboard ls --json`, nb.media): which media keys each run logged, of what
kind, how many entries and over which steps, so a page knows what to draw before it reads a
log. Each function opens one reader connection and returns plain dicts.
"""
from __future__ import annotations

from sqlalchemy import select

from .tables import media_keys as media_table
from .tables import runs

ID_CHUNK = 500                   # ids per IN (...) list, under SQLite's bound-parameter limit


def _entry(row) -> dict:
    return {"kind": row.kind, "count": int(row.count),
            "first_step": None if row.first_step is None else int(row.first_step),
            "last_step": None if row.last_step is None else int(row.last_step)}


def media_keys(catalog, run_ids: list[str], rank: int = 0) -> dict[str, dict[str, dict]]:
    """Each run's media keys on `rank`, by run id (its folder name) then key, in key order:
    {'kind' (image, histogram, text, table or audio), 'count', 'first_step', 'last_step'}.
    Every run id given has a dict: empty when the run logged no media on that rank, or the
    catalog does not hold it."""
    out: dict[str, dict[str, dict]] = {r: {} for r in run_ids}
    ids = list(out)
    with catalog.reader.connect() as conn:
        for i in range(0, len(ids), ID_CHUNK):
            for row in conn.execute(
                    select(runs.c.run_id, media_table.c.key, media_table.c.kind,
                           media_table.c.count, media_table.c.first_step, media_table.c.last_step)
                    .join(runs, runs.c.id == media_table.c.run)
                    .where(runs.c.project_id == catalog.project_id,
                           runs.c.run_id.in_(ids[i:i + ID_CHUNK]), media_table.c.rank == rank)
                    .order_by(runs.c.run_id, media_table.c.seq)):
                out[row.run_id][row.key] = _entry(row)
    return out


def run_media_keys(catalog, run_id: str, rank: int = 0) -> dict[str, dict]:
    """One run's media keys on `rank`, in key order: {key: {'kind', 'count', 'first_step',
    'last_step'}}; empty when it logged none or the catalog does not hold it."""
    return media_keys(catalog, [run_id], rank)[run_id]

