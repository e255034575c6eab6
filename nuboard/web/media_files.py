"""Media files served to the media panels: only from a run's media/ folder, with their real type.

`/p/<project>/.run/<run_id>/media/<path>` is `<run folder>/media/<path>`. The path is checked as
the Files tab checks its own (containment: decoded, no '..', its real path inside media/ of the
run's real folder), then opened one segment at a time without following links, and only a
regular file is sent. The type comes from the file's own kind, its extension and its first bytes
agreeing (a PNG, a JPEG, a WAV, UTF-8 text); anything else (a Parquet table, an .html or .svg
planted there, a .png that is not one) goes as an attachment of application/octet-stream. Every
answer says `nosniff` and carries a CSP that runs nothing, so no media file is ever rendered as
HTML or SVG. Range requests are answered (an audio player seeks with them).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from flask import Blueprint, Response, abort, request
from werkzeug.wsgi import wrap_file

from nuboard.files import layout

from . import security
from .containment import OutsideError, clean_parts, is_regular, open_inside
from .context import load_project, root_dir

media_files = Blueprint("media_files", __name__)
media_files.url_value_preprocessor(load_project)
MEDIA = "media"
ATTACHMENT = "application/octet-stream"

# extension -> (content type, the bytes it starts with at an offset), inline when they agree
KINDS: dict[str, tuple[str, tuple[tuple[int, bytes], ...]]] = {
    "png": ("image/png", ((0, b"\x89PNG\r\n\x1a\n"),)),
    "jpg": ("image/jpeg", ((0, b"\xff\xd8\xff"),)),
    "jpeg": ("image/jpeg", ((0, b"\xff\xd8\xff"),)),
    "wav": ("audio/wav", ((0, b"RIFF"), (8, b"WAVE"))),
    "txt": ("text/plain; charset=utf-8", ()),
}


def media_url_path(record_file: str) -> str | None:
    """The part of a record's run-relative file ('media/val/5-0.png') after 'media/', as the
    route takes it; None for a path that is not under media/."""
    if not isinstance(record_file, str) or not record_file.startswith(MEDIA + "/"):
        return None
    rest = record_file[len(MEDIA) + 1:]
    return rest or None


def content_type(name: str, head: bytes) -> str | None:
    """The type to send a file as, inline: its extension's kind when its first bytes are that
    kind's (KINDS); None (send it as an attachment) for any other file."""
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    kind = KINDS.get(ext)
    if kind is None:
        return None
    mimetype, magic = kind
    if all(head[at:at + len(sig)] == sig for at, sig in magic):
        return mimetype
    return None


def _open_media(project: str, run_id: str, sub: str) -> tuple[int, str]:
    """The file's descriptor and name, or 404: inside the run's real media/ folder, reached
    without a link, and a regular file."""
    base = layout.run_dir(root_dir(), project, run_id)
    try:
        parts = clean_parts(sub)
        if not parts:
            raise OutsideError("no file named")
        real_base = Path(os.path.realpath(base))
        real = Path(os.path.realpath(real_base.joinpath(MEDIA, *parts)))
        if real_base / MEDIA not in real.parents:
            raise OutsideError(f"{sub!r} leads outside the run's media folder")
        fd = open_inside(base, real)
    except (OutsideError, OSError):
        abort(404, description="No such media file in this run's folder.")
    if not is_regular(fd):
        os.close(fd)
        abort(404, description="Not a file.")
    return fd, real.name


@media_files.get("/p/<project:project>/.run/<run_id>/media/<path:sub>")
def file(project: str, run_id: str, sub: str):
    """One media file of the run, as its kind (image/png, image/jpeg, audio/wav, text/plain),
    else as an attachment; nosniff, a CSP that runs nothing, ranges, ETag and 304."""
    fd, name = _open_media(project, run_id, sub)
    fh = os.fdopen(fd, "rb")
    try:
        st = os.fstat(fd)
        head = fh.read(16)
        fh.seek(0)
    except OSError:
        fh.close()
        abort(404, description="The media file cannot be read.")
    mimetype = content_type(name, head)
    response = Response(wrap_file(request.environ, fh), content_type=mimetype or ATTACHMENT,
                        direct_passthrough=True)
    if mimetype is None:
        ascii_name = "".join(c if 32 < ord(c) < 127 and c not in '"\\;' else "_" for c in name)
        response.headers["Content-Disposition"] = (
            f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}")
    response.headers["Content-Security-Policy"] = security.DOWNLOAD_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.content_length = st.st_size
    response.last_modified = st.st_mtime
    response.set_etag(f"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}")
    response.cache_control.no_cache = True
    response.cache_control.private = True
    return response.make_conditional(request, accept_ranges=True, complete_length=st.st_size)
