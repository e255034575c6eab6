"""The run page in a real browser (Debian's Chromium through Playwright, `nuboard up` as a
subprocess): a crashed run's exception line at the top, its Results table, a lost run's last
seen, a live run's Overview refreshing until it ends, and Show more on a long Files list;
screenshots go to test-screenshots/."""
from __future__ import annotations

import math
import os
import re
import time

import pytest
from helpers import QUIET, killed_run, run_child
from helpers_browser import SHOTS, serve, shot, shutdown, watch_errors

import nuboard as nb
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


DURATION = "dl.facts dt:text-is('Duration') + dd"
LOSS_LAST_STEP = "table.results tbody tr:has(th:text-is('train/loss')) td:nth-child(3)"
FACT = """name => [...document.querySelectorAll('dl.facts dt')]
    .find(dt => dt.textContent === name).nextElementSibling.textContent"""
LOSS_LAST = """() => [...document.querySelectorAll('table.results tbody tr')]
    .filter(r => r.cells[0].textContent === 'train/loss').map(r => r.cells[2].textContent)[0]"""


def test_a_live_runs_overview_refreshes_until_it_ends(page, root):
    run = nb.init("llm", dir=root, run_name="live", **QUIET)
    run.add_scalar("train/loss", 1.0, step=0)
    run.flush()
    server, url = serve(root)
    polls: list[str] = []
    try:
        errors = watch_errors(page)
        page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/live") else None)
        page.goto(f"{url}/p/llm/.run/{run.id}")
        assert page.inner_text(".run-head h1 .badge") == "running"
        colour = page.locator(".run-title input.run-colour")        # beside the name
        assert colour.get_attribute("aria-label") == "colour of live"
        first = page.evaluate(f"({FACT})('Duration')")
        assert page.inner_text(LOSS_LAST_STEP) == "0"
        page.fill("#notes-text", "half-typed note")          # typed, not saved
        run.add_scalar("train/loss", 0.5, step=7)
        run.flush()
        page.wait_for_function(f"was => ({FACT})('Duration') !== was", arg=first, timeout=15000)
        assert re.fullmatch(r"\d+s", page.inner_text(DURATION))
        page.wait_for_function(f"() => ({LOSS_LAST})() === '7'", timeout=15000)
        assert page.inner_text(LOSS_LAST_STEP) == "7"
        assert page.input_value("#notes-text") == "half-typed note"   # the draft is kept
        assert page.evaluate("document.activeElement.id") == "notes-text"
        assert page.inner_text(".tabs a.active") == "Overview"
        run.finish()
        page.wait_for_function(f"() => ({FACT})('Status') === 'finished'", timeout=15000)
        assert page.inner_text(".run-head h1 .badge") == "finished"
        assert page.inner_text("dl.facts dt:text-is('Ended') + dd") != "-"
        assert page.get_attribute("#run-live", "data-live") == "0"
        asked = len(polls)
        assert asked >= 2
        page.wait_for_timeout(2500)                           # longer than one poll's interval
        assert len(polls) == asked                            # polling stopped
        assert page.input_value("#notes-text") == "half-typed note"
        shot(page, "run-page-live-then-finished")
        assert not errors
    finally:
        shutdown(server)
        if run.status == "running":
            run.finish()


def test_files_show_more_says_how_many_there_are(page, root):
    with nb.init("llm", dir=root, run_name="samples", **QUIET) as run:
        samples = run.path / "files" / "samples"
        samples.mkdir(parents=True)
        for i in range(1234):
            (samples / f"sample-{i:04d}.txt").write_text(str(i))
    server, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.run/{run.id}/files/files/samples/")
        rows = page.locator("table.file-list tbody tr:has(a.download)")
        assert rows.count() == 1000
        assert "1,234 files" in page.inner_text(".files .crumbs")
        more = page.locator("#run-files-more")
        assert " ".join(more.inner_text().split()) == "Show more (1,000 of 1,234 files shown)"
        href = more.locator("a").get_attribute("href")
        more.scroll_into_view_if_needed()       # the page is long: a shot of the screen only
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "run-files-show-more.png"))
        more.locator("a", has_text="Show more").click()
        page.wait_for_function("document.querySelectorAll('table.file-list a.download').length"
                               " === 1234")
        assert page.locator("#run-files-more").count() == 0   # all shown: no Show more
        names = page.locator("table.file-list tbody tr td:first-child a").all_inner_texts()
        assert names == [f"sample-{i:04d}.txt" for i in range(1234)]   # in order, once each
        page.goto(url + href)                                 # the link, without JavaScript
        assert rows.count() == 1234
        answer = page.goto(url + href.replace("offset=1000", "offset=-5"))
        assert answer.status == 400 and "offset must be a whole number" in page.inner_text("main")
        assert not errors
    finally:
        shutdown(server)
