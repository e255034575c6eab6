"""The Charts page in a real browser polls for new points while a chosen run runs, and stops
once it has finished (Debian's Chromium through Playwright, `nuboard up` as a subprocess)."""
from __future__ import annotations

import re
import time

import pytest
from helpers import QUIET
from helpers_browser import INKED as INKED_BETWEEN
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import nuboard as nb

pytestmark = pytest.mark.browser


def test_charts_stop_polling_when_the_run_ends(page, root):
    run = nb.init("llm", dir=root, run_name="live", **QUIET)
    for step in range(5):
        run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
    run.flush()
    proc, url = serve(root)
    asked: list[float] = []
    zoomed: list[str] = []
    try:
        errors = watch_errors(page)
        page.on("request", lambda r: asked.append(time.monotonic()) if "/.chart?" in r.url else None)
        page.on("request", lambda r: zoomed.append(r.url) if "/.chart?" in r.url and "lo=" in r.url else None)
        page.goto(f"{url}/p/llm/.charts?runs={run.id}")
        loss = page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"]')
        assert page.get_attribute("#charts", "data-live") == "1"
        assert page.locator(".charts-live").is_visible()
        box = loss.query_selector(".u-over").bounding_box()     # zoomed, it polls on
        page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + 50)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + 50, steps=5)
        page.mouse.up()
        page.wait_for_function("document.querySelector('figure.chart').dataset.fetched")
        first = len(asked)
        run.finish()
        page.wait_for_function("document.querySelector('#charts').dataset.live === '0'",
                               timeout=30000)
        assert len(asked) > first                   # it did poll while the run ran
        assert len(zoomed) >= 2                     # the zoom's own request, then the polls'
        assert page.get_attribute("figure.chart", "data-fetched")      # still zoomed
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


# -- the run list, tooltip, settings and sparse series (issue 15, items 1-3) --------------------

def three_runs(make_run, charts=("train/loss", "train/acc")) -> dict[str, str]:
    """Runs 'small', 'mid' and 'big' whose every chart is scale/(step+1): big is always on top."""
    ids = {}
    for name, scale in (("small", 1.0), ("mid", 2.0), ("big", 3.0)):
        points = {chart: [(i, scale / (i + 1)) for i in range(50)] for chart in charts}
        # the project's first three runs: three distinct colours, so tests tell them apart
        ids[name] = make_run("llm", points, run_name=name).name
    return ids


def drawn(page, name: str):
    page.wait_for_selector(f'figure.chart[data-name="{name}"][data-drawn="1"]', timeout=20000)
    return page.locator(f'figure.chart[data-name="{name}"]')


