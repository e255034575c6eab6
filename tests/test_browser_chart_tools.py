"""The chart tools (static/chart_tools.js) in a real browser, on the Charts page of two small
runs logged at different steps: "CSV (drawn)" downloads a file whose rows are the chart data
endpoint's JSON (nothing is downsampled: the acceptance test "CSV export equals the chart's
data"), "CSV (every point)" links to every point of the chart's query, "PNG" downloads a PNG
of the chart, and "Full screen" draws the chart across the screen until Escape. Runs written
by the real API; Debian's Chromium through Playwright against `nuboard up`; the screenshot goes
to test-screenshots/chart-full-screen.png, chart-export-menu.png and
chart-export.png (the PNG downloaded)."""
from __future__ import annotations

import csv
import io
import struct

import pytest
from helpers import QUIET
from helpers_browser import SHOTS, export, serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

import nuboard as nb

pytestmark = pytest.mark.browser

CHART = "train/loss"
RUNS = {"every-step": [(i, 1.0 / (i + 3)) for i in range(20)],          # thirds, sevenths...
        "=odd,steps": [(2 * i + 1, 0.1 * i - 0.7) for i in range(12)]}     # a name to quote


@pytest.fixture
def charts(root, page):
    ids = {}
    for name, points in RUNS.items():
        with nb.init("llm", dir=root, run_name=name, **QUIET) as run:
            for step, value in points:
                run.add_scalar(CHART, value, step=step)
        ids[name] = run.id
    proc, url = serve(root)
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
    figure = page.locator(f'figure.chart[data-name="{CHART}"][data-drawn="1"]')
    expect(figure).to_have_count(1)
    yield url, ids, figure
    assert errors == []
    shutdown(proc)


def test_csv_of_the_drawn_chart_equals_its_data(charts, page):
    url, ids, figure = charts
    table = list(csv.reader(io.StringIO(export(page, figure, "CSV (drawn)").decode())))
    doc = page.request.get(f"{url}/api/p/llm/.chart?name={CHART}&runs={','.join(ids.values())}").json()
    head, body = table[0], table[1:]
    assert head[0] == "step"
    labels = [s["label"] for s in doc["series"]]
    assert head[1:] == [("'" if label.startswith("=") else "") + label for label in labels]
    assert head[2].startswith("'=odd,steps")              # a formula made text, the comma kept
    assert [int(r[0]) for r in body] == sorted({x for s in doc["series"] for x in s["x"]})
    for column, series in enumerate(doc["series"], start=1):
        assert not series["downsampled"]
        drawn = [(int(r[0]), float(r[column])) for r in body if r[column] != ""]
        assert drawn == list(zip(series["x"], series["y"]))     # every value, exactly

    # every point: the server's CSV of the same query
    figure.locator("summary", has_text="Export").click()
    link = figure.get_by_role("link", name="CSV (every point)")
    shot(page, "chart-export-menu")
    href = link.get_attribute("href")
    assert href.startswith("/p/llm/.chart.csv?") and f"name={CHART.replace('/', '%2F')}" in href
    every = list(csv.reader(io.StringIO(page.request.get(url + href).text())))
    assert len(every) - 1 == sum(len(p) for p in RUNS.values())


def test_png_of_the_chart(charts, page):
    url, ids, figure = charts
    data = export(page, figure, "PNG")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])              # the IHDR chunk
    canvas = figure.locator(".plot canvas").evaluate("c => [c.width, c.height]")
    assert width == canvas[0] and height > canvas[1]                # the name and lines' names too
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "chart-export.png").write_bytes(data)


def test_full_screen_draws_it_wider_until_escape(charts, page):
    url, ids, figure = charts
    width = "f => f.querySelector('.plot canvas').getBoundingClientRect().width"
    before = figure.evaluate(width)
    figure.get_by_role("button", name="Full screen").click()
    expect(figure).to_have_class("chart chart-full")
    page.wait_for_function(f"([f, w]) => ({width})(f) > w + 200", arg=[figure.element_handle(), before])
    shot(page, "chart-full-screen")
    page.keyboard.press("Escape")
    expect(figure).to_have_class("chart")
    page.wait_for_function(f"([f, w]) => ({width})(f) === w", arg=[figure.element_handle(), before])
