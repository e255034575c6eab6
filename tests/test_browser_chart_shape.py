"""Charts as a user shapes them (issue 33, item 5), in Chromium: a chart's own settings win over
the page's for that chart until Reset and survive a reload and a copied URL; a chart of several
scalars made with New chart draws each run's lines (dashed by scalar) and is kept in the URL;
the x axis can be another logged scalar, paired by step."""
from __future__ import annotations

import pytest
from helpers import QUIET
from helpers_browser import serve, shot, shutdown, watch_errors

import nuboard as nb

pytestmark = pytest.mark.browser

LOSS = 'figure.chart[data-name="train/loss"]'
VAL = 'figure.chart[data-name="val/loss"]'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two runs: train/loss = 10 - step, val/loss = step + 1 at steps 0..19, and tokens =
    1000 * step at the even steps."""
    root = tmp_path_factory.mktemp("chart-shape") / "experiments"
    ids = []
    for name in ("a", "b"):
        with nb.init("llm", dir=root, run_name=name, config={"opt": f"opt-{name}"}, **QUIET) as run:
            for step in range(20):
                run.add_scalar("train/loss", 10.0 - step / 2, step=step)
                run.add_scalar("val/loss", step + 1.0, step=step)
                if step % 2 == 0:
                    run.add_scalar("tokens", 1000.0 * step, step=step)
        ids.append(run.id)
    proc, url = serve(root)
    yield f"{url}/p/llm/.charts?runs={','.join(ids)}"
    shutdown(proc)


def drawn(page, selector: str):
    return page.wait_for_selector(selector + '[data-drawn="1"]')


def test_a_charts_own_y_range_and_log_win_until_reset(page, site):
    errors = watch_errors(page)
    page.goto(site)
    loss, val = drawn(page, LOSS), drawn(page, VAL)
    assert float(loss.get_attribute("data-ymax")) <= 12
    loss.query_selector("button.chart-own-toggle").click()
    form = loss.query_selector("form.chart-own")
    assert form.is_visible()
    form.query_selector("input[name=ymax]").fill("40")
    form.query_selector("input[name=ymin]").fill("-5")
    form.query_selector("select[name=log]").select_option("0")     # a change event: applied
    page.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.ymax === '40'")
    assert loss.get_attribute("data-ymin") == "-5"
    assert "cs=" in page.url
    assert float(val.get_attribute("data-ymax")) < 30               # the other chart: the page's
    shot(page, "charts-own-settings")
    copied = page.url
    page.reload()
    loss, val = drawn(page, LOSS), drawn(page, VAL)
    page.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.ymax === '40'")
    assert loss.query_selector("input[name=ymax]").input_value() == "40"
    assert "own-settings" in loss.get_attribute("class")
    other = page.context.new_page()                                  # the copied URL alone
    other.goto(copied)
    drawn(other, LOSS)
    other.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.ymax === '40'")
    other.close()
    # the page's log scale reaches the val/loss chart, not train/loss (its own says off)
    assert float(val.get_attribute("data-ymin")) <= 0                 # linear: from 0 or below
    page.check("#log-scale")
    page.wait_for_function(f"() => Number(document.querySelector('{VAL}').dataset.ymin) > 0")
    assert loss.get_attribute("data-ymin") == "-5"
    page.uncheck("#log-scale")
    loss.query_selector("button.chart-own-toggle").click()
    loss.query_selector("button.chart-own-reset").click()
    page.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.ymax !== '40'")
    assert "cs=" not in page.url
    assert float(loss.get_attribute("data-ymax")) <= 12
    assert not errors


def test_a_new_chart_of_two_scalars_is_drawn_and_kept(page, site):
    errors = watch_errors(page)
    page.goto(site)
    drawn(page, LOSS)
    page.click("#new-chart summary")
    page.fill("#new-chart-find", "loss")
    assert page.locator("#new-chart li:not([hidden])").count() == 2     # train/loss, val/loss
    page.check('#new-chart input[value="train/loss"]')
    page.check('#new-chart input[value="val/loss"]')
    page.click("#new-chart-add")
    fig = drawn(page, "figure.plot-of-several")
    lines = fig.get_attribute("data-series").split("\n")
    assert len(lines) == 4 and sum(line.endswith(" · val/loss") for line in lines) == 2
    assert fig.query_selector(".chart-name").inner_text() == "train/loss + val/loss"
    assert "plot=" in page.url
    shot(page, "charts-new-chart")
    page.reload()
    fig = drawn(page, "figure.plot-of-several")
    assert len(fig.get_attribute("data-series").split("\n")) == 4
    page.select_option("#group-by", "config.opt")         # a line per group and scalar
    page.wait_for_function("() => document.querySelector('figure.plot-of-several').dataset.series"
                           ".split('\\n').every(l => l.startsWith('opt-'))")
    fig = drawn(page, "figure.plot-of-several")
    assert sorted(fig.get_attribute("data-series").split("\n")) == [
        "opt-a · train/loss (1)", "opt-a · val/loss (1)", "opt-b · train/loss (1)", "opt-b · val/loss (1)"]
    # the group legend names each group once, without the scalar
    assert page.locator(".legend-groups li").evaluate_all("els => els.map(e => e.textContent)") == [
        "opt-a (1 run)", "opt-b (1 run)"]
    page.select_option("#group-by", "")
    fig.query_selector("button.chart-remove").click()
    assert page.locator("figure.plot-of-several").count() == 0
    assert "plot=" not in page.url
    page.click("#new-chart summary")
    page.click("#new-chart-add")                                        # nothing ticked
    assert page.inner_text("#new-chart-msg") == "Tick the scalars to draw on one chart."
    assert not errors


def test_the_x_axis_can_be_a_logged_scalar(page, site):
    errors = watch_errors(page)
    page.goto(site)
    drawn(page, LOSS)
    page.select_option("#x-axis", "scalar:tokens")
    page.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.xLabel === 'tokens'")
    loss = drawn(page, LOSS)
    page.wait_for_function(f"() => Number(document.querySelector('{LOSS}').dataset.xmax) >= 18000")
    assert "x=scalar%3Atokens" in page.url
    page.reload()
    loss = drawn(page, LOSS)
    assert page.input_value("#x-axis") == "scalar:tokens"
    assert loss.get_attribute("data-x-label") == "tokens"
    assert not errors
