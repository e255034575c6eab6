"""The media panels in a real browser (issue 32, item 4): the image slider changes the picture
and opens it full size, histograms are drawn as distributions and bars, a table sorts, audio
plays, long text folds; on the Charts page for two runs and on a run's Media tab (Debian's
Chromium through Playwright, `nuboard up` as a subprocess, runs logged with the real API)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET
from helpers_browser import INKED, serve, shot, shutdown, watch_errors

import nuboard as nb

pytestmark = pytest.mark.browser
EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Runs 'a' and 'b' of project llm with every media kind, served; (url, a, b)."""
    root = tmp_path_factory.mktemp("media-browser") / "experiments"
    with nb.init("llm", dir=root, run_name="a", **QUIET) as a:
        for step in (0, 10, 20):
            picture = np.zeros((24, 32, 3), np.uint8)
            picture[:, :, step // 10] = 255                 # red, green, blue
            a.log({"val/samples": nb.Image(picture, caption=f"sample {step}"),
                   "weights": nb.Histogram(np.random.default_rng(step).normal(step / 10, 1, 2000)),
                   "loss": 1.0 / (step + 1)}, step=step)
        a.log({"essay": "first line of a long answer\n" + "more words\n" * 50,
               "preds": nb.Table(columns=["score", "label"],
                                 data=[[float(i), f"row {i}" if i != 4 else EVIL] for i in range(30)]),
               "clip": nb.Audio(np.sin(np.arange(8000) / 5).astype(np.float32) * 0.5, 8000)}, step=3)
    with nb.init("llm", dir=root, run_name="b", **QUIET) as b:
        for step in (5, 15):
            b.log({"val/samples": nb.Image(np.full((24, 32, 3), 128, np.uint8)),
                   "weights": nb.Histogram(np.random.default_rng(step).normal(0, 2, 2000))}, step=step)
    proc, url = serve(root)
    try:
        yield url, Path(a.path).name, Path(b.path).name
    finally:
        shutdown(proc)


def open_panel(page, url: str, key: str):
    """The panel of `key`, scrolled to and loaded."""
    panel = page.locator(f'.media-panel[data-key="{key}"]')
    panel.scroll_into_view_if_needed()
    panel.locator(".media-inner").wait_for(timeout=20000)
    return panel


def test_the_image_slider_changes_the_picture_and_a_click_shows_it_full_size(page, site):
    url, a, b = site
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.charts?runs={a},{b}")
    panel = open_panel(page, url, "val/samples")
    picture = panel.locator(f'.media-run[data-run="{a}"] img')
    assert picture.get_attribute("src").endswith("/20-0.png")         # the last step first
    assert panel.locator(f'.media-run[data-run="{b}"] .media-run-step').inner_text() == "step 15"
    slider = panel.locator("input[type=range]")
    slider.focus()
    page.keyboard.press("Home")
    page.wait_for_function("""a => document.querySelector(
        '.media-panel[data-key="val/samples"] .media-run[data-run="' + a + '"] img').src.endsWith('/0-0.png')""",
        arg=a, timeout=10000)
    assert panel.locator(".media-step-value").inner_text() == "0"
    # b logged nothing at or before step 0: it shows its first step, and says so
    assert panel.locator(f'.media-run[data-run="{b}"] .media-run-step').inner_text() == "step 5"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")                                   # step 10
    page.wait_for_function("""a => document.querySelector(
        '.media-panel[data-key="val/samples"] .media-run[data-run="' + a + '"] img').src.endsWith('/10-0.png')""",
        arg=a, timeout=10000)
    assert panel.locator(f'.media-run[data-run="{a}"] .media-caption').inner_text() == "sample 10"
    shot(page, "media-charts-images")
    panel.locator(f'.media-run[data-run="{a}"] img').click()
    dialog = page.locator("dialog.media-viewer")
    dialog.wait_for(state="visible")
    page.wait_for_function("document.querySelector('dialog.media-viewer img').naturalWidth === 32")
    assert dialog.locator("img").get_attribute("src").endswith("/10-0.png")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    page.locator(f'.legend-runs li[data-run="{b}"] .swatch').click()      # b hidden on every chart
    assert not panel.locator(f'.media-run[data-run="{b}"]').is_visible()
    assert panel.locator(f'.media-run[data-run="{a}"]').is_visible()
    assert not errors


def test_histograms_are_drawn_as_distributions_and_bars_in_the_run_colour(page, site):
    url, a, b = site
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.charts?runs={a},{b}")
    panel = open_panel(page, url, "weights")
    for run in (a, b):
        dist = panel.locator(f'.media-dist[data-run="{run}"][data-drawn="1"]')
        dist.wait_for(timeout=15000)
        colour = dist.get_attribute("data-colour")
        lo, hi = float(dist.get_attribute("data-xmin")), float(dist.get_attribute("data-xmax"))
        assert dist.evaluate(INKED, [lo, hi, colour, 40]) > 20, run          # the median line
        bars = panel.locator(f'.media-run[data-run="{run}"] .media-hist[data-drawn="1"]')
        bars.wait_for(timeout=15000)
        lo, hi = float(bars.get_attribute("data-xmin")), float(bars.get_attribute("data-xmax"))
        assert bars.evaluate(INKED, [lo, hi, colour, 40]) > 20, run
    first = panel.locator(f'.media-run[data-run="{a}"] .media-hist').get_attribute("data-hist")
    panel.locator("input[type=range]").focus()
    page.keyboard.press("Home")
    page.wait_for_function("""([a, before]) => { const h = document.querySelector(
        '.media-panel[data-key="weights"] .media-body .media-run[data-run="' + a + '"] .media-hist');
        return h && h.dataset.drawn === '1' && h.dataset.hist !== before; }""", arg=[a, first],
        timeout=10000)
    shot(page, "media-charts-histograms")
    assert not errors


def test_a_table_sorts_by_a_click_on_its_header_and_shows_text_as_text(page, site):
    url, a, _ = site
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.run/{a}?tab=media")
    panel = open_panel(page, url, "preds")

    def column(i: int) -> list[str]:
        return panel.locator(f".media-table tbody tr td:nth-child({i})").all_inner_texts()

    assert column(1)[:3] == ["0", "1", "2"]
    panel.locator(".media-table th a", has_text="label").click()
    page.wait_for_function("""() => document.querySelector(
        '.media-panel[data-key="preds"] .media-table th[aria-sort="ascending"]')""")
    assert column(2)[0] == EVIL                     # '<' sorts before 'r', and it is text
    assert page.locator(".media-table script").count() == 0
    panel.locator(".media-table th a", has_text="label").click()
    page.wait_for_function("""() => document.querySelector(
        '.media-panel[data-key="preds"] .media-table th[aria-sort="descending"]')""")
    assert column(2)[0] == "row 9"
    panel.locator(".media-table a.media-next").click()
    page.wait_for_function("""() => document.querySelector(
        '.media-panel[data-key="preds"] .media-pages').textContent.includes('rows 21')""")
    assert len(column(2)) == 10
    assert not errors


def test_audio_is_a_player_that_loads_and_long_text_is_folded(page, site):
    url, a, _ = site
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.run/{a}?tab=media")
    assert page.locator('nav.tabs a.active').inner_text() == "Media"
    audio_panel = open_panel(page, url, "clip")
    assert audio_panel.locator("audio[controls]").count() == 1
    page.wait_for_function("""() => { const el = document.querySelector('.media-panel[data-key="clip"] audio');
        if (el.readyState < 1) el.load();
        return el.readyState >= 1 && el.duration > 0.9; }""", timeout=15000)
    essay = open_panel(page, url, "essay")
    details = essay.locator("details.media-text")
    assert details.get_attribute("open") is None
    assert not essay.locator("details.media-text pre").is_visible()
    assert "first line of a long answer" in details.locator("summary").inner_text()
    details.locator("summary").click()
    assert essay.locator("details.media-text pre").is_visible()
    assert essay.locator("details.media-text pre").inner_text().count("more words") == 50
    shot(page, "media-run-tab")
    assert not errors


def test_a_panel_of_a_running_run_shows_new_steps_without_a_reload(page, tmp_path):
    """While a run runs, a panel whose slider is at its last step asks again (every 5 s):
    images logged after the page opened appear, and the slider reaches them."""

    root = tmp_path / "experiments"
    run = nb.init("llm", dir=root, run_name="live", **QUIET)
    for step in (0, 1):
        run.log({"val/samples": nb.Image(np.full((8, 8, 3), 40 * step, np.uint8))}, step=step)
    run.flush()
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={run.id}")
        panel = open_panel(page, url, "val/samples")
        slider = panel.locator(".media-slider input[type=range]")
        assert slider.get_attribute("max") == "1"
        assert panel.locator(".media-inner").get_attribute("data-live") == "1"
        for step in (2, 3):
            run.log({"val/samples": nb.Image(np.full((8, 8, 3), 200, np.uint8))}, step=step)
        run.flush()
        page.wait_for_function(
            """() => { const s = document.querySelector('.media-panel[data-key="val/samples"] '
                                                         + '.media-slider input[type=range]');
                       return s && s.max === '3'; }""", timeout=20000)  # refreshed every 5 s
        assert panel.locator(".media-run-step").inner_text() == "step 3"
        assert not errors
    finally:
        shutdown(proc)
        if run.status == "running":
            run.finish()
