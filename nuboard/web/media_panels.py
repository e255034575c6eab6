"""Media panels: one per media key, for the runs of the Charts page or of a run's Media tab.

The page lists the keys (media_context: the catalog's media_keys index, no log read) and each
panel loads itself when scrolled to (htmx): `/.media` gives the panel (its step slider and what
each run shows at the slider's step), `/.media/step` the part under the slider as it moves,
`/.media/table` one page of a run's table (sorted), and `/api/.../.media/distribution` a
histogram key's percentile bands over steps, which static/media.js draws. Each is read from
the runs' logs (media_entries.MediaCache: records only, never an image decoded); a table or a
long text's file is read only for the step shown. Every HTML route has its JSON twin.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from flask import Blueprint, abort, render_template, request, url_for

from nuboard.catalog import run_reads
from nuboard.errors import NuBoardError
from nuboard.eventlog.media_read import MediaEntry, load_value
from nuboard.files import layout
from nuboard.files.names import check_folder_name

from .charts import chosen_runs
from .context import load_project, project_catalog, root_dir, wants_json
from .media_bands import PERCENTILES, distribution
from .media_entries import entries_at, nearest_step, slider_step, union_steps
from .media_files import media_url_path
from .media_section import media_cache
from .media_tables import table_page
from .run_colours import project_colours

media = Blueprint("media", __name__)
media.url_value_preprocessor(load_project)
MAX_PER_STEP = 16           # entries of one run at one step shown (the rest counted)
TEXT_CHARS = 100_000        # a text's characters shown (the whole one: its file)
FOLD_CHARS = 400            # a text longer than this, or of more lines, is folded
FOLD_LINES = 8
MAX_KEY_CHARS = 1000


def run_label(run_id: str, name: str | None) -> str:
    """A run as the panels name it: as the Charts page's run list does, 'name (id tail)'."""
    return f"{name} ({run_id[-8:]})" if name else run_id


# -- the request's arguments ----------------------------------------------------------------

def _int_arg(name: str) -> int | None:
    text = request.args.get(name)
    if text in (None, ""):
        return None
    body = text[1:] if text.startswith("-") else text
    if not (body.isascii() and body.isdigit()) or len(body) > 18:
        abort(400, description=f"{name}={text!r}: give a whole number.")
    return int(text)


def _key_arg() -> str:
    key = request.args.get("key", "")
    if not key or len(key) > MAX_KEY_CHARS:
        abort(400, description="key: give the media key, such as val/samples.")
    return key


def _rank_arg() -> int:
    rank = _int_arg("rank")
    if rank is not None and rank < 0:
        abort(400, description=f"rank={rank}: give a rank, 0 or more.")
    return rank or 0


def existing_runs(project: str, ids: list[str]) -> list[str]:
    """The ids that name a run folder of the project (others are left out, as a page leaves
    out a run deleted since it was drawn)."""
    found = []
    for run_id in ids:
        try:
            check_folder_name(run_id, "run id")
        except NuBoardError:
            continue
        if os.path.lexists(layout.run_dir(root_dir(), project, run_id) / layout.RUN_JSON):
            found.append(run_id)
    return found


def _runs(project: str) -> list[dict]:
    """The runs asked for (?runs=, as the Charts page takes them) that have a folder here,
    each {"id", "label", "colour", "live"}; the catalog names them (a run it does not hold yet:
    its id) and says which still run (live: the panel asks again while one does)."""
    ids = existing_runs(project, chosen_runs(project))
    rows = run_reads.runs_by_id(project_catalog(), ids, ("run_id", "name", "status"))
    colours = project_colours(project)
    return [{"id": r, "label": run_label(r, (rows.get(r) or {}).get("name")),
             "colour": colours.run(r), "live": (rows.get(r) or {}).get("status") == "running"}
            for r in ids]


# -- entries as the templates show them -----------------------------------------------------

def _file_url(project: str, run_id: str, record_file) -> str | None:
    sub = media_url_path(record_file)
    if sub is None:
        return None
    return url_for("media_files.file", project=project, run_id=run_id, sub=sub)


