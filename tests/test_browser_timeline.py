"""The Timeline in a real browser when a version is made long after its run: the axis fits the
runs, so their bars keep a readable width; the far version is pinned at the edge with an arrow
and a label saying when it was made; zoom, pan and Reset still work.

Runs written by the real API; the version promoted from a run's file by a child process whose
clock is 60 days ahead (as if someone promoted the checkpoint two months later). Debian's
Chromium through Playwright against `nuboard up`; screenshots go to test-screenshots/tl-*.png.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from helpers import QUIET, child_env
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

import nuboard as nb

pytestmark = pytest.mark.browser

LATER_DAYS = 60
PROMOTE_LATER = f"""
import sys, time
real_time, real_gmtime = time.time, time.gmtime
time.time = lambda: real_time() + {LATER_DAYS} * 86400
time.gmtime = lambda secs=None: real_gmtime(time.time() if secs is None else secs)
from nuboard.artifacts import promote_run_path
print(promote_run_path(sys.argv[1], "files/ckpt/model.pt", "model", type="checkpoint").spec)
"""


@pytest.fixture
def site(root, page):
    """Three runs of about a second each; the last one's checkpoint promoted 60 days later."""
    folders = []
    for name in ("warmup", "sweep-a", "sweep-b"):
        with nb.init("llm", dir=root, run_name=name, **QUIET) as run:
            for step in range(5):
                run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
                time.sleep(0.2)
            if name == "sweep-b":
                (run.path / "files" / "ckpt").mkdir(parents=True)
                (run.path / "files" / "ckpt" / "model.pt").write_bytes(b"w" * 64)
        folders.append(run.path)
    done = subprocess.run([sys.executable, "-c", PROMOTE_LATER, str(folders[-1])],
                          env=child_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "llm/model:v1", done.stderr
    proc, url = serve(root)
    page.set_viewport_size({"width": 1440, "height": 900})
    yield url
    shutdown(proc)


def bar_widths(page) -> list[float]:
    return [page.locator("rect.tl-seg").nth(i).bounding_box()["width"]
            for i in range(page.locator("rect.tl-seg").count())]


def test_a_version_made_60_days_later_leaves_the_bars_readable(page, site):
    errors = watch_errors(page)
    data = page.request.get(site + "/api/p/llm/.timeline").json()
    (version,) = [v for r in data["runs"] for v in r["versions"]]
    made_by = next(r for r in data["runs"] if r["versions"])
    assert version["created"] - made_by["end"] > (LATER_DAYS - 1) * 86400
    assert made_by["start"] <= version["at"] <= made_by["end"]

    page.goto(site + "/p/llm/.timeline")
    expect(page.locator("rect.tl-seg")).to_have_count(3)
    # each bar and diamond is a link with a name (axe: link-name), and each run has its swatch
    expect(page.get_by_role("link", name=re.compile(r"^sweep-a: finished, started "))).to_have_count(1)
    expect(page.get_by_role("link", name="llm/model:v1, made by sweep-b")).to_have_count(1)
    expect(page.locator("a.tl-label[data-run] rect.tl-swatch")).to_have_count(3)
    widths = bar_widths(page)
    assert min(widths) > 20, widths            # on a 60-day axis each would be 2 px
    body = page.locator("svg.tl-body").bounding_box()
    last_bar = page.locator("rect.tl-seg").nth(2).bounding_box()

    # the version: at the right edge, past the bar's end, with its arrow and its label
    edge = page.locator("a.tl-version.tl-at-edge")
    expect(edge).to_have_count(1)
    label = edge.locator("text.tl-edge-label")
    expect(label).to_be_visible()
    expect(label).to_have_text(f"model:v1 made {LATER_DAYS} days later")
    expect(edge.locator("path.tl-edge-arrow")).to_be_visible()
    diamond = edge.locator("path.tl-diamond").bounding_box()
    assert last_bar["x"] + last_bar["width"] < diamond["x"] < body["x"] + body["width"]
    edge.locator("path.tl-diamond").hover()
    tip = page.locator(".tl-tip")
    expect(tip.locator(".tl-tip-head")).to_have_text("llm/model:v1")
    expect(tip).to_contain_text(f"made by: sweep-b, {LATER_DAYS} days later")
    shot(page, "tl-01-version-60-days-later")

    # zoom in around the middle bar: the bars widen; drag pans; Reset gives the first view
    middle = page.locator("rect.tl-seg").nth(1).bounding_box()
    page.mouse.move(middle["x"] + middle["width"] / 2, middle["y"] + 4)
    page.mouse.wheel(0, -600)
    page.wait_for_function("w => document.querySelectorAll('rect.tl-seg')[1]"
                           ".getBoundingClientRect().width > w * 1.5", arg=middle["width"])
    expect(page.locator("#tl-reset")).to_be_enabled()
    shot(page, "tl-02-zoomed")
    before = page.locator("rect.tl-seg").nth(1).bounding_box()["x"]
    page.mouse.move(body["x"] + body["width"] * 0.6, body["y"] + 12)
    page.mouse.down()
    page.mouse.move(body["x"] + body["width"] * 0.6 - 150, body["y"] + 12, steps=6)
    page.mouse.up()
    page.wait_for_function("x => Math.abs(document.querySelectorAll('rect.tl-seg')[1]"
                           ".getBoundingClientRect().x - (x - 150)) < 3", arg=before)
    page.click("#tl-reset")
    expect(page.locator("#tl-reset")).to_be_disabled()
    assert [round(w) for w in bar_widths(page)] == [round(w) for w in widths]
    expect(label).to_be_visible()
    assert not errors, errors
