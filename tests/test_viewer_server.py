"""`nuboard up` as a user starts it: the URL, a taken port, Ctrl-C, a public bind; and two
viewers editing one run's notes (row 10 of reliability.md over HTTP)."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from helpers import child_env
from helpers_http import RemoteViewer

URL = re.compile(r"at (http://\S+/)")


def start_up(root, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())
    line = proc.stdout.readline()
    match = URL.search(line)
    if match is None:
        proc.kill()
        raise AssertionError(f"no URL in {line!r}: {proc.stderr.read()}")
    return proc, match.group(1)


def stop(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


@pytest.fixture
def one_run(make_run):
    return make_run("llm", points={"train/loss": [(0, 1.0)]}, run_name="first").name


def test_up_serves_the_folder_and_stops_on_ctrl_c(root, one_run):
    proc, url = start_up(root, "--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "p/llm", timeout=30) as reply:
            assert reply.status == 200 and b"first" in reply.read()
    finally:
        code, out, err = stop(proc)
    assert code == 0 and "NuBoard stopped." in out and "Traceback" not in err


def test_a_taken_port_is_one_clear_line(root, one_run):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                               "--port", str(port)], capture_output=True, text=True,
                              env=child_env(), timeout=60)
    assert proc.returncode == 1
    opening, *lines = proc.stderr.strip().splitlines()      # the line `up` prints at once
    assert opening.startswith("Opening the catalog of 1 project in ")
    assert len(lines) == 1 and f"Port {port}" in lines[0] and "already in use" in lines[0]
    assert not (root / "llm" / ".nuboard").exists()         # said before any catalog opened


def test_a_missing_folder_and_bad_options(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", str(tmp_path / "none")],
                          capture_output=True, text=True, env=child_env(), timeout=60)
    assert proc.returncode == 1 and "No experiments folder" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", "--port", "99999"],
                          capture_output=True, text=True, env=child_env(), timeout=60)
    assert proc.returncode == 2
    help_text = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", "--help"],
                               capture_output=True, text=True, env=child_env(), timeout=60).stdout
    assert "Example:" in help_text and "--edit-artifacts" in help_text


def test_a_public_bind_warns_that_there_is_no_login(root, one_run):
    proc, url = start_up(root, "--host", "0.0.0.0", "--port", "0")
    port = url.rsplit(":", 1)[1].strip("/")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/p/llm", timeout=30) as reply:
            assert reply.status == 200
    finally:
        code, _out, err = stop(proc)
    assert code == 0 and "no login" in err


def test_default_bind_is_loopback_only(root, one_run):
    from nuboard.web.server import DEFAULT_PORT
    assert DEFAULT_PORT not in (5000, 6006, 43800, 7860)
    proc, url = start_up(root, "--port", "0")
    try:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                             text=True).stdout if _has("ss") else ""
        if out:
            assert [line.split()[3] for line in out.splitlines()] == [f"127.0.0.1:{port}"]
        else:                          # no ss: the address printed is the one bound
            assert url.startswith("http://127.0.0.1:")
    finally:
        stop(proc)


def _has(cmd: str) -> bool:
    return any(os.access(os.path.join(d, cmd), os.X_OK) for d in os.environ["PATH"].split(":"))


def test_two_viewers_editing_notes_detect_the_conflict(root, one_run):
    """Two `nuboard up` processes on one folder, a third client reading all along."""
    path = f"/p/llm/.run/{one_run}/notes"
    with RemoteViewer(root) as a, RemoteViewer(root) as b:
        stop_reading = threading.Event()
        errors: list[str] = []

        def long_reads() -> None:                  # a third reader keeps pages busy meanwhile
            while not stop_reading.is_set():
                reply = a.get("/api/p/llm/runs?per_page=500")
                if reply.status != 200:
                    errors.append(reply.text)

        reader = threading.Thread(target=long_reads)
        reader.start()
        try:
            first = a.post(path, {"notes": "from A", "base": "", "base_set": "0"})
            second = b.post(path, {"notes": "from B", "base": "", "base_set": "0"})
            for _ in range(20):
                ok = b.get(f"/api/p/llm/.run/{one_run}").json()
                reply = b.post(path, {"notes": f"B on top {_}", "base": ok["notes"],
                                      "base_set": "1"})
                assert reply.status == 200
        finally:
            stop_reading.set()
            reader.join()
        assert first.status == 200 and second.status == 409
        assert "changed by someone else" in second.text and "busy" not in second.text.lower()
        assert not errors
        doc = json.loads((root / "llm" / "runs" / one_run / "run.json").read_text())
        assert doc["notes"] == "B on top 19"
        deadline = time.monotonic() + 10
        while a.get("/api/p/llm/runs?q=top").json()["total"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    wal = root / "llm" / ".nuboard" / "catalog.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size < 8 * 1024 * 1024
