"""The Scatter page in a real browser: the points are inked in their runs' colours, choosing
another x changes the URL and the view survives a reload, hovering a point names its run, and
a click opens the run. Runs written by the real API; Debian's Chromium through Playwright against
`nuboard up`; the screenshot goes to test-screenshots/scatter.png."""
from __future__ import annotations

import re

import pytest
from helpers import QUIET
from helpers_browser import INKED, serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

import nuboard as nb

pytestmark = pytest.mark.browser

RUNS = [("lr-small", 0.001, 3, 2.0), ("lr-mid", 0.01, 2, 1.0), ("lr-big", 0.1, 1, 0.5)]

POINT = """([x, y]) => { const f = document.getElementById('scatter');
    const o = f.querySelector('.u-over').getBoundingClientRect(), d = f.dataset;
    return [o.left + (x - d.xmin) / (d.xmax - d.xmin) * o.width,
            o.top + (1 - (y - d.ymin) / (d.ymax - d.ymin)) * o.height]; }"""


@pytest.fixture
def site(root, page):
    for name, lr, seed, loss in RUNS:
        with nb.init("llm", dir=root, run_name=name, config={"lr": lr, "seed": seed},
                     **QUIET) as run:
            run.add_scalar("train/loss", loss, step=0)
    proc, url = serve(root)
    page.set_viewport_size({"width": 1280, "height": 900})
    yield url
    shutdown(proc)


def test_scatter_draws_hovers_and_keeps_its_axes(site, page):
    errors = watch_errors(page)
    page.goto(site + "/p/llm/.scatter?x=config.lr&y=train/loss.last")
    plot = page.locator("#scatter")
    expect(plot).to_have_attribute("data-drawn", "3")
    colours = page.evaluate("() => JSON.parse(document.getElementById('scatter-data').textContent)"
                            ".points.map(p => p.colour)")
    for colour in colours:
        lo, hi = float(plot.get_attribute("data-xmin")), float(plot.get_attribute("data-xmax"))
        assert plot.evaluate(INKED, [lo, hi, colour, 40]) > 20, colour

    page.select_option("#sc-x", "config.seed")
    expect(page).to_have_url(re.compile(r"[?&]x=config.seed(&|$)"))
    page.reload()
    expect(page.locator("#sc-x")).to_have_value("config.seed")
    expect(plot).to_have_attribute("data-drawn", "3")

    x, y = page.evaluate(POINT, [2, 1.0])
    page.mouse.move(x, y)
    tip = page.locator("#sc-tip")
    expect(tip).to_be_visible()
    expect(tip.locator(".sc-tip-name")).to_have_text("lr-mid")
    expect(tip).to_contain_text("config.seed: 2")
    shot(page, "scatter")
    page.mouse.click(x, y)
    expect(page).to_have_url(re.compile(r"/p/llm/\.run/"))
    expect(page.get_by_text("lr-mid").first).to_be_visible()
    assert errors == []
