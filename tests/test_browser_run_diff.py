"""The Diff of selected runs in a real browser: the table draws with one column per run in its
colour, only the rows that differ at first, and the "only differences" toggle shows every row
and back. Debian's Chromium through Playwright against `nuboard up`; screenshots go to
test-screenshots/run-diff-*.png."""
from __future__ import annotations

import pytest
from helpers import write_run
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Three runs of a small sweep: lr and tags differ, seed and the optimizer do not."""
    root = tmp_path_factory.mktemp("run-diff") / "experiments"
    ids = []
    for i, lr in enumerate((1e-3, 3e-4, 1e-4)):
        folder = write_run(root, "llm", {"train/loss": [(0, 1.0)]}, run_name=f"sweep-{i}",
                           tags=["sweep"] + (["best"] if i == 1 else []),
                           config={"optimizer": {"name": "adamw", "lr": lr}, "seed": 7,
                                   "model": {"layers": 12 + 12 * (i == 2)}})
        ids.append(folder.name)
    proc, url = serve(root)
    yield {"url": url, "ids": ids}
    shutdown(proc)


def test_diff_draws_and_toggles(site, page):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{site['url']}/p/llm/.diff?runs={','.join(site['ids'])}")
    heads = page.locator("th.diff-run .diff-run-name")
    expect(heads).to_have_text(["sweep-0", "sweep-1", "sweep-2"])
    colour = heads.first.evaluate("a => getComputedStyle(a).color")
    assert colour not in ("rgb(0, 0, 0)", "")                 # the run's colour, not plain text
    differing = page.locator("tr.diff-row")
    expect(differing).to_have_count(3)                        # tags, optimizer.lr, model.layers
    expect(page.locator('tr.diff-row[data-key="optimizer.lr"] td')).to_have_text(
        ["0.001", "0.0003", "0.0001"])
    expect(page.locator('tr.diff-row[data-key="seed"]')).to_have_count(0)
    shot(page, "run-diff-differences")
    toggle = page.get_by_role("checkbox", name="only differences")
    expect(toggle).to_have_attribute("aria-checked", "true")
    toggle.click()
    expect(page.get_by_role("checkbox", name="only differences")).to_have_attribute(
        "aria-checked", "false")
    expect(page.locator('tr.diff-row[data-key="seed"] td')).to_have_text(["7", "7", "7"])
    expect(page.locator('tr.diff-row[data-key="optimizer.lr"]')).to_have_class(
        "diff-row differs")
    assert "all=1" in page.url
    shot(page, "run-diff-every-row")
    page.get_by_role("checkbox", name="only differences").click()
    expect(page.locator('tr.diff-row[data-key="seed"]')).to_have_count(0)
    assert errors == []

def test_links_to_the_diff(site, page):
    errors = watch_errors(page)
    page.goto(f"{site['url']}/p/llm")
    link = page.locator("#diff-selected")
    expect(link).to_have_class("button disabled")
    boxes = page.locator(".run-select")
    boxes.nth(0).check()
    boxes.nth(1).check()
    expect(link).to_have_text("Compare 2 runs")
    link.click()
    expect(page.locator("th.diff-run")).to_have_count(2)
    page.goto(f"{site['url']}/p/llm/.charts?runs={','.join(site['ids'])}")
    page.get_by_role("link", name="Compare 3 runs").click()
    expect(page.locator("th.diff-run")).to_have_count(3)
    assert errors == []
