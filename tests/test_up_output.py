"""What `nuboard up` prints as a user starts it: a line at once saying what it opens, the URL
only once every project's catalog is open and the server answers, and the edit flags."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request

from helpers import child_env, write_run

import nuboard as nb
from nuboard.catalog.engine import CATALOG

URL = re.compile(r" at (http://\S+/) ")


def lines_until_url(root, *args: str) -> tuple[subprocess.Popen, list[str], str, list[bool]]:
    """`nuboard up ROOT --port 0 ARGS`, stdout and stderr in one stream as a terminal shows
    them: the lines up to the URL, the URL, and whether each project's catalog file was on
    disk at the moment the URL was read."""
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                             "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=child_env())
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        found = URL.search(line)
        if found:
            on_disk = [(root / project / ".nuboard" / CATALOG).is_file()
                       for project in ("datasets", "llm")]
            return proc, lines, found.group(1), on_disk
    raise AssertionError(f"nuboard up ended without a URL: {lines}")


def rest(proc: subprocess.Popen) -> list[str]:
    """Ctrl-C, then the lines printed after the URL (read through the same buffered stream:
    communicate(timeout=...) reads the pipe itself and would miss lines already buffered)."""
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    return proc.stdout.read().splitlines()


def two_projects(root) -> None:
    write_run(root, "llm", {"train/loss": [(0, 1.0)]}, run_name="first")
    data = root.parent / "corpus.txt"
    data.write_text("a corpus\n")
    nb.add_artifact("datasets", "corpus", data, type="dataset", dir=root)


def test_up_says_what_it_opens_then_the_url_once_it_answers(root):
    two_projects(root)
    proc, lines, url, on_disk = lines_until_url(root)
    try:
        assert lines[0] == f"Opening the catalogs of 2 projects in {str(root)!r} ..."
        assert len(lines) == 2 and URL.search(lines[1])          # the URL comes after it
        assert on_disk == [True, True]               # every catalog opened before the URL
        with urllib.request.urlopen(url + "p/llm", timeout=10) as reply:   # answers at once
            assert reply.status == 200 and b"first" in reply.read()
    finally:
        after = rest(proc)
    assert after == ["NuBoard stopped."]


def test_the_edit_flags_are_said_in_the_terminal(root):
    write_run(root, "llm", {"train/loss": [(0, 1.0)]}, run_name="first")
    proc, lines, _url, _ = lines_until_url(root, "--edit-artifacts")
    rest(proc)
    assert lines[0] == f"Opening the catalog of 1 project in {str(root)!r} ..."
    assert lines[1].startswith("Artifact editing is on (--edit-artifacts): the Artifacts pages "
                               "add new versions and unlink them")
    assert len(lines) == 3                                    # then the URL
    proc, lines, _url, _ = lines_until_url(root, "--read-only")
    rest(proc)
    assert lines[1:-1] == ["Read-only (--read-only): notes, saved views, run colours and "
                           "artifacts cannot be edited from this viewer."]
