"""Issue 33's acceptance on a sweep of 2,000 runs, in a real browser: parallel coordinates of a
query's 2,000 runs draw and brush (the URL carries the range, the JSON twin's runs inside are
those whose config lies in it, and the view survives a reload and the copied URL in a fresh
browser), Scatter draws 2,000 points and keeps its settings, the Diff of three runs selected
on the Runs page shows the config keys that differ, and Charts grouped by config.opt draw
three lines whose median, mean and std are the numbers the sweep's own curves give; a chart's
CSV export equals its data, and a run deleted from its page (`--edit-runs`) lies whole in
runs/.trash/ and comes back whole from the Trash page.

One sweep for the module (tests/helpers_sweep.py: the API writes one run per cell, the rest
are copies with their own run.json), served by `nuboard up`; Debian's Chromium through
Playwright. Screenshots go to test-screenshots/sweep-accept-*.png."""
from __future__ import annotations

import csv
import io
import re
import statistics
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers_browser import INKED, export, serve, shot, shutdown, watch_errors
from helpers_sweep import OPTS, last, make_sweep
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

RUNS = 2000
AXES = "config.lr,config.width,config.opt,config.seed,train/loss.last,val/acc.last"

# how much of the plot between the first two axes the lines ink (0 to 1)
INK_SHARE = """() => { const b = document.getElementById('parallel'), c = document.getElementById('pc-canvas');
    const xs = b.dataset.axisX.split(',').map(Number), k = c.width / c.getBoundingClientRect().width;
    const x0 = Math.round((xs[0] + 10) * k), x1 = Math.round((xs[1] - 10) * k);
    const y0 = Math.round(Number(b.dataset.top) * k), y1 = Math.round(Number(b.dataset.bottom) * k);
    const d = c.getContext('2d').getImageData(x0, y0, x1 - x0, y1 - y0).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n / (d.length / 4); }"""

# the page position of a fraction (0 bottom, 1 top) of axis i's height
WHERE = """([i, f]) => { const b = document.getElementById('parallel'), d = b.dataset;
    const r = document.getElementById('pc-canvas').getBoundingClientRect();
    return [r.left + Number(d.axisX.split(',')[i]),
            r.top + Number(d.bottom) - f * (Number(d.bottom) - Number(d.top))]; }"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep-accept") / "experiments"
    runs = make_sweep(root, "sweep", RUNS)
    proc, url = serve(root, "--edit-runs")
    yield url, {r.id: r for r in runs}
    shutdown(proc)


def twin(page, url: str, path: str, query: str) -> dict:
    """A view's JSON twin for the query its page's URL carries."""
    reply = page.request.get(f"{url}/api{path}?{query}")
    assert reply.ok, reply.text()
    return reply.json()


def fresh_page(browser, address: str):
    """The address opened in a new browser context: nothing of the first page's storage."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    other = context.new_page()
    other.goto(address)
    return context, other


def test_parallel_coordinates_of_2000_runs_brush_and_keep_the_range(sweep, page, browser):
    url, runs = sweep
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/p/sweep/.parallel?q=&axes={AXES}&log=config.lr&colour=val/acc.last")
    plot = page.locator("#parallel")
    expect(plot).to_have_attribute("data-drawn", str(RUNS))
    expect(plot).to_have_attribute("data-inside", str(RUNS))
    data = twin(page, url, "/p/sweep/.parallel", urlsplit(page.url).query)
    assert (len(data["runs"]), data["total"], data["capped"]) == (RUNS, RUNS, False)
    assert {r["id"] for r in data["runs"]} == set(runs)
    assert page.evaluate(INK_SHARE) > 0.3                   # 2,000 lines fill the space

    # drag down config.lr (axis 0, log) from 3/4 of its height to 2/5
    x, y0 = page.evaluate(WHERE, [0, 0.75])
    _, y1 = page.evaluate(WHERE, [0, 0.4])
    page.mouse.move(x, y0)
    page.mouse.down()
    page.mouse.move(x, (y0 + y1) / 2)
    page.mouse.move(x, y1)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"[?&]brush=config\.lr%3A"))
    field, lo, hi = parse_qs(urlsplit(page.url).query)["brush"][0].rsplit(":", 2)
    lo, hi = float(lo), float(hi)
    assert field == "config.lr" and 1e-5 < lo < hi < 1e-1
    inside = {i for i, r in runs.items() if lo <= r.config["lr"] <= hi}
    assert 0 < len(inside) < RUNS
    data = twin(page, url, "/p/sweep/.parallel", urlsplit(page.url).query)
    assert set(data["inside"]) == inside and len(data["inside"]) == len(inside)
    expect(plot).to_have_attribute("data-inside", str(len(inside)))
    expect(page.locator("#pc-inside")).to_have_text(str(len(inside)))
    shot(page, "sweep-accept-parallel")

    page.reload()
    expect(plot).to_have_attribute("data-drawn", str(RUNS))
    expect(plot).to_have_attribute("data-inside", str(len(inside)))
    context, other = fresh_page(browser, page.url)
    try:
        expect(other.locator("#parallel")).to_have_attribute("data-inside", str(len(inside)))
        expect(other.locator("#pc-inside")).to_have_text(str(len(inside)))
    finally:
        context.close()
    assert errors == []


