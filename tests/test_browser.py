"""The viewer in a real browser: Debian's Chromium driven by Playwright against `nuboard up`
started as a subprocess on the demo. Screenshots of each page go to test-screenshots/ (not committed).
"""
from __future__ import annotations

import json
import re

import pytest
from helpers_browser import serve, shot, shutdown, watch_errors

pytestmark = pytest.mark.browser
XSS = "<script>alert(1)</script>"
ATTR = '"><img src=x onerror=alert(2)>'


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo written once, served by `nuboard up` in a subprocess."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("browser") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    proc, url = serve(root)
    yield {"root": root, "url": url, "runs": written.runs}
    shutdown(proc)


def row_names(page) -> list[str]:
    return page.locator("table.runs tbody a.run-link").all_inner_texts()


def test_runs_query_sort_console_and_notes(page, demo):
    errors = watch_errors(page)
    url = demo["url"]
    page.goto(url + "/")
    assert page.locator("ul.projects a", has_text="llm-pretrain").count() == 1
    shot(page, "01-projects")
    page.locator("ul.projects a", has_text="llm-pretrain").click()
    page.wait_for_selector("table.runs")
    names = row_names(page)
    assert "prepare-data" in names and "eval-mmlu" in names and len(names) >= 14
    assert page.locator("span.status-lost").count() >= 1
    assert page.locator("span.status-crashed").count() >= 1
    shot(page, "02-runs")

    page.fill("#q", "tag:sweep optimizer.lr>=1e-3")
    page.press("#q", "Enter")
    page.wait_for_function("document.querySelector('p.count').textContent.includes('matching')")
    page.wait_for_url(re.compile(r"q=tag"))
    filtered = row_names(page)
    assert filtered and all(n.startswith("lr1e-") or n.startswith("lr3e-3") for n in filtered)
    assert "lr1e-4-s1" not in filtered and "prepare-data" not in filtered
    page.fill("#q", "tag:")
    page.press("#q", "Enter")
    page.wait_for_selector("p.query-error")
    assert "expected a tag" in page.inner_text("p.query-error")
    shot(page, "03-runs-query-error")

    page.fill("#q", "")
    page.press("#q", "Enter")
    page.wait_for_function("!document.querySelector('p.query-error')")
    page.locator("table.runs th a", has_text=re.compile(r"^name")).click()
    page.wait_for_url(re.compile(r"sort=name"))
    page.wait_for_function("document.querySelector('th a.sorted') && "
                           "document.querySelector('th a.sorted').textContent.startsWith('name')")
    ascending = row_names(page)
    page.locator("table.runs th a", has_text=re.compile(r"^name")).click()
    page.wait_for_function("document.querySelector('th a.sorted').textContent.includes('▼')")
    descending = row_names(page)
    assert ascending == sorted(ascending) and descending == sorted(descending, reverse=True)
    shot(page, "04-runs-sorted")

    page.locator("a.run-link", has_text=re.compile(r"^lr1e-3-s1$")).click()
    page.wait_for_selector("h1")
    assert "lr1e-3-s1" in page.inner_text("h1")
    assert "model.width" in page.inner_text("table.config")
    assert "datasets/fineweb-edu:v2" in page.inner_text("body")
    shot(page, "05-run-overview")

    note = "Tried in the browser: <b>not bold</b>"
    page.fill("#notes-text", note)
    page.click("#notes button[type=submit]")
    page.wait_for_selector("#notes .saved")
    page.reload()
    assert page.input_value("#notes-text") == note
    run_json = demo["root"] / "llm-pretrain" / "runs" / demo["runs"]["llm-pretrain/lr1e-3-s1"] / "run.json"
    assert json.loads(run_json.read_text())["notes"] == note

    page.locator("nav.tabs a", has_text="Console").click()
    page.wait_for_selector("pre.console")
    console = page.inner_text("pre.console")
    assert "\x1b" not in console and "\r" not in console and len(console.splitlines()) > 5
    assert "100%" in console
    shot(page, "06-run-console")
    page.locator("nav.tabs a", has_text="Files").click()
    page.wait_for_selector("table.file-list")
    assert page.locator("table.file-list a", has_text=re.compile(r"^run\.json$")).count() == 1
    shot(page, "07-run-files")
    assert not errors


def test_chart_two_ranked_runs_and_switch_axis(page, demo):
    errors = watch_errors(page)
    page.goto(demo["url"] + "/p/llm-pretrain?q=" + "tag%3Addp")
    page.wait_for_selector("table.runs")
    page.evaluate("window.sessionStorage.clear()")
    page.reload()
    boxes = page.locator("input.run-select")
    assert boxes.count() == 2
    boxes.nth(0).check()
    boxes.nth(1).check()
    assert page.inner_text("#selection-count") == "2 runs selected"
    page.click("#chart-selected")
    page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"]', timeout=20000)
    loss = page.locator('figure.chart[data-name="train/loss"]')
    legend = page.inner_text(".legend-runs")
    assert "ddp-lr1e-3-bs128" in legend and "ddp-lr2e-3-bs128" in legend
    assert "ddp-lr1e-3-bs128" in loss.get_attribute("data-series")
    assert page.locator("section.chart-group.system").count() == 1
    shot(page, "08-charts")

    page.select_option("#rank", "all")
    page.wait_for_function(
        "document.querySelector('figure.chart[data-name=\"train/loss\"]')"
        ".dataset.series.includes(' r1')")
    assert page.url.endswith("rank=all") or "rank=all" in page.url
    page.select_option("#x-axis", "wall")
    page.wait_for_function(
        "document.querySelector('figure.chart[data-name=\"train/loss\"]')"
        ".dataset.xLabel === 'time'")
    page.select_option("#x-axis", "relative")
    page.wait_for_function(
        "document.querySelector('figure.chart[data-name=\"train/loss\"]')"
        ".dataset.xLabel === 'elapsed'")
    page.fill("#smoothing", "0.9")
    page.dispatch_event("#smoothing", "input")
    page.check("#log-scale")
    page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"] canvas')
    shot(page, "09-charts-all-ranks-relative")
    assert not errors


