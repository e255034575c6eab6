"""Serving a lab (issue 17): `nuboard up --host 0.0.0.0` answers to the machine's own names and
refuses any other Host; idle and half-sent connections never lock users out."""
from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import time

import pytest
from helpers import child_env
from helpers_http import RemoteViewer, Viewer

from nuboard.web import server as web_server


@pytest.fixture
def one_run(make_run):
    return make_run("llm", points={"train/loss": [(0, 1.0)]}, run_name="first").name


def outside_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (None when it has none)."""
    import ipaddress

    import psutil
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == socket.AF_INET and not ipaddress.ip_address(addr.address).is_loopback:
                return addr.address
    return None


class Up:
    """`nuboard up ROOT --port 0 ARGS` in its own process: its port and what it printed."""

    def __init__(self, root, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                                      "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=child_env())
        self.first = self.proc.stdout.readline()
        found = re.search(r"at http://(\S+):(\d+)/", self.first)
        if found is None:
            self.proc.kill()
            raise AssertionError(f"nuboard up printed {self.first!r}: {self.proc.stderr.read()}")
        self.url_host, self.port = found.group(1), int(found.group(2))
        self.second = self.proc.stdout.readline()

    def status(self, address: str, host: str, path: str = "/p/llm") -> int:
        """GET path from address:port, saying `Host: host` (with the port, as browsers do)."""
        conn = http.client.HTTPConnection(address, self.port, timeout=30)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", f"{host}:{self.port}")
            conn.endheaders()
            reply = conn.getresponse()
            reply.read()
            return reply.status
        finally:
            conn.close()

    def stop(self) -> str:
        self.proc.send_signal(2)
        _out, err = self.proc.communicate(timeout=30)
        return err

    def __enter__(self) -> "Up":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.stop()


# ---- item 1: the names a public bind answers to -------------------------------------------

def test_a_wildcard_bind_answers_to_the_machines_names_and_refuses_others(root, one_run):
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address but loopback: nothing to reach it by")
    with Up(root, "--host", "0.0.0.0", "--allowed-host", "nuboard.lab.example") as up:
        # the URL printed is one other machines can use, and it answers there
        assert up.url_host not in ("0.0.0.0", "127.0.0.1", "localhost")
        assert up.status(address, up.url_host) == 200
        assert "It answers to" in up.second and address in up.second
        assert up.status(address, address) == 200                     # a browser on another machine
        assert up.status(address, socket.gethostname()) == 200        # by the machine's name
        assert up.status(address, "NuBoard.Lab.Example.") == 200       # --allowed-host, any case
        assert up.status("127.0.0.1", "localhost") == 200               # an SSH tunnel
        for other in ("evil.example", "192.0.2.250", "nuboard.lab.example.evil.example"):
            assert up.status(address, other) == 403, other             # DNS rebinding: refused
        err = up.stop()
    assert "no login" in err


def test_a_concrete_bind_answers_to_its_address(root, one_run):
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address but loopback")
    with Up(root, "--host", address) as up:
        assert up.url_host == address
        assert up.status(address, address) == 200
        assert up.status(address, "evil.example") == 403


def test_a_refused_host_gets_a_page_that_tells_a_rebound_page_nothing(root, one_run):
    """A DNS-rebound page can read the 403: it names no address, folder or project."""
    with Viewer(root) as viewer:
        for path in ("/p/llm", "/", "/api/p/llm/runs", "/p/llm/.run/x?format=json"):
            reply = viewer.get(path, headers={"Host": "evil.example:80"})
            assert reply.status == 403 and "is not a name of this viewer" in reply.text, path
            for secret in ("127.0.0.1", str(root), "llm", one_run):
                assert secret not in reply.text, (path, secret)
            assert reply.headers["x-content-type-options"] == "nosniff"
        assert viewer.get("/api/p/llm/runs", headers={"Host": "evil.example"}).json()["status"] == 403


def test_a_bad_allowed_host_is_a_usage_error(root, one_run):
    proc = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                           "--allowed-host", "lab.example/path"], capture_output=True,
                          text=True, env=child_env(), timeout=60)
    assert proc.returncode == 2
    assert "'lab.example/path' is not a host name" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---- item 2: idle connections never lock users out ----------------------------------------

def _received_close(sock: socket.socket) -> bool:
    """Whether the server closed this connection (nothing to read but the end)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_300_idle_connections_leave_a_page_answering_and_are_closed(root, one_run):
    with RemoteViewer(root) as viewer:
        idle = [socket.create_connection(("127.0.0.1", viewer.port), timeout=10) for _ in range(300)]
        half = []
        for _ in range(20):                              # a request begun and never finished
            sock = socket.create_connection(("127.0.0.1", viewer.port), timeout=10)
            sock.sendall(b"GET /p/llm HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            half.append(sock)
        try:
            started = time.monotonic()
            reply = viewer.get("/p/llm")
            took = time.monotonic() - started
            assert reply.status == 200 and b"first" in reply.body
            assert took < 2.0, f"a page took {took:.1f} s with 320 idle connections open"
            deadline = time.monotonic() + web_server.IDLE_SECONDS + 5
            open_ = idle + half
            while open_ and time.monotonic() < deadline:
                time.sleep(0.5)
                open_ = [s for s in open_ if not _received_close(s)]
            assert not open_, f"{len(open_)} idle connections still open after " \
                              f"{web_server.IDLE_SECONDS + 5} s"
        finally:
            for sock in idle + half:
                sock.close()


def test_a_request_trickled_in_is_closed_once_it_takes_too_long(root, one_run):
    with Viewer(root) as viewer:
        web_server.close_slow_requests(viewer.server, limit=2)
        sock = socket.create_connection(("127.0.0.1", viewer.port), timeout=10)
        try:
            request = b"GET /p/llm HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
            closed_after = None
            started = time.monotonic()
            for byte in request:                       # one byte every 0.2 s: never idle
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    closed_after = time.monotonic() - started
                    break
                if _received_close(sock):
                    closed_after = time.monotonic() - started
                    break
                sock.setblocking(True)
                time.sleep(0.2)
            assert closed_after is not None and closed_after < 2 + 3
        finally:
            sock.close()
        assert viewer.get("/p/llm").status == 200       # others are still served