def hover(page, figure, fraction: float = 0.5) -> list[str]:
    """Move the mouse over the figure's plot; the tooltip's rows as the user reads them."""
    box = figure.locator(".u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.5)
    figure.locator(".chart-tip:not([hidden])").wait_for()
    return figure.locator(".chart-tip .tip-row .tip-name").all_inner_texts()


def tip_colours(figure) -> dict[str, str]:
    return figure.evaluate("""f => Object.fromEntries(Array.from(f.querySelectorAll('.chart-tip .tip-row'))
        .map(r => [r.querySelector('.tip-name').textContent.split(' ')[0],
                   getComputedStyle(r.querySelector('.swatch')).backgroundColor]))""")


def test_a_run_has_one_colour_on_every_chart_and_in_the_run_list(page, root, make_run):
    ids = three_runs(make_run)
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
        loss, acc = drawn(page, "train/loss"), drawn(page, "train/acc")
        listed = page.evaluate("""() => Object.fromEntries(Array.from(
            document.querySelectorAll('.legend-runs li[data-run]')).map(li =>
            [li.querySelector('a').textContent.split(' ')[0],
             getComputedStyle(li.querySelector('.swatch')).backgroundColor]))""")
        hover(page, loss)
        on_loss = tip_colours(loss)
        hover(page, acc)
        on_acc = tip_colours(acc)
        assert set(listed) == {"small", "mid", "big"}
        assert on_loss == on_acc == listed
        assert len(set(listed.values())) == 3            # three runs, three colours
        assert page.locator(".u-legend").count() == 0     # one run list, no table under each chart
        shot(page, "charts-one-colour-per-run")
        assert not errors
    finally:
        shutdown(proc)


def test_the_tooltip_lists_the_runs_by_value_and_the_cursor_is_synced(page, root, make_run):
    ids = three_runs(make_run)
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
        loss, acc = drawn(page, "train/loss"), drawn(page, "train/acc")
        rows = hover(page, loss, 0.4)
        assert [r.split(" ")[0] for r in rows] == ["big", "mid", "small"]
        assert loss.locator(".chart-tip .tip-row.nearest").count() == 1
        assert loss.locator(".chart-tip .tip-x").inner_text().startswith("step ")
        assert acc.locator(".chart-tip").is_hidden()          # one tooltip: the hovered chart's
        left = acc.evaluate("f => f.querySelector('.u-cursor-x').getBoundingClientRect().left")
        box = acc.locator(".u-over").bounding_box()
        assert box["x"] + 0.3 * box["width"] < left < box["x"] + 0.5 * box["width"]
        shot(page, "charts-tooltip")
        page.mouse.move(5, 5)
        loss.locator(".chart-tip").wait_for(state="hidden")
        assert not errors
    finally:
        shutdown(proc)


# opaque pixels within a little of a colour ("#rrggbb") in the plot area of the figure's canvas:
# the axis labels outside it are grey, and so is one run colour (#7f7f7f)
INKED = """(f, hex) => { const c = f.querySelector('canvas');
    const rgb = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
    const box = c.getBoundingClientRect(), over = f.querySelector('.u-over').getBoundingClientRect();
    const sx = c.width / box.width, sy = c.height / box.height;
    const x = Math.round((over.left - box.left) * sx), y = Math.round((over.top - box.top) * sy);
    const d = c.getContext('2d').getImageData(x, y, Math.round(over.width * sx),
                                              Math.round(over.height * sy)).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (d[i + 3] > 200 &&
          Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) < 40) n++;
    return n; }"""


def record_mouseovers(page) -> None:
    """From now on, keep the target of each mouseover (tag.class[data-run]) in window.__overs."""
    page.evaluate("""() => { window.__overs = [];
        document.addEventListener('mouseover', e => window.__overs.push(
            e.target.tagName.toLowerCase() + (typeof e.target.className === 'string' &&
            e.target.className ? '.' + e.target.className.split(' ').join('.') : '') +
            (e.target.dataset && e.target.dataset.run ? '[' + e.target.dataset.run + ']' : '')),
            true); }""")


def test_hiding_a_run_in_the_run_list_hides_it_on_every_chart(page, root, make_run):
    ids = three_runs(make_run)
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
        loss, acc = drawn(page, "train/loss"), drawn(page, "train/acc")
        page.click(f'.legend-runs li[data-run="{ids["big"]}"] .swatch')
        assert "off" in page.get_attribute(f'.legend-runs li[data-run="{ids["big"]}"]', "class")
        assert [r.split(" ")[0] for r in hover(page, loss)] == ["mid", "small"]
        assert [r.split(" ")[0] for r in hover(page, acc)] == ["mid", "small"]
        assert float(loss.get_attribute("data-ymax")) < 2.5      # the y range follows what is shown
        small = page.get_attribute(f'.legend-runs li[data-run="{ids["small"]}"]', "data-colour")
        before = loss.evaluate(INKED, small)
        record_mouseovers(page)
        page.hover(f'.legend-runs li[data-run="{ids["mid"]}"]')  # highlight mid: small fades
        assert before > 100
        try:
            page.wait_for_function(f"""() => ({INKED})(document.querySelector('figure.chart[data-name="train/loss"]'),
                                                      {small!r}) < {before} / 4""", timeout=5000)
        except PlaywrightTimeout:        # say what was hovered
            raise AssertionError(f"small did not fade: {loss.evaluate(INKED, small)} of {before} "
                                 f"pixels left; mouseovers since the hover: "
                                 f"{page.evaluate('() => window.__overs')}") from None
        shot(page, "charts-big-hidden-mid-highlighted")
        page.mouse.move(5, 400)
        page.wait_for_function(f"""() => ({INKED})(document.querySelector('figure.chart[data-name="train/loss"]'),
                                                  {small!r}) > {before} * 0.8""")
        page.click(f'.legend-runs li[data-run="{ids["big"]}"] .swatch')
        assert [r.split(" ")[0] for r in hover(page, acc)] == ["big", "mid", "small"]
        assert not errors
    finally:
        shutdown(proc)


def test_settings_are_kept_across_a_reload_and_the_url_wins(page, root, make_run):
    ids = three_runs(make_run, charts=("train/loss",))
    proc, url = serve(root)
    base = f"{url}/p/llm/.charts?runs={','.join(ids.values())}"
    try:
        errors = watch_errors(page)
        page.goto(base)
        drawn(page, "train/loss")
        page.fill("#smoothing", "0.6")
        page.dispatch_event("#smoothing", "input")
        page.check("#log-scale")
        page.select_option("#x-axis", "relative")
        page.wait_for_function("location.search.includes('x=relative')")
        assert "smoothing=0.6" in page.url and "log=1" in page.url
        page.reload()
        drawn(page, "train/loss")
        assert page.input_value("#smoothing") == "0.6" and page.is_checked("#log-scale")
        assert page.input_value("#x-axis") == "relative"
        page.goto(base)                                   # no settings in the URL: this project's
        drawn(page, "train/loss")
        assert page.input_value("#smoothing") == "0.6" and page.is_checked("#log-scale")
        assert page.input_value("#x-axis") == "relative"
        assert page.inner_text("#smoothing-value") == "0.60"
        assert page.get_attribute('figure.chart[data-name="train/loss"]', "data-x-label") == "elapsed"
        page.goto(base + "&x=step&log=0")                 # the URL wins over what was kept
        drawn(page, "train/loss")
        assert page.input_value("#x-axis") == "step" and not page.is_checked("#log-scale")
        assert page.input_value("#smoothing") == "0.6"
        assert not errors
    finally:
        shutdown(proc)


def test_ignoring_outliers_keeps_a_spike_from_flattening_the_curves(page, root, make_run):
    points = [(i, 1.0 + 0.01 * (i % 7)) for i in range(300)]
    points[150] = (150, 1000.0)
    spiky = make_run("llm", {"train/loss": points}, run_name="spiky").name
    calm = make_run("llm", {"train/loss": [(i, 0.9 + 0.01 * (i % 5)) for i in range(300)]},
                    run_name="calm").name
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={spiky},{calm}&outliers=0")
        loss = drawn(page, "train/loss")
        assert float(loss.get_attribute("data-ymax")) > 900
        page.check("#outliers")
        page.wait_for_function("+document.querySelector('figure.chart').dataset.ymax < 5")
        low, high = float(loss.get_attribute("data-ymin")), float(loss.get_attribute("data-ymax"))
        assert 0.5 < low < 0.9 and 1.06 < high < 2
        shot(page, "charts-outliers-ignored")
        page.uncheck("#outliers")
        page.wait_for_function("+document.querySelector('figure.chart').dataset.ymax > 900")
        assert not errors
    finally:
        shutdown(proc)


def test_a_one_point_series_is_drawn_with_a_sane_range(page, root, make_run):
    run = make_run("llm", {"eval/acc": [(30, 0.75)]}, run_name="single").name
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        for x, widest in (("step", 20), ("wall", 3600), ("relative", 60)):
            page.goto(f"{url}/p/llm/.charts?runs={run}&x={x}")
            acc = drawn(page, "eval/acc")
            x_lo, x_hi = float(acc.get_attribute("data-xmin")), float(acc.get_attribute("data-xmax"))
            y_lo, y_hi = float(acc.get_attribute("data-ymin")), float(acc.get_attribute("data-ymax"))
            assert 0 < x_hi - x_lo <= widest, (x, x_lo, x_hi)
            assert y_lo < 0.75 < y_hi and y_hi - y_lo < 1
            for ticks in ("data-x-ticks", "data-y-ticks"):
                labels = (acc.get_attribute(ticks) or "").split("|")
                if x != "wall" or ticks == "data-y-ticks":
                    assert len(labels) >= 2 and len(labels) == len(set(labels)), labels  # not "1s 1s"
            if x == "wall":
                shot(page, "charts-one-point-wall")
        assert not errors
    finally:
        shutdown(proc)


def test_filter_and_pins(page, root, make_run):
    ids = three_runs(make_run, charts=("train/loss", "train/acc", "eval/acc"))
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
        drawn(page, "train/loss")
        page.fill("#chart-filter", "acc")
        assert page.locator('figure.chart[data-name="train/loss"]').is_hidden()
        assert page.locator('figure.chart[data-name="eval/acc"]').is_visible()
        page.fill("#chart-filter", "eval")
        assert page.locator("section.chart-group", has_text="train").is_hidden()
        page.fill("#chart-filter", "")
        page.click('figure.chart[data-name="train/acc"] button.pin')
        pinned = page.locator("section.chart-group.pinned")
        assert pinned.is_visible() and pinned.locator("figure.chart").count() == 1
        page.reload()
        drawn(page, "train/acc")
        pinned = page.locator("section.chart-group.pinned")
        assert pinned.locator('figure.chart[data-name="train/acc"]').count() == 1
        first = page.evaluate("document.querySelector('figure.chart').dataset.name")
        assert first == "train/acc"
        shot(page, "charts-pinned")
        pinned.locator("button.pin").click()
        assert page.locator("section.chart-group.pinned").is_hidden()
        assert not errors
    finally:
        shutdown(proc)


def test_the_run_page_charts_tab_draws_the_run_s_charts(page, root, make_run):
    run = make_run("llm", {"train/loss": [(i, 1.0 / (i + 1)) for i in range(20)],
                           "eval/acc": [(i * 5, 0.5 + i / 10) for i in range(4)]},
                   run_name="solo").name
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.run/{run}")
        page.click("nav.tabs a:has-text('Charts')")
        page.wait_for_url(re.compile(r"tab=charts"))
        drawn(page, "train/loss")
        drawn(page, "eval/acc")
        assert page.inner_text("nav.tabs a.active") == "Charts"
        assert "solo" in page.inner_text(".legend-runs")
        assert [r.split(" ")[0] for r in hover(page, page.locator('figure.chart[data-name="train/loss"]'))] == ["solo"]
        shot(page, "run-page-charts-tab")
        assert not errors
    finally:
        shutdown(proc)


def test_charts_follow_the_theme(page, root, make_run):
    ids = three_runs(make_run, charts=("train/loss",))
    proc, url = serve(root)
    count = """f => { const c = f.querySelector('canvas'), d = c.getContext('2d')
        .getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 200 && d[i + 1] === 30 && d[i + 2] === 120) n++;
        return n; }"""
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids.values())}")
        loss = drawn(page, "train/loss")
        assert loss.evaluate(count) == 0
        page.evaluate("""() => { document.documentElement.style.setProperty('--grid', 'rgb(200, 30, 120)');
            document.dispatchEvent(new Event('nuboard:theme')); }""")
        page.wait_for_function("""() => { const c = document.querySelector('figure.chart canvas');
            return c && c.isConnected; }""")
        assert loss.evaluate(count) > 100               # the grid lines took the theme's colour
        assert not errors
    finally:
        shutdown(proc)


