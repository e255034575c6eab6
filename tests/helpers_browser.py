"""Browser-test helpers that are not fixtures: `nuboard up` as a subprocess, screenshots,
and a page's JavaScript errors."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

from helpers import REPO, child_env

SHOTS = REPO / "test-screenshots"


def serve(root: Path, *args: str):
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                             "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env())
    line = proc.stdout.readline()
    match = re.search(r"at (http://\S+)/", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"nuboard up printed {line!r}: {proc.stderr.read()}")
    return proc, match.group(1)


def shutdown(proc) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return errors
