"""A run's folder, browsable: listings, text previews and downloads, never outside the folder.

Every path is checked by `containment` on its decoded real path, and files are opened from
the run folder one segment at a time without following links. Downloads are attachments with
`nosniff` and a CSP that runs nothing, so an .html or .svg a run saved is never rendered.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import quote

from flask import Blueprint, Response, abort, render_template, request

from nuboard.files import layout

from . import security
from .containment import OutsideError, clean_parts, is_regular, open_inside, resolve_inside
from .context import load_project, root_dir, tab_overview, wants_json

files = Blueprint("files", __name__)
files.url_value_preprocessor(load_project)
MAX_ENTRIES = 5000
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


def listing(project: str, run_id: str, sub: str) -> dict:
    """The entries of a folder of the run: name, kind, size, and whether it is a link."""
    base, real = _resolve(project, run_id, sub)
    if not _is_dir(real):
        abort(404, description="No such folder in this run's folder.")
    entries = []
    try:
        scanned = sorted(os.scandir(real), key=lambda e: (not e.is_dir(follow_symlinks=False),
                                                          e.name))
    except OSError as exc:
        abort(404, description=f"The folder cannot be read ({exc.strerror}).")
    for entry in scanned[:MAX_ENTRIES]:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        is_link = stat.S_ISLNK(st.st_mode)
        entries.append({"name": entry.name, "dir": stat.S_ISDIR(st.st_mode), "link": is_link,
                        "size": None if is_link else st.st_size, "mtime": st.st_mtime})
    parts = clean_parts(sub) if sub else []
    return {"path": "/".join(parts), "parts": parts, "entries": entries,
            "more": max(0, len(scanned) - MAX_ENTRIES)}


@files.get("/p/<project:project>/.run/<run_id>/files/")
@files.get("/p/<project:project>/.run/<run_id>/files/<path:sub>")
def browse(project: str, run_id: str, sub: str = ""):
    base, real = _resolve(project, run_id, sub)
    if _is_dir(real):
        found = listing(project, run_id, sub)
        if wants_json():
            return found
        return render_template("run.html", project=project, run=tab_overview(project, run_id),
                               tab="files", listing=found)
    if request.args.get("download") == "1":
        return _download(base, real)
    fd = _open(base, real)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(PREVIEW_LIMIT)
    text = None if b"\x00" in head[:8192] else head.decode("utf-8", errors="replace")
    info = {"path": "/".join(clean_parts(sub)), "size": size, "text": text,
            "cut": size > PREVIEW_LIMIT}
    if wants_json():
        return info
    return render_template("run.html", project=project, run=tab_overview(project, run_id),
                           tab="files", file=info, listing=None)


@files.get("/api/p/<project:project>/.run/<run_id>/files/")
@files.get("/api/p/<project:project>/.run/<run_id>/files/<path:sub>")
def browse_json(project: str, run_id: str, sub: str = ""):
    return listing(project, run_id, sub)


def _open(base: Path, real: Path) -> int:
    try:
        fd = open_inside(base, real)
    except (OutsideError, OSError):
        abort(404, description="No such file in this run's folder.")
    if not is_regular(fd):
        os.close(fd)
        abort(404, description="Not a file.")
    return fd


def _download(base: Path, real: Path) -> Response:
    fd = _open(base, real)
    size = os.fstat(fd).st_size

    def chunks():
        with os.fdopen(fd, "rb") as fh:
            while True:
                block = fh.read(CHUNK)
                if not block:
                    return
                yield block

    name = real.name
    ascii_name = "".join(c if 32 < ord(c) < 127 and c not in '"\\;' else "_" for c in name)
    response = Response(chunks(), mimetype="application/octet-stream")
    response.headers["Content-Length"] = str(size)
    response.headers["Content-Disposition"] = (
        f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}")
    response.headers["Content-Security-Policy"] = security.DOWNLOAD_CSP
    response.headers["Cache-Control"] = "no-store"
    return response
