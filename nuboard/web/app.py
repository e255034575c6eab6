"""The Flask application factory: `create_app(root)` serves every project under root."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from flask import Flask, abort, render_template, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import PathConverter

from nuboard import __version__
from nuboard.catalog.project_catalog import CATALOG_UNAVAILABLE, unavailable_message
from nuboard.errors import InvalidArgumentError, NuBoardError
from nuboard.files import layout

from . import security
from .catalogs import Catalogs
from .chart_prefetch import Prefetch
from .chartdata import SeriesCache
from .context import catalogs, read_only_refusal, wants_json
from .filters import install_filters
from .host_names import served_names

if TYPE_CHECKING:
    from .mirror import Mirror

MIRROR_EDITS = "notes, saved views, run colours, artifacts and runs cannot be edited here"


class TextSafeResponse(Flask.response_class):
    """A response whose text may hold what is not UTF-8 (a file name's surrogate escapes, kept
    so in a manifest): sent escaped as \\udcff, where a plain response raised (a 500)."""

    def set_data(self, value: "bytes | str") -> None:
        if isinstance(value, str):
            value = value.encode("utf-8", "backslashreplace")
        super().set_data(value)


def create_app(root: "str | os.PathLike[str] | None" = None, *, host: str = "127.0.0.1",
               allowed_hosts: "Iterable[str]" = (), edit_artifacts: bool = False,
               edit_runs: bool = False, read_only: bool = False,
               sync_every: float = 2.0, mirror: "Mirror | None" = None) -> Flask:
    """The viewer over the projects under root (default $NUBOARD_DIR, else ./experiments).

    Args:
        host: the address the server binds; a request's Host must be a name of it
            (host_names.served_names: loopback names, and for 0.0.0.0 or :: this machine's
            names and addresses).
        allowed_hosts: more names to accept (a reverse proxy's), as --allowed-host gives them.
        edit_artifacts: show and accept the artifact forms (the second part of the viewer).
        edit_runs: show and accept hiding, deleting (to runs/.trash/) and restoring runs
            (web/run_edit.py; without it those routes answer 403).
        read_only: refuse every edit (notes, saved views); not with edit_artifacts or
            edit_runs.
        sync_every: seconds between background syncs of a project's catalog.
        mirror: root is this bucket's local mirror (web/mirror.py, `nuboard up s3://...`): the
            header says how fresh it is and every edit is refused (read_only is implied).

    Raises:
        InvalidArgumentError: read_only (or a mirror) with edit_artifacts or edit_runs
            (read-only means no edit).
    """
    if mirror is not None and (edit_artifacts or edit_runs):
        raise InvalidArgumentError(
            f"{mirror.header()['url']} is served read-only (a mirror of the bucket), so "
            "edit_artifacts and edit_runs cannot be given with it: edit where the runs are "
            "written, then 'nuboard sync push'.")
    read_only = read_only or mirror is not None
    if read_only and edit_artifacts:
        raise InvalidArgumentError(
            "read_only=True refuses every edit and edit_artifacts=True turns the artifact "
            "edits on: give one of them, not both (nuboard up: --read-only or --edit-artifacts).")
    if read_only and edit_runs:
        raise InvalidArgumentError(
            "read_only=True refuses every edit and edit_runs=True turns the run edits on: "
            "give one of them, not both (nuboard up: --read-only or --edit-runs).")
    root = layout.resolve_root(root)
    app = Flask("nuboard.web", template_folder=str(layout.resource_dir("templates")),
                static_folder=str(layout.resource_dir("static")), static_url_path="/static")
    app.response_class = TextSafeResponse
    app.config.update(NUBOARD_ROOT=root, NUBOARD_EDIT_ARTIFACTS=edit_artifacts,
                      NUBOARD_EDIT_RUNS=edit_runs, NUBOARD_READ_ONLY=read_only,
                      MAX_CONTENT_LENGTH=2 * 1024 * 1024,
                      SEND_FILE_MAX_AGE_DEFAULT=3600, JSON_SORT_KEYS=False)
    app.url_map.merge_slashes = False          # '//etc' is refused, not redirected
    app.url_map.converters["project"] = ProjectConverter
    app.extensions["nuboard_catalogs"] = Catalogs(root, every=sync_every)
    app.extensions["nuboard_series"] = SeriesCache()
    app.extensions["nuboard_prefetch"] = Prefetch()
    if mirror is not None:
        app.extensions["nuboard_mirror"] = mirror
        app.config["NUBOARD_MIRROR_URL"] = mirror.header()["url"]     # server.edit_lines says it
    served = served_names(host, allowed_hosts)
    app.config["NUBOARD_SERVED"] = served
    security.install(app, hosts=served.names)
    install_filters(app)

    from .artifacts_page import artifacts_page
    from .chart_csv import chart_csv
    from .charts import charts
    from .colour_edit import colour_edit
    from .files import files
    from .media_files import media_files
    from .media_panels import media
    from .parallel import parallel
    from .run_diff import run_diff_page
    from .run_edit import run_edit
    from .run_page import run_page
    from .runs_page import runs_page
    from .scatter import scatter
    from .timeline import timeline
    for blueprint in (runs_page, run_page, files, charts, timeline, artifacts_page, colour_edit,
                      media, media_files, run_diff_page, scatter, parallel, chart_csv, run_edit):
        app.register_blueprint(blueprint)
    if edit_artifacts:                        # without the flag these routes do not exist
        from .artifact_edit import artifact_edit
        app.register_blueprint(artifact_edit)

    if mirror is not None:
        @app.before_request
        def _mirror_read_only() -> None:
            """Every edit of the mirror is refused (after the Host, Origin and token checks):
            it would be lost at the next pull, and never reach the bucket."""
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                abort(403, description=read_only_refusal(MIRROR_EDITS))

    @app.context_processor
    def _globals() -> dict:
        return {"csrf_token": app.config["NUBOARD_CSRF"], "version": __version__,
                "read_only": read_only, "root": str(root), "edit_artifacts": edit_artifacts,
                "edit_runs": edit_runs,
                "mirror": mirror.header() if mirror is not None else None,
                "read_only_refusal": read_only_refusal,
                "projects": catalogs().projects()}

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if wants_json():
            return {"error": exc.description, "status": exc.code}, exc.code
        return render_template("error.html", code=exc.code, title=exc.name,
                               message=exc.description), exc.code

    def _catalog_unavailable(exc: Exception):
        """The catalog cannot be opened or read now (its server is down, say): 503, and the
        reason in one line, never the SQL."""
        message = unavailable_message(exc)
        if wants_json():
            return {"error": message, "status": 503}, 503
        return render_template("error.html", code=503, title="Catalog unavailable",
                               message=message), 503

    for kind in CATALOG_UNAVAILABLE:
        app.register_error_handler(kind, _catalog_unavailable)

    @app.errorhandler(NuBoardError)
    def _our_error(exc: NuBoardError):
        if wants_json():
            return {"error": str(exc), "status": 400}, 400
        return render_template("error.html", code=400, title="Bad request",
                               message=str(exc)), 400

    return app


class ProjectConverter(PathConverter):
    """A project in a URL: '/'-separated segments, none starting with a dot, so '/.run/',
    '/.charts' or '/.artifact/' always end it (and a page that is not there is a 404)."""
    regex = r"[^/.][^/]*(?:/[^/.][^/]*)*"