def test_group_by_draws_one_line_per_group_with_a_band(page, root, make_run):
    for name, group, scale in (("a1", "lr-a", 1.0), ("a2", "lr-a", 1.8), ("b1", "lr-b", 3.0),
                               ("b2", "lr-b", 5.0)):
        make_run("llm", {"train/loss": [(i, scale / (i + 1)) for i in range(50)]}, run_name=name,
                 group=group)
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts")
        drawn(page, "train/loss")
        if page.locator("#group-by").count() == 0:
            pytest.skip("this branch's server does not offer grouping yet (group_keys)")
        page.select_option("#group-by", "group")
        page.wait_for_function("document.querySelectorAll('.legend-groups li').length === 2")
        legend = page.inner_text(".legend-groups")
        assert "lr-a" in legend and "lr-b" in legend and "(2 runs)" in legend
        loss = page.locator('figure.chart[data-name="train/loss"]')
        page.wait_for_function("document.querySelector('figure.chart').dataset.series.includes('lr-a')")
        assert [r.split(" ")[0] for r in hover(page, loss, 0.2)] == ["lr-b", "lr-a"]
        assert "group=group" in page.url
        shot(page, "charts-grouped")
        page.reload()
        drawn(page, "train/loss")
        assert page.input_value("#group-by") == "group"
        # the band: min-max by default, none drops its fill; median and the band survive a reload
        painted = """f => { const c = f.querySelector('canvas'), d = c.getContext('2d')
            .getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"""
        with_band = loss.evaluate(painted)
        page.select_option("#group-band", "none")
        page.wait_for_function("new URLSearchParams(location.search).get('band') === 'none'")
        assert loss.evaluate(painted) < with_band * 0.9
        page.select_option("#group-agg", "median")
        page.select_option("#group-band", "stderr")
        page.reload()
        drawn(page, "train/loss")
        assert (page.input_value("#group-agg"), page.input_value("#group-band")) == ("median", "stderr")
        assert page.locator("#group-band").is_visible()
        assert not errors
    finally:
        shutdown(proc)


