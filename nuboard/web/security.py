"""The viewer's guards: allowed Host names, CSRF token and Origin on POSTs, response headers.

Rows 17-19 of reliability.md: a page of another site cannot post to the viewer (no token, a
foreign Origin), a DNS-rebound name (`Host: evil.example`) gets 403 on every request, and
every response carries a strict Content-Security-Policy and `nosniff`. Which names a viewer
answers to is host_names.served_names' work; the check here compares canonical names.

The Host check is ours, not Flask's TRUSTED_HOSTS (Flask 3.1): that one answers 400, and
fails before the URL adapter exists, so the HTML error page (url_for) cannot be rendered.
"""
from __future__ import annotations

import hmac
import json
import secrets
from typing import Callable
from urllib.parse import urlsplit

from flask import Flask, Response, abort, request
from markupsafe import escape

from .host_names import LOOPBACK_NAMES, canonical

TOKEN_FIELD = "csrf_token"
TOKEN_HEADER = "X-CSRF-Token"
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")
DOWNLOAD_CSP = "default-src 'none'; sandbox"
FORM_BYTES = "nuboard_form_bytes"       # the attribute form_limit sets on a view


def install(app: Flask, *, hosts: frozenset[str] | None = None, any_host: bool = False) -> None:
    """Check every request's Host (403) and every POST's Origin and token (403); set headers.

    hosts: the names allowed, canonical (host_names.served_names); default the loopback names.
    """
    app.config["NUBOARD_CSRF"] = secrets.token_urlsafe(32)
    allowed = hosts if hosts is not None else LOOPBACK_NAMES

    # An app's URL value preprocessors run before its blueprints' (context.load_project) and
    # before any before_request: a refused request is a 403 before a missing project a 404.
    @app.url_value_preprocessor
    def _guard(_endpoint, _values) -> None:
        if not any_host and canonical(request.host) not in allowed:
            abort(refused_host(request.host))
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            limit = getattr(app.view_functions.get(_endpoint), FORM_BYTES, None)
            if limit is not None:           # before the token check reads the form
                request.max_content_length = request.max_form_memory_size = limit
            check_origin()
            check_token(app.config["NUBOARD_CSRF"])

    @app.after_request
    def _headers(response):
        headers = response.headers
        headers.setdefault("Content-Security-Policy", PAGE_CSP)
        headers["X-Content-Type-Options"] = "nosniff"
        headers["X-Frame-Options"] = "DENY"
        headers["Referrer-Policy"] = "same-origin"
        headers["Cross-Origin-Resource-Policy"] = "same-origin"
        headers.add("Vary", "HX-Request")
        return response


def form_limit(max_bytes: int) -> Callable:
    """Let a POST view take a form of up to max_bytes, beyond the app's MAX_CONTENT_LENGTH
    and Flask's 500 kB per form (notes of a million characters, url-encoded). The guard sets
    it on the request before anything reads the form; put it right under the route."""
    def mark(view: Callable) -> Callable:
        setattr(view, FORM_BYTES, max_bytes)
        return view
    return mark


def refused_host(host: str) -> Response:
    """The 403 of a request naming another host. It is built without the page templates: a
    DNS-rebound page could read the answer, so it shows no project, folder or address."""
    message = (f"Host {host!r} is not a name of this viewer: open it at an address 'nuboard up' "
               "printed, or start it with --allowed-host NAME.")
    if request.path.startswith("/api/") or request.args.get("format") == "json":
        return Response(json.dumps({"error": message, "status": 403}), 403,
                        mimetype="application/json")
    page = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>403 · "
            f"Forbidden</title></head><body><h1>403 · Forbidden</h1><p>{escape(message)}</p>"
            "</body></html>")
    return Response(page, 403, mimetype="text/html")


def check_origin() -> None:
    """A POST must come from a page of this viewer: Origin (else Referer) names this host."""
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        origin = request.headers.get("Referer") if origin is None else origin
    if not origin or origin == "null":
        abort(403, description="This form was not sent from a page of this viewer "
                               "(no Origin header); reload the page and try again.")
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or parts.netloc.lower() != request.host.lower():
        abort(403, description=f"Refused a form sent from {origin!r}: only pages of this "
                               "viewer may change anything.")


def check_token(expected: str) -> None:
    """The CSRF token, from the form field or the X-CSRF-Token header (htmx sends it)."""
    given = request.headers.get(TOKEN_HEADER)
    if given is None and request.mimetype in ("application/x-www-form-urlencoded",
                                              "multipart/form-data"):
        given = request.form.get(TOKEN_FIELD)
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        abort(403, description="The form's security token is missing or stale; reload the "
                               "page and try again.")
