"""The viewer served for real (waitress on a free loopback port, in a thread, or `nuboard up`
in its own process) and a raw client; AppViewer, the same client on Flask's test client.

http.client sends each path exactly as written, so encoded traversal attempts reach the
server as a browser or an attacker would send them.
"""
from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode

from helpers import child_env


class Reply(NamedTuple):
    status: int
    headers: dict
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)


class _Client:
    """Requests to a viewer on 127.0.0.1:port, sent exactly as written."""

    port: int
    origin: str

    @property
    def token(self) -> str:
        """The CSRF token the pages carry."""
        raise NotImplementedError

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def get(self, path: str, headers: dict | None = None) -> Reply:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, fields: dict, *, token: bool = True, origin: str | None = "own",
             headers: dict | None = None) -> Reply:
        """A form post as a page of the viewer sends it (token and Origin unless told not)."""
        data = dict(fields)
        if token:
            data["csrf_token"] = self.token
        sent = {"Content-Type": "application/x-www-form-urlencoded"}
        if origin == "own":
            sent["Origin"] = self.origin
        elif origin is not None:
            sent["Origin"] = origin
        sent.update(headers or {})
        return self.request("POST", path, urlencode(data).encode(), sent)


class Viewer(_Client):
    """`with Viewer(root) as v: v.get('/p/llm')`; keyword arguments go to create_app."""

    def __init__(self, root: Path, **options):
        from nuboard.web.app import create_app
        from nuboard.web.server import bound_port, make_server
        self.app = create_app(root, **options)
        self.server = make_server(self.app, "127.0.0.1", 0)
        self.port = bound_port(self.server)
        self.origin = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        """waitress's loop, a few polls at a time, closed by its own thread when told."""
        server = self.server
        while not self._stop.is_set():
            server.asyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)
        server.task_dispatcher.shutdown()
        server.close()

    @property
    def token(self) -> str:
        return self.app.config["NUBOARD_CSRF"]

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=30)
        self.app.extensions["nuboard_catalogs"].close()

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AppViewer(_Client):
    """`with AppViewer(root) as v: v.get('/p/llm')` through Flask's test client, no socket: for
    tests about what a page says rather than about HTTP; keyword arguments go to create_app."""

    origin = "http://localhost"

    def __init__(self, root: Path, **options):
        from nuboard.web.app import create_app
        self.app = create_app(root, **options)
        self.client = self.app.test_client()

    @property
    def token(self) -> str:
        return self.app.config["NUBOARD_CSRF"]

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> Reply:
        resp = self.client.open(path, method=method, data=body, headers=headers or {})
        try:
            return Reply(resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
                         resp.get_data())
        finally:
            resp.close()

    def close(self) -> None:
        self.app.extensions["nuboard_catalogs"].close()

    def __enter__(self) -> "AppViewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def visible_text(html: str) -> str:
    """The page's text without tags (escaped entities left as they are)."""
    return re.sub(r"<[^>]+>", " ", html)


class RemoteViewer(_Client):
    """`nuboard up ROOT --port 0` in its own process, with the same client methods."""

    def __init__(self, root: Path, *args: str, project: str = "llm"):
        self.proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                                      "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=child_env())
        line = self.proc.stdout.readline()
        found = re.search(r"at http://127\.0\.0\.1:(\d+)/", line)
        if found is None:
            self.proc.kill()
            raise AssertionError(f"nuboard up printed {line!r}: {self.proc.stderr.read()}")
        self.port = int(found.group(1))
        self.origin = f"http://127.0.0.1:{self.port}"
        self._token: str | None = None
        self.project = project

    @property
    def token(self) -> str:
        """The CSRF token, read from a page as a browser gets it."""
        if self._token is None:
            page = self.get(f"/p/{self.project}").text
            self._token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        return self._token

    def close(self) -> None:
        """Stop it as Ctrl-C does; one that does not stop within 30 s is killed, and fails."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("nuboard up did not stop within 30 s of SIGINT") from None

    def __enter__(self) -> "RemoteViewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