def test_a_jump_in_x_is_a_gap_not_a_line(page, root, make_run):
    points = [(i, 0.5) for i in range(100)] + [(i, 0.5) for i in range(1000, 1100)]
    run = make_run("llm", {"train/loss": points}, run_name="gappy").name
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={run}")
        loss = drawn(page, "train/loss")
        colour = page.locator(".legend-runs li").first.get_attribute("data-colour")
        assert loss.evaluate(INKED_BETWEEN, [10, 90, colour, 60]) > 50    # drawn where points are
        assert loss.evaluate(INKED_BETWEEN, [300, 800, colour, 60]) == 0  # not across the jump
        shot(page, "charts-gap")
        assert not errors
    finally:
        shutdown(proc)


def test_dragging_zooms_with_finer_data_and_a_double_click_goes_back(page, root, make_run):
    run = make_run("llm", {"train/loss": [(i, 1.0 / (i + 1)) for i in range(5000)]},
                   run_name="long").name
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if "/.chart?" in r.url else None)
        page.goto(f"{url}/p/llm/.charts?runs={run}")
        loss = drawn(page, "train/loss")
        assert float(loss.get_attribute("data-xmax")) == 4999
        box = loss.locator(".u-over").bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.2, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.4, y, steps=5)
        page.mouse.up()
        page.wait_for_function("document.querySelector('.chart-note').textContent.includes('zoomed')")
        assert "lo=" in asked[-1] and "hi=" in asked[-1]
        lo, hi = float(loss.get_attribute("data-xmin")), float(loss.get_attribute("data-xmax"))
        assert 800 < lo < 1200 and 1800 < hi < 2200, (lo, hi)
        loss.locator(".u-over").dblclick()
        page.wait_for_function("!document.querySelector('.chart-note').textContent.includes('zoomed')")
        assert float(loss.get_attribute("data-xmax")) == 4999
        assert not errors
    finally:
        shutdown(proc)


