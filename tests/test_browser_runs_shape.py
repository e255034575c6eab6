"""The Runs table shaped in Chromium (Playwright) against `nuboard up`: a header dragged before
another moves its column, a header's edge dragged widens it, both kept by the URL through a
reload; grouping by a config key shows a row per value with the group's means; a saved view
opens again with its order, widths and grouping; a column added under Columns goes last. Runs
written by the real API; screenshots go to test-screenshots/runs-shape-*.png."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import write_run
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

RUNS = [("a1", "adam", 0.5), ("a2", "adam", 0.3), ("s1", "sgd", 0.9), ("s2", "sgd", 0.7)]
HEADERS = "table.runs thead th[data-col]"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs-shape") / "experiments"
    for name, opt, loss in RUNS:
        write_run(root, "llm", {"train/loss": [(0, 2.0), (1, loss)]}, run_name=name,
                  config={"opt": opt, "lr": 0.1 if opt == "adam" else 0.2})
    proc, url = serve(root)
    yield url
    shutdown(proc)


def order(page) -> list[str]:
    return page.eval_on_selector_all(HEADERS, "ths => ths.map(th => th.dataset.col)")


def width(page, col: str) -> float:
    return page.locator(f'{HEADERS}[data-col="{col}"]').bounding_box()["width"]


def params(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def test_drag_resize_group_and_save_a_view(site, page):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site + "/p/llm?cols=name,config:opt,config:lr,scalar:train/loss")
    assert order(page) == ["name", "config:opt", "config:lr", "scalar:train/loss"]

    # drag the train/loss header onto the left half of opt's: it goes before opt
    loss = page.locator(f'{HEADERS}[data-col="scalar:train/loss"]').bounding_box()
    opt = page.locator(f'{HEADERS}[data-col="config:opt"]').bounding_box()
    page.mouse.move(loss["x"] + loss["width"] / 2, loss["y"] + loss["height"] / 2)
    page.mouse.down()
    page.mouse.move(opt["x"] + 8, opt["y"] + opt["height"] / 2, steps=8)
    page.mouse.up()
    page.wait_for_url(lambda u: "train%2Floss%2Cconfig%3Aopt" in u or
                      "train/loss,config:opt" in u)
    want = ["name", "scalar:train/loss", "config:opt", "config:lr"]
    expect(page.locator(HEADERS).nth(1)).to_have_attribute("data-col", "scalar:train/loss")
    assert order(page) == want and params(page).get("sort", "start") == "start"  # not sorted
    page.reload()
    assert order(page) == want

    # Alt+Right on a focused header moves it one place, focus stays on it
    page.locator(f'{HEADERS}[data-col="config:opt"] a.sort').focus()
    page.keyboard.press("Alt+ArrowRight")
    expect(page.locator(HEADERS).nth(3)).to_have_attribute("data-col", "config:opt")
    assert order(page) == ["name", "scalar:train/loss", "config:lr", "config:opt"]
    assert page.evaluate("document.activeElement.closest('th').dataset.col") == "config:opt"

    # drag the name column's right edge 120 px to the right
    before = width(page, "name")
    edge = page.locator(f'{HEADERS}[data-col="name"] .col-resize').bounding_box()
    page.mouse.move(edge["x"] + edge["width"] / 2, edge["y"] + edge["height"] / 2)
    page.mouse.down()
    page.mouse.move(edge["x"] + edge["width"] / 2 + 120, edge["y"] + edge["height"] / 2, steps=6)
    page.mouse.up()
    page.wait_for_url(lambda u: "widths=" in u)
    set_to = int(params(page)["widths"].rpartition(":")[2])
    assert abs(set_to - (before + 120)) <= 2
    assert abs(width(page, "name") - set_to) <= 1
    cell = page.locator("table.runs tbody tr[data-run] td.pin").first.bounding_box()
    assert abs(cell["width"] - set_to) <= 1                 # the column, not only its header
    page.reload()
    assert abs(width(page, "name") - set_to) <= 1 and order(page)[0] == "name"
    shot(page, "runs-shape-reordered-resized")

    # group by opt: a row per value with its count and the mean of train/loss's last value
    page.select_option("#group-by", "config:opt")
    page.wait_for_url(lambda u: "group=config" in u)
    rows = page.locator("table.runs tr.group-row")
    expect(rows).to_have_count(2)
    assert " ".join(rows.nth(0).inner_text().split()) == "▾ opt = adam 2 runs, means → 0.4 0.1"
    assert " ".join(rows.nth(1).inner_text().split()) == "▾ opt = sgd 2 runs, means → 0.8 0.2"
    assert abs(width(page, "name") - set_to) <= 1 and order(page)[1] == "scalar:train/loss"
    rows.nth(0).locator(".group-fold").click()                 # fold adam
    names = page.locator("table.runs tr[data-run] a.run-link")
    expect(names.filter(has_text="a1")).to_be_hidden()
    expect(names.filter(has_text="s1")).to_be_visible()
    shot(page, "runs-shape-grouped")

    # save it as a view, open the plain table, then the view again
    page.fill("#save-view input[name=name]", "opt groups")
    page.click("#save-view button[type=submit]")
    page.wait_for_url(lambda u: "view=opt" in u)
    page.goto(site + "/p/llm")
    assert order(page)[:2] == ["status", "name"] and page.locator("tr.group-row").count() == 0
    page.click("a.view-link:text('opt groups')")
    page.wait_for_url(lambda u: "view=opt" in u)
    assert order(page) == ["name", "scalar:train/loss", "config:lr", "config:opt"]
    assert abs(width(page, "name") - set_to) <= 1
    expect(page.locator("table.runs tr.group-row")).to_have_count(2)
    assert page.input_value("#group-by") == "config:opt"

    # a column added under Columns goes last; the order, widths and grouping stay
    page.click(".columns-chooser summary")
    page.locator('.col-choice[value="max:train/loss"]').check()
    page.click("#columns-form button[type=submit]")
    page.wait_for_url(lambda u: "max%3Atrain" in u)
    assert order(page) == ["name", "scalar:train/loss", "config:lr", "config:opt",
                           "max:train/loss"]
    assert abs(width(page, "name") - set_to) <= 1
    expect(page.locator("table.runs tr.group-row")).to_have_count(2)
    assert not errors
