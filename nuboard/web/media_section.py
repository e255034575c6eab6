"""Which media panels a page shows: the media keys its runs logged, from the catalog's index
(catalog/media_reads.py), so the Charts page and a run's Media tab list their panels without
reading a log; each panel then loads itself (media_panels.py). While the browser loads the
page, a thread reads the runs' media entries into the app's MediaCache, which the panels'
requests then find (or wait for).
"""
from __future__ import annotations

from flask import current_app

from nuboard.catalog.media_reads import media_keys
from nuboard.files import layout

from .context import project_catalog, root_dir
from .media_entries import MediaCache


def media_cache() -> MediaCache:
    """The app's cache of runs' media entries (media_entries.MediaCache)."""
    return current_app.extensions.setdefault("nuboard_media", MediaCache())


def media_context(project: str, runs: list[dict], rank: int = 0) -> dict:
    """What templates/_media_section.html needs: the keys any of these runs logged (the
    catalog's index), each {"key", "kind", "count", "runs" (how many of them logged it)}, in
    key order; and the query the panels' URLs carry. When there are keys, the runs' entries
    are read on a thread meanwhile (MediaCache.warm)."""
    ids = [r["id"] for r in runs]
    keys: dict[str, dict] = {}
    with_media = []
    for run_id, per_run in media_keys(project_catalog(), ids, rank).items():
        if per_run:
            with_media.append(run_id)
        for key, info in per_run.items():
            found = keys.setdefault(key, {"key": key, "kind": info["kind"], "count": 0, "runs": 0})
            found["count"] += info["count"]
            found["runs"] += 1
    if with_media:
        root = root_dir()
        media_cache().warm([layout.run_dir(root, project, r) for r in with_media], rank)
    return {"media_keys": [keys[k] for k in sorted(keys)], "media_runs": ",".join(ids),
            "media_rank": rank}