def test_a_long_run_list_is_folded_and_a_box_finds_runs_in_it(page, root, make_run):
    """20 runs: the run list starts folded to two lines; 'Show all' unfolds it; the box keeps
    the runs whose name holds its text (and unfolds), without changing what charts draw."""
    ids = [make_run("llm", {"train/loss": [(0, 1.0), (1, 0.5)]}, run_name=f"sweep-{i:02d}").name
           for i in range(20)]
    proc, url = serve(root)
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/llm/.charts?runs={','.join(ids)}")
        loss = drawn(page, "train/loss")
        runs = page.locator(".legend-runs")
        folded = runs.bounding_box()["height"]
        assert runs.get_attribute("class").split().count("folded") == 1
        page.click("#runs-fold")
        assert runs.bounding_box()["height"] > folded * 1.5
        assert page.inner_text("#runs-fold") == "Fold the list"
        page.click("#runs-fold")
        page.fill("#run-filter", "sweep-1")
        visible = [li for li in page.locator(".legend-runs li").all() if li.is_visible()]
        assert len(visible) == 10 and all("sweep-1" in li.inner_text() for li in visible)
        assert page.inner_text("#run-filter-count") == "10 of 20 runs"
        assert "folded" not in runs.get_attribute("class").split()
        assert loss.get_attribute("data-series").count("sweep-") == 20     # the chart keeps all
        assert not errors
    finally:
        shutdown(proc)
