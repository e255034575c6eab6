"""The run page in a real browser (Debian's Chromium through Playwright, `nuboard up` as a
subprocess): a crashed run's exception line at the top, its Results table, a lost run's last
seen; screenshots of both go to test-screenshots/."""
from __future__ import annotations

import math
import os
import re
import time

import pytest
from helpers import killed_run, run_child
from helpers_browser import serve, shot, shutdown, watch_errors

from nuboard.files import runjson

pytestmark = pytest.mark.browser

DIVERGES = """
    import math, nuboard as nb
    with nb.init("llm", run_name="lr3e-2", config={"optimizer": {"lr": 3e-2}},
                 system_metrics=["memory"], system_interval=0.05, capture_env=False) as run:
        print("run", run.id, flush=True)
        for step in range(200):
            loss = 4.0 * math.exp(-step / 40) + 0.05 * math.sin(step)
            run.log({"train/loss": loss, "train/lr": 3e-2 * min(1, step / 20)}, step=step)
            if step % 50 == 0:
                run.log({"eval/loss": loss + 0.1, "eval/acc": 0.2 + step / 400}, step=step)
            with run.timer("step"):
                sum(range(20000))
        print("step 200: loss is nan")
        raise ValueError("lr must be positive")
"""


def test_crashed_run_page_shows_its_exception_and_results(page, root):
    proc = run_child(DIVERGES, check=False, NUBOARD_DIR=str(root))
    assert proc.returncode == 1, proc.stderr
    run_id = re.search(r"^run (\S+)$", proc.stdout, re.M).group(1)
    server, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.run/{run_id}")
        line = page.locator(".run-head .crash-line")
        assert line.is_visible()
        assert page.inner_text(".run-head .crash-exception") == "ValueError: lr must be positive"
        head = page.locator("h1").bounding_box()
        box = line.bounding_box()
        assert box["y"] < 250 and box["y"] > head["y"]           # at the top, under the title
        colour = page.eval_on_selector(".crash-exception", "e => getComputedStyle(e).color")
        assert colour == "rgb(180, 35, 24)"                      # --bad: it stands out
        results = page.locator("table.results")
        assert results.is_visible()
        names = results.locator("tbody th").all_inner_texts()
        assert names[:4] == ["train/loss", "train/lr", "eval/loss", "eval/acc"]   # as first logged
        assert names[4] == "timing/step" and all(n.startswith("system/") for n in names[5:])
        loss = results.locator("tbody tr", has_text="train/loss").locator("td").all_inner_texts()
        lowest = min(range(200), key=lambda s: 4.0 * math.exp(-s / 40) + 0.05 * math.sin(s))
        assert (loss[1], loss[3], loss[5]) == ("199", str(lowest), "0")   # last, min, max steps
        shot(page, "run-page-crashed")
        page.set_viewport_size({"width": 390, "height": 800})
        box = line.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390   # wraps, never runs off
        shot(page, "run-page-crashed-390")
        assert not errors
    finally:
        shutdown(server)


def test_lost_run_page_says_when_it_was_last_seen(page, root):
    run_id = killed_run(root)
    old = time.time() - 3 * 3600                 # last seen 3 h ago, after 2 h 05 m of training
    start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(old - 2 * 3600 - 300))
    runjson.update_run(root / "llm" / "runs" / run_id, lambda doc: doc.update(start_time=start))
    os.utime(root / "llm" / "runs" / run_id / "heartbeat", (old, old))
    server, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.run/{run_id}")
        lost = page.locator(".run-head .lost-line")
        assert lost.is_visible()
        assert re.search(r"last seen \d{4}-\d\d-\d\d \d\d:\d\d \(3h 00m ago\)", lost.inner_text())
        assert page.locator(".crash-line").count() == 0
        assert "2h 05m (until last seen" in page.inner_text("dl.facts")
        assert "train/loss" in page.inner_text("table.results")
        shot(page, "run-page-lost")
        assert not errors
    finally:
        shutdown(server)