def _text_view(entry: MediaEntry) -> dict:
    text = entry.value
    error = None
    if text is None:
        try:
            text = load_value(entry)
        except (OSError, ValueError) as exc:
            text, error = "", f"its file cannot be read ({exc})"
    chars = len(text)
    shown = text[:TEXT_CHARS]
    folded = len(shown) > FOLD_CHARS or shown.count("\n") >= FOLD_LINES
    head = shown.split("\n", 1)[0][:160] if folded else ""
    return {"text": shown, "chars": chars, "cut": chars > TEXT_CHARS, "folded": folded,
            "head": head, "error": error}


def entry_view(project: str, run_id: str, entry: MediaEntry) -> dict:
    """One entry as a panel shows it, by kind: an image's or audio's URL and size, a
    histogram's counts and edges, a text (folded when long), a table's size."""
    record = entry.record
    view = {"step": entry.step, "wall_time": entry.wall_time, "kind": entry.kind,
            "caption": entry.caption, "url": _file_url(project, run_id, record.get("file"))}
    if entry.kind == "image":
        view.update(width=entry.width, height=entry.height, format=record.get("format"))
    elif entry.kind == "histogram":
        view["histogram"] = entry.value
    elif entry.kind == "text":
        view.update(_text_view(entry))
    elif entry.kind == "table":
        view.update(rows=record.get("rows"), columns=record.get("columns"))
    elif entry.kind == "audio":
        frames, rate = record.get("frames"), entry.sample_rate
        seconds = frames / rate if isinstance(frames, int) and rate else None
        view.update(sample_rate=rate, channels=record.get("channels"), frames=frames,
                    seconds=seconds)
    return view


def panel_data(project: str, runs: list[dict], key: str, rank: int, *, index: int | None,
               step: int | None) -> dict:
    """A panel at a step: {"key", "kind", "steps" (the union of the runs' steps), "step",
    "index" (the step's place among steps, for the slider), "runs": [{"run", "label",
    "colour", "step" (the one it shows, nearest_step), "entries": [entry_view...], "more"}]}."""
    cache, root = media_cache(), root_dir()
    per_run = [(run, cache.by_key(layout.run_dir(root, project, run["id"]), rank).get(key, []))
               for run in runs]
    steps = union_steps([[e.step for e in entries] for _, entries in per_run])
    kind = next((entries[0].kind for _, entries in per_run if entries), None)
    at = slider_step(steps, index, step)
    cells = []
    for run, entries in per_run:
        shown = nearest_step([e.step for e in entries], at) if at is not None else None
        found = entries_at(entries, shown) if shown is not None else []
        cells.append({"run": run["id"], "label": run["label"], "colour": run["colour"],
                      "step": shown, "more": max(0, len(found) - MAX_PER_STEP),
                      "entries": [entry_view(project, run["id"], e) for e in found[:MAX_PER_STEP]]})
    index_at = nearest_step(steps, at) if at is not None else None
    return {"key": key, "kind": kind, "rank": rank, "steps": steps, "step": at,
            "index": steps.index(index_at) if index_at is not None else None, "runs": cells}


def _urls(project: str, runs: list[dict], key: str, rank: int, anchor: str) -> dict:
    """The panel's URLs (itself at its last step, slider, distribution, tables) for its template."""
    query = {"project": project, "runs": ",".join(r["id"] for r in runs), "key": key, "rank": rank}
    return {"panel": url_for("media.panel", **query, anchor=anchor),
            "step": url_for("media.step", **query),
            "distribution": url_for("media.distribution_json", **query),
            "table": url_for("media.table", project=project, key=key, rank=rank)}


# -- routes ---------------------------------------------------------------------------------

@media.get("/p/<project:project>/.media")
@media.get("/p/<project:project>/.media/step", endpoint="step")
@media.get("/api/p/<project:project>/.media", endpoint="panel_json")
def panel(project: str):
    """A media key's panel for ?runs= at ?step= (or the ?i=-th step of the union; default
    the last), as HTML (the whole panel, or from /.media/step the part under its slider)
    or JSON (panel_data)."""
    runs, key, rank = _runs(project), _key_arg(), _rank_arg()
    data = panel_data(project, runs, key, rank, index=_int_arg("i"), step=_int_arg("step"))
    if wants_json():
        return data
    if data["kind"] == "table":
        for cell in data["runs"]:
            for n, entry in enumerate(cell["entries"][:1]):
                entry["table"] = _table(project, cell["run"], key, rank, cell["step"], n)
    template = "_media_step.html" if request.endpoint == "media.step" else "_media_panel.html"
    anchor = _anchor()
    return render_template(template, project=project, panel=data,
                           urls=_urls(project, runs, key, rank, anchor), anchor=anchor,
                           live=any(r["live"] for r in runs))


