"""The parallel-coordinates page in a real browser: the canvas is inked in the runs' colours,
dragging along an axis brushes a range that goes into the URL and survives a reload, and the
"Chart these runs" link carries exactly the runs inside, and "Select in the Runs table"
makes them the Runs page's selection. Runs written by the real API; Debian's
Chromium through Playwright against `nuboard up`; the screenshot goes to
test-screenshots/parallel.png."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import QUIET
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

import nuboard as nb

pytestmark = pytest.mark.browser

RUNS = [("lr-small", 0.001, 3, 2.0), ("lr-mid", 0.01, 2, 1.0), ("lr-big", 0.1, 1, 0.5)]

# how many canvas pixels are within a tolerance of the colour '#rrggbb'
INKED = """([hex, tolerance]) => { const c = document.getElementById('pc-canvas');
    const rgb = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (d[i + 3] > 200 && Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1])
          + Math.abs(d[i + 2] - rgb[2]) < tolerance) n++;
    return n; }"""

# the page position of a value's fraction (0 bottom, 1 top) on axis i
WHERE = """([i, f]) => { const b = document.getElementById('parallel'), d = b.dataset;
    const r = document.getElementById('pc-canvas').getBoundingClientRect();
    return [r.left + Number(d.axisX.split(',')[i]),
            r.top + Number(d.bottom) - f * (Number(d.bottom) - Number(d.top))]; }"""


@pytest.fixture
def site(root, page):
    ids = {}
    for name, lr, seed, loss in RUNS:
        with nb.init("llm", dir=root, run_name=name, config={"lr": lr, "seed": seed},
                     **QUIET) as run:
            run.add_scalar("train/loss", loss, step=0)
        ids[name] = run.id
    proc, url = serve(root)
    page.set_viewport_size({"width": 1280, "height": 900})
    yield url, ids
    shutdown(proc)


def test_parallel_draws_brushes_and_keeps_the_brush(site, page):
    url, ids = site
    errors = watch_errors(page)
    page.goto(url + "/p/llm/.parallel?axes=config.lr,config.seed,train/loss.last&log=config.lr")
    plot = page.locator("#parallel")
    expect(plot).to_have_attribute("data-drawn", "3")
    expect(plot).to_have_attribute("data-inside", "3")
    colours = page.evaluate("() => JSON.parse(document.getElementById('parallel-data')"
                            ".textContent).runs.map(r => r.colour)")
    for colour in colours:
        assert page.evaluate(INKED, [colour, 40]) > 50, colour

    # train/loss.last runs 0.5 (bottom) to 2.0 (top): brush its top half, lr-small alone
    x, y0 = page.evaluate(WHERE, [2, 1.02])
    _, y1 = page.evaluate(WHERE, [2, 0.6])
    page.mouse.move(x, y0)
    page.mouse.down()
    page.mouse.move(x, (y0 + y1) / 2)
    page.mouse.move(x, y1)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"[?&]brush=train%2Floss\.last%3A"))
    expect(plot).to_have_attribute("data-inside", "1")
    expect(page.locator("#pc-inside")).to_have_text("1")

    def chart_runs() -> list[str]:
        href = page.locator("#pc-chart-link").get_attribute("href")
        return parse_qs(urlsplit(href).query)["runs"][0].split(",")

    assert chart_runs() == [ids["lr-small"]]
    shot(page, "parallel")
    page.reload()
    expect(plot).to_have_attribute("data-inside", "1")
    expect(page.locator("#pc-inside")).to_have_text("1")
    assert chart_runs() == [ids["lr-small"]]
    page.locator("#pc-select-link").click()              # the Runs table takes them as selection
    expect(page.locator("#selection-count")).to_have_text("1 run selected")
    expect(page.locator(f'.run-select[value="{ids["lr-small"]}"]')).to_be_checked()
    page.go_back()
    page.locator("#pc-chart-link").click()
    expect(page).to_have_url(re.compile(r"/p/llm/\.charts\?runs="))
    assert errors == []


def test_hover_names_a_run_a_click_opens_it_and_axes_move_by_their_names(site, page):
    url, ids = site
    errors = watch_errors(page)
    page.goto(url + "/p/llm/.parallel?axes=config.lr,config.seed,train/loss.last&log=config.lr")
    plot = page.locator("#parallel")
    expect(plot).to_have_attribute("data-drawn", "3")
    # lr-small is on top of both config.seed (3) and train/loss.last (2.0): between those axes
    # its line runs along the top
    x1, top = page.evaluate(WHERE, [1, 1.0])
    x2, _ = page.evaluate(WHERE, [2, 1.0])
    page.mouse.move((x1 + x2) / 2, top)
    expect(plot).to_have_attribute("data-hover", ids["lr-small"])
    tip = page.locator("#pc-tip")
    expect(tip).to_be_visible()
    assert tip.inner_text().splitlines()[:2] == ["lr-small", "config.lr: 0.001"]
    shot(page, "parallel-hover")
    _, bottom = page.evaluate(WHERE, [1, 0.0])
    page.mouse.move((x1 + x2) / 2, (top + bottom) / 2 + 3)       # between lines: nobody
    expect(tip).to_be_hidden()

    # drag config.lr's name past config.seed: the order changes, in the URL, and a reload keeps it
    x0, _ = page.evaluate(WHERE, [0, 1.0])
    name_y = top - 14
    page.mouse.move(x0 + 5, name_y)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, name_y)
    page.mouse.move(x1 + 20, name_y)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"[?&]axes=config\.seed%2Cconfig\.lr%2Ctrain%2Floss\.last"))
    assert page.input_value("#pc-axes") == "config.seed,config.lr,train/loss.last"
    page.reload()
    order = page.evaluate("() => JSON.parse(document.getElementById('parallel-data')"
                          ".textContent).axes.map(a => a.field)")
    assert order == ["config.seed", "config.lr", "train/loss.last"]

    x1, top = page.evaluate(WHERE, [1, 1.0])                        # config.lr now second
    x2, _ = page.evaluate(WHERE, [2, 1.0])
    _, bottom = page.evaluate(WHERE, [2, 0.0])
    # lr-big runs from the top of config.lr down to the bottom of train/loss.last
    page.mouse.move(x1 + 20, top + (bottom - top) * 20 / (x2 - x1))
    expect(plot).to_have_attribute("data-hover", ids["lr-big"])
    page.mouse.down()
    page.mouse.up()
    expect(page).to_have_url(re.compile(re.escape(f"/p/llm/.run/{ids['lr-big']}")))
    assert errors == []
