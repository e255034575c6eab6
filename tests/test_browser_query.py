"""The query box in a real browser on the demo: a half-typed query keeps the rows, an unknown
key is a visible warning, and the completion list appears, moves and fills the box."""
from __future__ import annotations

import re

import pytest
from helpers_browser import serve, shot, shutdown, watch_errors

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("browser-query") / "experiments"
    write_demo(root, progress=lambda _line: None)
    proc, url = serve(root)
    yield url
    shutdown(proc)


def row_names(page) -> list[str]:
    return page.locator("table.runs tbody a.run-link").all_inner_texts()


def test_half_typed_query_keeps_rows_and_unknown_key_warns(page, demo):
    errors = watch_errors(page)
    page.goto(demo + "/p/llm-pretrain")
    page.wait_for_selector("table.runs")
    page.fill("#q", "tag:baseline")
    page.press("#q", "Enter")
    page.wait_for_url(re.compile(r"q=tag%3Abaseline|q=tag:baseline"))
    page.wait_for_function("document.querySelector('p.count').textContent.includes('matching')")
    baseline = row_names(page)
    assert sorted(baseline) == ["lr1e-3-s1", "lr6e-4-long"]

    page.locator("#q").press_sequentially(" optimizer.lr>=", delay=20)   # typed, as a user would
    page.wait_for_selector("#query-notes p.query-error")
    assert "expected a value after 'optimizer.lr>='" in page.inner_text("#query-notes")
    page.wait_for_timeout(300)
    assert row_names(page) == baseline                       # the last good rows stay
    assert "q=tag" in page.url and "optimizer" not in page.url
    shot(page, "query-01-half-typed")

    page.locator("#q").press_sequentially("1e-3", delay=20)
    page.wait_for_function("!document.querySelector('#query-notes p.query-error')")
    # the whole query: 'optimizer.lr>=1', typed on the way, is a query too (no run matches it)
    page.wait_for_function("document.querySelector('p.count').textContent.includes('optimizer.lr>=1e-3')")
    assert row_names(page) == ["lr1e-3-s1"]

    page.fill("#q", "tag:baseline lr>=1e-3")
    page.press("#q", "Enter")
    warning = page.locator("#query-notes p.query-warning")
    warning.wait_for()
    assert warning.inner_text().endswith("unknown key 'lr' — did you mean optimizer.lr?")
    assert warning.is_visible()
    shot(page, "query-02-warning")

    page.goto(demo + "/p/llm-pretrain/.timeline?q=tag%3Abaseline%20lr%3E%3D1e-3")
    assert page.locator("p.query-warning").inner_text().endswith("did you mean optimizer.lr?")
    assert errors == []


def test_completion_lists_keys_and_values_and_accepting_fills_the_box(page, demo):
    errors = watch_errors(page)
    page.goto(demo + "/p/llm-pretrain")
    page.wait_for_selector("table.runs")
    box = page.locator("#q")
    box.fill("")
    box.press_sequentially("tag:bas", delay=30)
    options = page.locator("ul.query-complete li")
    options.first.wait_for()
    assert page.locator("ul.query-complete").is_visible()
    assert options.all_inner_texts()[0].startswith("baseline")
    shot(page, "query-03-completion-values")
    box.press("Tab")
    assert box.input_value() == "tag:baseline "
    assert page.locator("ul.query-complete").is_hidden()
    page.wait_for_function("document.querySelector('p.count').textContent.includes('tag:baseline')")
    assert sorted(row_names(page)) == ["lr1e-3-s1", "lr6e-4-long"]

    box.press_sequentially("optimizer.l", delay=30)
    options.first.wait_for()
    labels = [t.split()[0] for t in options.all_inner_texts()]
    assert labels == ["optimizer.lr"]
    shot(page, "query-04-completion-keys")
    box.press("ArrowDown")
    assert page.locator("ul.query-complete li.active").inner_text().startswith("optimizer.lr")
    box.press("Enter")
    assert box.input_value() == "tag:baseline optimizer.lr"
    assert page.locator("ul.query-complete").is_hidden()

    box.press_sequentially(" stat", delay=30)
    options.first.wait_for()
    assert options.all_inner_texts()[0].startswith("status")
    box.press("Escape")
    assert page.locator("ul.query-complete").is_hidden()
    assert box.input_value() == "tag:baseline optimizer.lr stat"

    page.goto(demo + "/p/llm-pretrain/.timeline")
    tl = page.locator("#tl-q")
    tl.press_sequentially("group:lr", delay=30)
    page.locator("ul.query-complete li").first.wait_for()
    tl.press("Tab")
    assert tl.input_value() == "group:lr-sweep "
    assert errors == []


def test_completion_inside_a_summary_offers_scalars_and_closes_it(page, demo):
    """`min(tr` lists scalar names only (not the config key train.compile); taking one writes
    `min(train/…)` with its ')' and the query runs; the same inside every summary."""
    errors = watch_errors(page)
    page.goto(demo + "/p/llm-pretrain")
    page.wait_for_selector("table.runs")
    box = page.locator("#q")
    options = page.locator("ul.query-complete li")
    box.fill("")
    box.press_sequentially("min(tr", delay=30)
    options.first.wait_for()
    kinds = {t.split()[-1] for t in options.all_inner_texts()}
    names = [t.split()[0] for t in options.all_inner_texts()]
    assert kinds == {"scalar"} and "train.compile" not in names
    assert "train/loss" in names and all("/" in n for n in names)
    shot(page, "query-05-completion-inside-min")
    index = names.index("train/loss")
    for _ in range(index + 1):
        box.press("ArrowDown")
    box.press("Enter")
    assert box.input_value() == "min(train/loss)"
    assert page.locator("ul.query-complete").is_hidden()
    box.press_sequentially("<100", delay=20)
    page.wait_for_function(
        "document.querySelector('p.count').textContent.includes('min(train/loss)<100')")
    assert "q=min" in page.url and len(row_names(page)) > 0
    assert page.locator("#query-notes p.query-error").count() == 0

    for summary in ("max", "last", "count", "last_step"):       # docs/query.md's summaries
        box.fill("")
        box.press_sequentially(f"tag:baseline -{summary}(tr", delay=20)
        options.first.wait_for()
        assert {t.split()[-1] for t in options.all_inner_texts()} == {"scalar"}, summary
        box.press("Tab")
        assert re.fullmatch(rf"tag:baseline -{summary}\(train/[a-z_/]+\)", box.input_value())
        box.press("Escape")

    box.fill("max()<1")                     # inside an empty pair: every scalar, one ')' kept
    box.evaluate("b => { b.setSelectionRange(4, 4); b.dispatchEvent(new Event('input')); }")
    options.first.wait_for()
    assert {t.split()[-1] for t in options.all_inner_texts()} == {"scalar"}
    box.press("Tab")
    assert re.fullmatch(r"max\([a-z_/]+\)<1", box.input_value())
    assert errors == []
