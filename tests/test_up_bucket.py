"""`nuboard up s3://bucket/experiments` (issue 35, item 3): the viewer over a bucket serves a
local mirror it pulls again in the background, says in every page's header how fresh it is,
refuses every edit, and keeps serving the last mirror while the store is down.

Runs are written by the real API, pushed to moto's S3 server (helpers_s3.py) and served by a
real `nuboard up` child process; NUBOARD_MIRROR_INTERVAL makes its pulls come every 0.2 s
(2.4 s while no run is running) so that a test polls for seconds, not minutes.
"""
from __future__ import annotations

import html
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env, wait_for, write_run
from helpers_http import RemoteViewer, visible_text
from helpers_s3 import CutProxy, closed_port

INTERVAL = "0.2"            # NUBOARD_MIRROR_INTERVAL for the viewers of this module
MIRROR_LINE = re.compile(r"Mirror of (s3://\S+) · pulled (\d+) s ago")


def push(local: Path, url: str) -> None:
    """The experiments folder into the bucket, as `nuboard sync push` sends it."""
    from nuboard.sync import push as sync_push
    sync_push(url, local)


class BucketViewer(RemoteViewer):
    """`nuboard up URL --port 0` in its own process; `.err` is what it printed on stderr once
    closed. Pages over a mirror carry no form, so the CSRF token is read from the header htmx
    sends it in."""

    err = ""

    @property
    def token(self) -> str:
        if self._token is None:
            page = self.get(f"/p/{self.project}").text
            found = re.search(r"hx-headers='([^']+)'", page)
            self._token = json.loads(html.unescape(found.group(1)))["X-CSRF-Token"]
        return self._token

    def close(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            _out, self.err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("nuboard up did not stop within 30 s of SIGINT") from None

    def header(self, path: str = "/p/llm") -> str:
        """The mirror's words in the page header (unescaped), and the page must answer 200."""
        reply = self.get(path)
        assert reply.status == 200, reply.text[-500:]
        found = re.search(r'<span class="mirror".*?</bdi>(?: · <span class="mirror-failed".*?</bdi>)?',
                          reply.text, re.S)
        assert found, "no mirror line in the header"
        return html.unescape(" ".join(visible_text(found.group(0)).split()))


@pytest.fixture(scope="module")
def served(s3, tmp_path_factory):
    """Two runs of 'llm' pushed to a fresh bucket, and `nuboard up` over the bucket; yields
    (viewer, url, local experiments folder)."""
    base = tmp_path_factory.mktemp("up-bucket")
    local = base / "node"
    for name in ("alpha", "beta"):
        write_run(local, "llm", {"train/loss": [(0, 1.0), (1, 0.5)]}, run_name=name)
    url = s3.bucket() + "/exp"
    with pytest.MonkeyPatch.context() as env:
        for key, value in {**s3.env, "NUBOARD_CACHE_DIR": str(base / "cache"),
                           "NUBOARD_MIRROR_INTERVAL": INTERVAL}.items():
            env.setenv(key, value)
        env.delenv("NUBOARD_CATALOG_URL", raising=False)
        push(local, url)
        with BucketViewer(url) as viewer:
            yield viewer, url, local


def test_the_runs_page_lists_the_bucket_runs_and_says_how_fresh_the_mirror_is(served):
    viewer, url, _local = served
    page = viewer.get("/p/llm")
    assert page.status == 200
    assert "alpha" in page.text and "beta" in page.text
    found = MIRROR_LINE.search(viewer.header())
    assert found and found.group(1) == url and int(found.group(2)) < 60
    assert "last pull failed" not in viewer.header()
    assert MIRROR_LINE.search(viewer.header("/p/llm/.charts"))         # every page
    assert "Save view" not in page.text and "notes-text" not in page.text


def test_a_run_pushed_later_appears_without_a_restart(served, s3):
    viewer, url, local = served
    write_run(local, "llm", {"train/loss": [(0, 2.0)]}, run_name="gamma")
    with pytest.MonkeyPatch.context() as env:
        for key, value in s3.env.items():
            env.setenv(key, value)
        push(local, url)
    wait_for(lambda: "gamma" in viewer.get("/p/llm").text, "the run pushed later on the Runs page")


def test_every_edit_is_refused_saying_the_bucket_is_served_read_only(served):
    viewer, url, local = served
    run_id = next(p.name for p in (local / "llm" / "runs").iterdir() if not p.name.startswith("."))
    refused = f"{url} is served read-only"
    for path, fields in ((f"/p/llm/.run/{run_id}/notes", {"notes": "changed", "base_sha256": ""}),
                         ("/p/llm/.views", {"name": "mine", "q": ""}),
                         ("/p/llm/.hide", {"run": run_id})):
        reply = viewer.post(path, fields)                 # a valid token and Origin
        assert reply.status == 403, (path, reply.status)
        assert refused in html.unescape(reply.text), path
        assert "sync push" in html.unescape(reply.text)
    colour = viewer.post("/api/p/llm/.colours", {"run": run_id, "colour": "#ff0000"})
    assert colour.status == 403 and colour.json()["error"].startswith(refused)
    assert "changed" not in viewer.get(f"/p/llm/.run/{run_id}").text
    assert viewer.post(f"/p/llm/.run/{run_id}/notes", {"notes": "x"}, token=False).status == 403


def up_once(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`nuboard up ARGS` run to its end (it must not serve)."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", "up", *args, "--port", "0"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          env=child_env(**env))


@pytest.mark.parametrize("flag", ["--edit-runs", "--edit-artifacts"])
def test_edit_flags_with_a_url_are_a_usage_error(flag, tmp_path):
    done = up_once("s3://lab/exp", flag, NUBOARD_CACHE_DIR=str(tmp_path))
    assert done.returncode == 2 and "serving" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "s3://lab/exp is served read-only" in lines[0] and flag in lines[0]
    assert not (tmp_path / "mirrors").exists()                 # nothing pulled


def test_a_store_down_at_start_is_one_line_and_exit_1(s3, tmp_path):
    url = s3.bucket() + "/exp"
    with closed_port() as port:                                           # nothing listens
        done = up_once(url, **s3.env_via(port), NUBOARD_CACHE_DIR=str(tmp_path))
    assert done.returncode == 1 and "serving" not in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nuboard: cannot ") and "cannot be reached" in last, done.stderr


def test_a_store_that_goes_down_leaves_the_pages_served_and_the_header_says_so(s3, tmp_path):
    local = tmp_path / "node"
    write_run(local, "llm", {"train/loss": [(0, 1.0)]}, run_name="delta")
    url = s3.bucket() + "/exp"
    with CutProxy(s3.port) as proxy, pytest.MonkeyPatch.context() as env:
        for key, value in {**s3.env_via(proxy.port), "NUBOARD_CACHE_DIR": str(tmp_path / "cache"),
                           "NUBOARD_MIRROR_INTERVAL": INTERVAL}.items():
            env.setenv(key, value)
        push(local, url)
        with BucketViewer(url) as viewer:
            assert "last pull failed" not in viewer.header()
            proxy.cut()
            failed = wait_for(lambda: "last pull failed" in (h := viewer.header()) and h,
                              "the header saying the last pull failed")
            assert MIRROR_LINE.search(failed)                 # and when the last one worked
            assert "cannot be reached" in failed or "cannot list" in failed, failed
            assert "delta" in viewer.get("/p/llm").text       # the last mirror is served
            proxy.restore()
            wait_for(lambda: "last pull failed" not in viewer.header(), "a pull after the outage")
    warnings = [line for line in viewer.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and url in warnings[0], viewer.err     # once per outage
