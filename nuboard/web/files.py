"""A run's folder, browsable: listings, text previews and downloads, never outside the folder.

Every path is checked by `containment` on its decoded real path, and files are opened from
the run folder one segment at a time without following links. Downloads are attachments with
`nosniff` and a CSP that runs nothing, so an .html or .svg a run saved is never rendered.
A PNG, JPEG or WAV whose first bytes agree with its extension (media_files.content_type) is
previewed: shown from `?inline=1`, sent as its own type with the same nosniff and CSP.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import quote

from flask import Blueprint, Response, abort, render_template, request

from nuboard.catalog.project_catalog import CATALOG_UNAVAILABLE
from nuboard.files import layout

from . import security
from .containment import OutsideError, clean_parts, is_regular, open_inside, resolve_inside
from .context import is_fragment, load_project, root_dir, tab_overview, wants_json
from .media_files import content_type
from .run_colours import project_colours

files = Blueprint("files", __name__)
files.url_value_preprocessor(load_project)
MAX_ENTRIES = 5000      # entries of one JSON answer
PAGE = 1000             # entries the Files tab shows at a time (then "Show more")
PREVIEW_LIMIT = 256 * 1024
CHUNK = 256 * 1024


def _resolve(project: str, run_id: str, sub: str) -> tuple[Path, Path]:
    base = layout.run_dir(root_dir(), project, run_id)
    try:
        return base, resolve_inside(base, sub)
    except (OutsideError, OSError):           # OSError: a name too long for the system
        abort(404, description="No such file in this run's folder.")


def _is_dir(path: Path) -> bool:
    """Whether path is a folder; False for a name the system refuses (too long)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def listing(project: str, run_id: str, sub: str, offset: int = 0,
            limit: int = MAX_ENTRIES) -> dict:
    """Up to `limit` entries of a folder of the run from `offset` (folders first, then by
    name): name, kind, size, and whether it is a link; with how many there are in all
    (`total`, of which `folders`, and `noun`, what they are), where the next ones start
    (`next`, None at the end) and how many come after these (`more`)."""
    base, real = _resolve(project, run_id, sub)
    if not _is_dir(real):
        abort(404, description="No such folder in this run's folder.")
    entries = []
    try:
        scanned = sorted(((not e.is_dir(follow_symlinks=False), e.name, e)
                          for e in os.scandir(real)), key=lambda t: t[:2])
    except OSError as exc:
        abort(404, description=f"The folder cannot be read ({exc.strerror}).")
    for _, _, entry in scanned[offset:offset + limit]:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        is_link = stat.S_ISLNK(st.st_mode)
        entries.append({"name": entry.name, "dir": stat.S_ISDIR(st.st_mode), "link": is_link,
                        "size": None if is_link else st.st_size, "mtime": st.st_mtime})
    parts = clean_parts(sub) if sub else []
    end = min(len(scanned), offset + limit)
    folders = sum(1 for t in scanned if not t[0])
    return {"path": "/".join(parts), "parts": parts, "entries": entries,
            "offset": offset, "next": end if end < len(scanned) else None,
            "more": len(scanned) - end, "total": len(scanned),
            "folders": folders, "noun": _noun(len(scanned), folders)}


def _noun(total: int, folders: int) -> str:
    """What `total` entries are, for "450 files" and "Show more (120 of 450 files shown)"."""
    if not folders:
        return "file" if total == 1 else "files"
    if folders == total:
        return "folder" if total == 1 else "folders"
    return "files and folders"


def offset_arg() -> int:
    """The ?offset= of a listing: a whole number, 0 or more (else 400)."""
    text = request.args.get("offset", "0")
    if not (text.isascii() and text.isdigit()) or len(text) > 12:
        abort(400, description=f"offset must be a whole number of entries, 0 or more, not {text!r}.")
    return int(text)