def test_scatter_of_2000_points_keeps_its_settings(sweep, page):
    url, runs = sweep
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/p/sweep/.scatter?q=&x=config.lr")
    page.select_option("#sc-y", "val/acc.last")
    expect(page).to_have_url(re.compile(r"[?&]y=val%2Facc\.last(&|$)"))
    page.locator("#sc-logx").check()
    expect(page).to_have_url(re.compile(r"[?&]logx=1(&|$)"))
    plot = page.locator("#scatter")
    expect(plot).to_have_attribute("data-drawn", str(RUNS))
    data = twin(page, url, "/p/sweep/.scatter", urlsplit(page.url).query)
    assert len(data["points"]) == RUNS
    assert {p["id"]: (p["x"], p["y"]) for p in data["points"]} == {
        i: (r.config["lr"], last(r, "val/acc")) for i, r in runs.items()}
    colour = Counter(p["colour"] for p in data["points"]).most_common(1)[0][0]
    lo, hi = float(plot.get_attribute("data-xmin")), float(plot.get_attribute("data-xmax"))
    assert plot.evaluate(INKED, [lo, hi, colour, 40]) > 50
    shot(page, "sweep-accept-scatter")

    page.reload()
    expect(page.locator("#sc-x")).to_have_value("config.lr")
    expect(page.locator("#sc-y")).to_have_value("val/acc.last")
    expect(page.locator("#sc-logx")).to_be_checked()
    expect(plot).to_have_attribute("data-drawn", str(RUNS))
    assert errors == []


def test_diff_of_three_selected_runs_shows_what_differs(sweep, page):
    url, runs = sweep
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/p/sweep")
    boxes = page.locator(".run-select")
    chosen = [boxes.nth(k).get_attribute("value") for k in range(3)]
    for k in range(3):
        boxes.nth(k).check()
    page.locator("#diff-selected").click()
    expect(page.locator("th.diff-run .diff-run-name")).to_have_text(
        [runs[i].name for i in chosen])
    configs = [runs[i].config for i in chosen]
    differ = sorted(k for k in configs[0] if len({repr(c[k]) for c in configs}) > 1)
    assert {"lr", "seed"} <= set(differ)
    rows = page.locator("tr.diff-row")
    expect(rows).to_have_count(len(differ))
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.key)")) == differ
    expect(page.locator('tr.diff-row[data-key="seed"] td')).to_have_text(
        [str(c["seed"]) for c in configs])
    shot(page, "sweep-accept-diff")
    assert errors == []


def chosen_for_groups(runs: dict) -> list:
    """Four runs of each optimizer, each from a cell of its own (other curves)."""
    out, cells = [], set()
    for run in runs.values():
        cell = (run.config["opt"], tuple(run.points["train/loss"]))
        if cell not in cells and sum(r.config["opt"] == run.config["opt"] for r in out) < 4:
            cells.add(cell)
            out.append(run)
    return out