def test_save_a_view_and_reopen_it(page, demo):
    errors = watch_errors(page)
    page.goto(demo["url"] + "/p/vit-ablations")
    page.evaluate("window.sessionStorage.clear()")
    page.fill("#q", "tag:ablation")
    page.press("#q", "Enter")
    page.wait_for_url(re.compile(r"q=tag"))
    page.locator("input.run-select").first.check()
    page.fill("#save-view input[name=name]", "ablations only")
    page.click("#save-view button[type=submit]")
    page.wait_for_url(re.compile(r"view=ablations"))
    page.goto(demo["url"] + "/p/vit-ablations")
    page.locator("a.view-link", has_text="ablations only").click()
    page.wait_for_selector("table.runs")
    assert page.input_value("#q") == "tag:ablation"
    assert page.inner_text("#selection-count") == "1 run selected"
    views = json.loads((demo["root"] / "vit-ablations" / "views.json").read_text())
    assert views["views"][0]["name"] == "ablations only"
    shot(page, "10-saved-view")
    assert not errors


def test_nothing_users_wrote_runs_as_script(browser, tmp_path):
    import nuboard as nb
    root = tmp_path / "experiments"
    with nb.init("xss", dir=root, run_name=XSS, tags=[XSS, ATTR], notes=ATTR, group=ATTR,
                 config={XSS: ATTR}, system_metrics=False, capture_env=False) as run:
        run.add_scalar(f"train/{ATTR}", 1.0, step=0)
        run.add_scalar("train/loss", 1.0, step=0)
        print(f"\x1b[31m{XSS}\x1b[0m {ATTR}")
    proc, url = serve(root)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        errors = watch_errors(page)
        page.goto(f"{url}/p/xss?cols=status,name,tags,group")
        assert XSS in page.inner_text("table.runs")
        page.goto(f"{url}/p/xss/.run/{run.id}")
        assert page.input_value("#notes-text") == ATTR
        page.goto(f"{url}/p/xss/.run/{run.id}?tab=console")
        assert XSS in page.inner_text("pre.console")
        page.goto(f"{url}/p/xss/.charts?runs={run.id}")
        page.wait_for_selector('figure.chart[data-drawn="1"]')
        page.wait_for_timeout(500)
        shot(page, "11-xss-charts")
        assert not errors, errors
        assert page.locator("img").count() == 0
    finally:
        context.close()
        shutdown(proc)


def test_the_compare_views_draw_on_the_demo(page, demo):
    """Issue 33 on the demo: parallel coordinates, Scatter, a Diff of two runs, grouped Charts,
    and a chart against the logged train/tokens, each drawn with no error on the page."""
    url, runs = demo["url"], demo["runs"]
    errors = watch_errors(page)
    fields = "config.optimizer.lr,config.model.width,train/loss.last"
    page.goto(f"{url}/p/llm-pretrain/.parallel?axes={fields}&log=config.optimizer.lr")
    drawn = int(page.wait_for_selector("#parallel[data-drawn]").get_attribute("data-drawn"))
    assert drawn == len([r for r in runs if r.startswith("llm-pretrain/")])
    page.goto(f"{url}/p/llm-pretrain/.scatter?x=config.optimizer.lr&y=train/loss.last&logx=1")
    points = page.evaluate("() => JSON.parse(document.getElementById('scatter-data').textContent)"
                           ".points.length")
    assert points >= 10
    assert page.wait_for_selector("[data-drawn]").get_attribute("data-drawn") == str(points)
    a, b = runs["llm-pretrain/lr1e-3-s1"], runs["llm-pretrain/wide-d2048"]
    page.goto(f"{url}/p/llm-pretrain/.diff?runs={a},{b}")
    differ = page.locator("tr.diff-row.differs").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert {"model.width", "model.heads"} <= set(differ) and "optimizer.name" not in differ
    page.goto(f"{url}/p/llm-pretrain/.charts?runs={a},{b},{runs['llm-pretrain/lr6e-4-long']}"
              "&group=config.model.width&band=std&x=scalar:train/tokens")
    figure = page.wait_for_selector('figure.chart[data-name="train/loss"][data-drawn="1"]')
    assert figure.get_attribute("data-x-label") == "train/tokens"
    assert page.locator(".legend-groups li").count() == 2              # widths 1024 and 2048
    assert not errors
