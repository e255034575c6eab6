"""The Charts page in a real browser polls for new points while a chosen run runs, and stops
once it has finished (Debian's Chromium through Playwright, `nuboard up` as a subprocess)."""
from __future__ import annotations

import time

import pytest
from helpers import QUIET
from helpers_browser import serve, shot, shutdown, watch_errors

import nuboard as nb

pytestmark = pytest.mark.browser


def test_charts_stop_polling_when_the_run_ends(page, root):
    run = nb.init("llm", dir=root, run_name="live", **QUIET)
    for step in range(5):
        run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
    run.flush()
    proc, url = serve(root)
    asked: list[float] = []
    try:
        errors = watch_errors(page)
        page.on("request", lambda r: asked.append(time.monotonic()) if "/.chart?" in r.url else None)
        page.goto(f"{url}/p/llm/.charts?runs={run.id}")
        page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"]')
        assert page.get_attribute("#charts", "data-live") == "1"
        assert page.locator(".charts-live").is_visible()
        first = len(asked)
        run.finish()
        page.wait_for_function("document.querySelector('#charts').dataset.live === '0'",
                               timeout=30000)
        assert len(asked) > first                   # it did poll while the run ran
        stopped = len(asked)
        time.sleep(6)                                # longer than one polling interval
        assert len(asked) == stopped
        assert page.locator(".charts-live").count() == 0
        assert page.inner_text(f'.legend-runs li[data-run="{run.id}"] .badge') == "finished"
        shot(page, "charts-after-the-run-ended")
        assert not errors
    finally:
        shutdown(proc)
        if run.status == "running":
            run.finish()
