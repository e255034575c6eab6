"""run.json's one owner (files/runjson.py) and the one lock (jsonfile.flock), on real files."""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from helpers import start_child

from nuboard.files import runjson
from nuboard.files.jsonfile import flock, write_json_atomic

UPDATES = 150


def test_two_processes_updating_run_json_lose_nothing(tmp_path):
    """Two processes each add their own entries to run.json at once: every entry is kept."""
    folder = tmp_path / "run"
    folder.mkdir()
    write_json_atomic(folder / runjson.RUN_JSON, {"id": "run", "seen": []})
    go = tmp_path / "go"
    code = f"""
        import os, time
        from nuboard.files import runjson
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        me = os.environ["WHO"]
        for i in range({UPDATES}):
            runjson.update_run({str(folder)!r}, lambda doc: doc["seen"].append(f"{{me}}{{i}}"))
        print("done")
        """
    children = [start_child(code, WHO=who) for who in ("a", "b")]
    go.touch()
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out.strip() == "done"
    seen = json.loads((folder / runjson.RUN_JSON).read_text())["seen"]
    assert sorted(seen) == sorted(f"{who}{i}" for who in "ab" for i in range(UPDATES))
    assert [s for s in seen if s.startswith("a")] == [f"a{i}" for i in range(UPDATES)]


def test_unreadable_run_json_falls_back(tmp_path):
    """A run.json that is not JSON: fn gets the fallback, and the result is written."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / runjson.RUN_JSON).write_text("{not json")
    doc = runjson.update_run(folder, lambda d: d.update(status="finished"),
                             fallback={"id": "run", "status": "running"})
    assert doc == {"id": "run", "status": "finished"}
    assert runjson.read_run(folder) == doc


def test_unreadable_run_json_without_fallback_raises(tmp_path):
    """No fallback: the read error is raised and run.json is left as it was."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / runjson.RUN_JSON).write_text("{not json")
    with pytest.raises(ValueError):
        runjson.update_run(folder, lambda d: d.update(x=1))
    with pytest.raises(FileNotFoundError):
        runjson.update_run(tmp_path / "missing", lambda d: d.update(x=1))
    assert (folder / runjson.RUN_JSON).read_text() == "{not json"


def test_fn_returning_false_writes_nothing(tmp_path):
    """fn returning False: the document is returned as read and the file is not rewritten."""
    folder = tmp_path / "run"
    folder.mkdir()
    write_json_atomic(folder / runjson.RUN_JSON, {"id": "run"})
    before = os.stat(folder / runjson.RUN_JSON).st_ino
    assert runjson.update_run(folder, lambda d: False) == {"id": "run"}
    assert os.stat(folder / runjson.RUN_JSON).st_ino == before


def test_now_iso_is_utc_with_milliseconds():
    """One timestamp format: 2026-01-02T03:04:05.678Z."""
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", runjson.now_iso())


@contextlib.contextmanager
def read_only(folder: Path):
    """The folder made read-only: a read-only bind mount as root (root writes through chmod)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True,
                          text=True, timeout=30)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount the folder: {bind.stderr.strip()}")
    try:
        remount = subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)],
                                 capture_output=True, text=True, timeout=30)
        if remount.returncode != 0:
            pytest.skip(f"cannot remount the folder read-only: {remount.stderr.strip()}")
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def test_flock_on_a_read_only_folder(tmp_path):
    """missing_ok goes on unlocked where the lock file cannot be created; without it, OSError."""
    folder = tmp_path / "ro"
    folder.mkdir()
    write_json_atomic(folder / runjson.RUN_JSON, {"id": "ro"})
    with read_only(folder):
        with pytest.raises(OSError):
            (folder / "probe").write_bytes(b"")
        ran = []
        with flock(folder / ".lock", missing_ok=True):
            ran.append(True)
        assert ran == [True]
        with pytest.raises(OSError):
            with flock(folder / ".lock"):
                pass
        with runjson.run_lock(folder):        # the run's lock goes on unlocked too
            assert runjson.read_run(folder) == {"id": "ro"}


def test_flock_excludes_another_process(tmp_path):
    """While one process holds the lock, another's flock waits until it is let go."""
    lock = tmp_path / ".lock"
    child = start_child(f"""
        import time
        from nuboard.files.jsonfile import flock
        with flock({str(lock)!r}):
            print("held", flush=True)
            time.sleep(1.0)
        """)
    assert child.stdout.readline().strip() == "held"
    began = time.monotonic()
    with flock(lock):
        waited = time.monotonic() - began
    child.communicate(timeout=60)
    assert waited > 0.3