def test_charts_grouped_by_optimizer_draw_the_groups_figures(sweep, page, browser):
    url, runs = sweep
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    chosen = chosen_for_groups(runs)
    ids = ",".join(r.id for r in chosen)
    page.goto(f"{url}/p/sweep/.charts?runs={ids}")
    page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"]', timeout=20000)
    page.select_option("#group-by", "config.opt")
    page.select_option("#group-agg", "median")
    page.select_option("#group-band", "std")
    page.wait_for_function("() => { const p = new URLSearchParams(location.search); return "
                           "p.get('group') === 'config.opt' && p.get('agg') === 'median' "
                           "&& p.get('band') === 'std'; }")
    legend = page.locator(".legend-groups li")
    expect(legend).to_have_count(3)

    data = twin(page, url, "/p/sweep/.chart",
                f"name=train/loss&runs={ids}&group=config.opt&agg=median&band=std")
    lines = {g["label"]: g for g in data["groups"]}
    assert sorted(lines) == sorted(OPTS)
    for opt, line in lines.items():
        curves = [dict(r.points["train/loss"]) for r in chosen if r.config["opt"] == opt]
        steps = sorted(curves[0])
        at = [[c[s] for c in curves] for s in steps]
        assert line["x"] == steps and line["count"] == 4
        assert line["mean"] == pytest.approx([statistics.mean(v) for v in at])
        assert line["median"] == pytest.approx([statistics.median(v) for v in at])
        assert line["std"] == pytest.approx([statistics.stdev(v) for v in at])
    figure = page.locator('figure.chart[data-name="train/loss"]')
    page.wait_for_function("document.querySelector('figure.chart[data-name=\"train/loss\"]')"
                           ".dataset.series.includes('adamw')")
    lo, hi = float(figure.get_attribute("data-xmin")), float(figure.get_attribute("data-xmax"))
    for line in lines.values():
        assert figure.evaluate(INKED, [lo, hi, line["colour"], 40]) > 20, line["label"]
    shot(page, "sweep-accept-charts-grouped")

    def kept(p) -> None:
        expect(p.locator(".legend-groups li")).to_have_count(3)
        expect(p.locator("#group-by")).to_have_value("config.opt")
        expect(p.locator("#group-agg")).to_have_value("median")
        expect(p.locator("#group-band")).to_have_value("std")

    page.reload()
    kept(page)
    context, other = fresh_page(browser, page.url)
    try:
        kept(other)
    finally:
        context.close()
    assert errors == []


def test_a_sweep_charts_csv_export_equals_its_data(sweep, page):
    url, runs = sweep
    errors = watch_errors(page)
    chosen = sorted(runs)[:12]
    page.goto(f"{url}/p/sweep/.charts?runs={','.join(chosen)}")
    figure = page.locator('figure.chart[data-name="train/loss"][data-drawn="1"]')
    expect(figure).to_have_count(1)
    table = list(csv.reader(io.StringIO(export(page, figure, "CSV (drawn)").decode())))
    doc = twin(page, url, "/p/sweep/.chart", f"name=train/loss&runs={','.join(chosen)}")
    assert table[0] == ["step"] + [s["label"] for s in doc["series"]]
    assert [int(r[0]) for r in table[1:]] == sorted({x for s in doc["series"] for x in s["x"]})
    for column, series in enumerate(doc["series"], start=1):
        drawn = [(int(r[0]), float(r[column])) for r in table[1:] if r[column] != ""]
        assert drawn == list(zip(series["x"], series["y"]))         # every value, exactly
    every = page.request.get(f"{url}/p/sweep/.chart.csv?name=train/loss&runs={','.join(chosen)}")
    rows = list(csv.reader(io.StringIO(every.text())))[1:]
    assert len(rows) == sum(len(runs[r].points["train/loss"]) for r in chosen)
    assert errors == []


def snapshot(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_deleted_sweep_run_is_in_the_trash_and_restored_whole(sweep, page):
    """Last in the module: the sweep has 2,000 runs again when it ends."""
    url, runs = sweep
    errors = watch_errors(page)
    victim = sorted(runs)[-1]
    reply = page.request.get(f"{url}/api/projects")            # the folder nuboard up serves
    assert reply.ok
    root = Path(reply.json()["root"])
    folder = root / "sweep" / "runs" / victim
    before = snapshot(folder)
    page.goto(f"{url}/p/sweep/.run/{victim}")
    page.click("#delete-run")
    page.click("#confirm-delete")
    page.wait_for_url("**/p/sweep/.trash?moved=*")
    assert not folder.exists()
    assert snapshot(root / "sweep" / "runs" / ".trash" / victim) == before
    data = twin(page, url, "/p/sweep/.parallel", f"q=&axes={AXES}")
    assert data["total"] == RUNS - 1 and victim not in {r["id"] for r in data["runs"]}
    page.locator(f"tr[data-run='{victim}'] button.restore-run").click()
    page.wait_for_url(f"**/p/sweep/.run/{victim}")
    assert snapshot(folder) == before
    data = twin(page, url, "/p/sweep/.parallel", f"q=&axes={AXES}")
    assert data["total"] == RUNS and victim in {r["id"] for r in data["runs"]}
    assert errors == []