def _anchor() -> str:
    """The id of the panel's figure (?anchor=, as the section names it: media-<n>), which
    the slider's target is named from; 'media-panel' for anything else."""
    anchor = request.args.get("anchor", "")
    return anchor if re.fullmatch(r"media-[0-9]{1,6}", anchor) else "media-panel"


def _table(project: str, run_id: str, key: str, rank: int, step: int, n: int, *,
           sort: int | None = None, desc: bool = False, page: int = 0) -> dict:
    """A run's table at a step (its n-th entry there) as table_page gives one page of it, with
    what the template's links need; {"error": ...} when it cannot be read."""
    folder = layout.run_dir(root_dir(), project, run_id)
    entries = entries_at(media_cache().by_key(folder, rank).get(key, []), step)
    if not 0 <= n < len(entries) or entries[n].kind != "table":
        abort(404, description=f"Run {run_id!r} has no table {key!r} at step {step}.")
    base = Path(os.path.abspath(folder))

    def image_url(path: str) -> str | None:
        """An image cell's absolute path (under the run folder, as load_value gives it) as
        the URL of the file route, which checks it again."""
        try:
            rel = Path(path).relative_to(base).as_posix()
        except ValueError:
            return None
        return _file_url(project, run_id, rel)

    try:
        table = load_value(entries[n])
    except (OSError, ValueError) as exc:
        return {"error": f"The table's file cannot be read ({exc}).", "run": run_id, "step": step}
    shown = table_page(table, sort=sort, desc=desc, page=page, image_url=image_url)
    shown.update(run=run_id, key=key, step=step, n=n, rank=rank)
    return shown


@media.get("/p/<project:project>/.media/table")
@media.get("/api/p/<project:project>/.media/table", endpoint="table_json")
def table(project: str):
    """One page of a run's table: ?run=, ?key=, ?step=, ?n= (which entry at that step, from
    0), ?sort= (a column's index), ?desc=1, ?page= (from 0)."""
    run_id, key, rank = request.args.get("run", ""), _key_arg(), _rank_arg()
    if not existing_runs(project, [run_id]):
        abort(404, description=f"Run {run_id!r} not found in project {project!r}.")
    step = _int_arg("step")
    if step is None:
        abort(400, description="step: give the step of the table.")
    shown = _table(project, run_id, key, rank, step, _int_arg("n") or 0, sort=_int_arg("sort"),
                   desc=request.args.get("desc") == "1", page=_int_arg("page") or 0)
    if wants_json():
        return shown
    return render_template("_media_table.html", project=project, table=shown,
                           table_url=url_for("media.table", project=project, key=key, rank=rank))


@media.get("/api/p/<project:project>/.media/distribution", endpoint="distribution_json")
def distribution_json(project: str):
    """A histogram key's distribution per run: {"key", "percentiles", "runs": [{"run", "label",
    "colour", "steps", "bands"}]} (media_bands.distribution; runs without it left out)."""
    runs, key, rank = _runs(project), _key_arg(), _rank_arg()
    cache, root = media_cache(), root_dir()

    def shape_of(grouped: dict) -> dict | None:
        entries = [e for e in grouped.get(key, [])
                   if e.kind == "histogram" and isinstance(e.value, dict)]
        return distribution([e.step for e in entries], [e.value for e in entries]) if entries else None

    out = []
    for run in runs:
        shape = cache.derived(layout.run_dir(root, project, run["id"]), rank, ("distribution", key),
                              shape_of)
        if shape is not None:
            out.append({"run": run["id"], "label": run["label"], "colour": run["colour"], **shape})
    return {"key": key, "percentiles": list(PERCENTILES), "runs": out}