def page_listing(project: str, run_id: str, sub: str) -> dict:
    """What the Files tab lists: the first PAGE entries, or, with ?offset=N, every entry up to
    the page after N (so that a link to Show more without JavaScript shows what it says)."""
    return listing(project, run_id, sub, 0, offset_arg() + PAGE)


@files.get("/p/<project:project>/.run/<run_id>/files/")
@files.get("/p/<project:project>/.run/<run_id>/files/<path:sub>")
def browse(project: str, run_id: str, sub: str = ""):
    base, real = _resolve(project, run_id, sub)
    if _is_dir(real):
        if wants_json():
            return listing(project, run_id, sub, offset_arg())
        if is_fragment() and "offset" in request.args:      # Show more: the next rows only
            return render_template("_run_files_rows.html", project=project, run_id=run_id,
                                   listing=listing(project, run_id, sub, offset_arg(), PAGE))
        return render_template("run.html", project=project, run=tab_overview(project, run_id),
                               tab="files", listing=page_listing(project, run_id, sub),
                               run_colour=_run_colour(project, run_id))
    if request.args.get("download") == "1":
        return _download(base, real)
    if request.args.get("inline") == "1":
        return _download(base, real, inline=True)
    fd = _open(base, real)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(PREVIEW_LIMIT)
    shown = content_type(real.name, head[:16])
    shown = shown if shown is not None and not shown.startswith("text/") else None
    text = None if shown or b"\x00" in head[:8192] else head.decode("utf-8", errors="replace")
    info = {"path": "/".join(clean_parts(sub)), "size": size, "text": text,
            "cut": size > PREVIEW_LIMIT, "media_type": shown}
    if wants_json():
        return info
    return render_template("run.html", project=project, run=tab_overview(project, run_id),
                           tab="files", file=info, listing=None,
                           run_colour=_run_colour(project, run_id))


def _run_colour(project: str, run_id: str) -> str | None:
    """The run's colour for the header's colour box; None while the catalog cannot be read, so
    the Files tab, which reads only the run folder, still answers (without the box)."""
    try:
        return project_colours(project).run(run_id)
    except CATALOG_UNAVAILABLE:
        return None


@files.get("/api/p/<project:project>/.run/<run_id>/files/")
@files.get("/api/p/<project:project>/.run/<run_id>/files/<path:sub>")
def browse_json(project: str, run_id: str, sub: str = ""):
    return listing(project, run_id, sub, offset_arg())


def _open(base: Path, real: Path) -> int:
    try:
        fd = open_inside(base, real)
    except (OutsideError, OSError):
        abort(404, description="No such file in this run's folder.")
    if not is_regular(fd):
        os.close(fd)
        abort(404, description="Not a file.")
    return fd


def _download(base: Path, real: Path, inline: bool = False) -> Response:
    """The file as an attachment; with inline, as its own type where it is a PNG, JPEG or WAV
    whose first bytes agree (content_type), else as the attachment still."""
    fd = _open(base, real)
    size = os.fstat(fd).st_size
    shown = None
    if inline:
        head = os.pread(fd, 16, 0)
        shown = content_type(real.name, head)
        shown = shown if shown is not None and not shown.startswith("text/") else None

    def chunks():
        with os.fdopen(fd, "rb") as fh:
            while True:
                block = fh.read(CHUNK)
                if not block:
                    return
                yield block

    name = real.name
    ascii_name = "".join(c if 32 < ord(c) < 127 and c not in '"\\;' else "_" for c in name)
    response = Response(chunks(), mimetype=shown or "application/octet-stream")
    response.headers["Content-Length"] = str(size)
    response.headers["Content-Disposition"] = (
        f"{'inline' if shown else 'attachment'}; filename=\"{ascii_name}\"; "
        f"filename*=UTF-8''{quote(name, safe='')}")
    response.headers["Content-Security-Policy"] = security.DOWNLOAD_CSP
    response.headers["Cache-Control"] = "no-store"
    return response
