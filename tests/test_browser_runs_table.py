"""The Runs table in Chromium (Playwright) against `nuboard up` on the demo: the column chooser's
search, the run colour swatches, and a wide table that scrolls in its own box at 1024 px with the
name column pinned. Screenshots go to test-screenshots/."""
from __future__ import annotations

from urllib.parse import quote

import pytest
from helpers_browser import serve, shot, shutdown, watch_errors

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo written once, served by `nuboard up` in a subprocess."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("runs-table") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    proc, url = serve(root)
    yield {"root": root, "url": url, "runs": written.runs}
    shutdown(proc)


def rgb(colour: str) -> str:
    """'#1f77b4' as the browser's computed style writes it."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def visible_choices(page) -> list[str]:
    return page.eval_on_selector_all(
        ".columns-chooser .col-item",
        "items => items.filter(i => i.offsetParent !== null).map(i => i.dataset.name)")


def test_default_columns_swatches_and_the_chooser_search(page, demo):
    errors = watch_errors(page)
    page.goto(demo["url"] + "/p/llm-pretrain")
    page.wait_for_selector("table.runs")
    headers = page.locator("table.runs thead th").all_inner_texts()
    assert "optimizer.lr" in headers and "train/loss" in headers
    assert not [h for h in headers if h.startswith(("timing/", "system/"))]
    lr = page.locator("table.runs th.col a.sort", has_text="optimizer.lr")
    assert lr.locator("wbr").count() == 1 and lr.inner_text() == "optimizer.lr"
    run_id = demo["runs"]["llm-pretrain/lr1e-3-s1"]
    swatch = page.locator(f'tr[data-run="{run_id}"] td.pin .swatch')
    twin = page.request.get(demo["url"] + "/api/p/llm-pretrain/runs?cols=name").json()
    colour = next(r["colour"] for r in twin["runs"] if r["id"] == run_id)
    assert swatch.evaluate("s => getComputedStyle(s).backgroundColor") == rgb(colour)
    shot(page, "runs-table-default")

    page.click(".columns-chooser summary")
    every = visible_choices(page)
    assert len(every) > 60
    page.fill("#columns-search", "lr")
    found = visible_choices(page)
    assert found and len(found) < len(every) and all("lr" in name for name in found)
    assert "optimizer.lr" in found and "train/lr" in found
    assert page.inner_text("#columns-found") == f"{len(found)} of {len(every)} columns"
    page.fill("#columns-search", "eval mmlu")
    assert all("eval" in n and "mmlu" in n for n in visible_choices(page))
    page.fill("#columns-search", "no such column")
    assert visible_choices(page) == []
    assert page.inner_text("#columns-found") == "no column matches \u201cno such column\u201d"
    shot(page, "runs-table-chooser-search")
    page.fill("#columns-search", "train/tok")
    page.locator('.col-item[data-name="train/tokens"] input[value="max:train/tokens"]').check()
    page.press("#columns-search", "Enter")                # finds, does not apply
    assert "cols=" not in page.url
    page.fill("#columns-search", "")
    assert len(visible_choices(page)) == len(every)
    page.click("#columns-form button[type=submit]")
    page.wait_for_url(lambda u: "cols=" in u)
    headers = page.locator("table.runs thead th").all_inner_texts()
    assert "train/tokens (max)" in headers and "optimizer.lr" in headers
    assert not errors


def test_a_wide_table_scrolls_in_its_box_with_the_name_pinned(page, demo):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(demo["url"] + "/p/llm-pretrain")
    choices = page.eval_on_selector_all(".col-choice", "boxes => boxes.map(b => b.value)")
    columns = ["status", "name", "id", "start", "duration", "tags", "group", "host"]
    columns += [c for c in choices if c.startswith("config:")][:20]
    columns += [c for c in choices if c.startswith("scalar:")][:10]
    page.goto(demo["url"] + "/p/llm-pretrain?cols=" + quote(",".join(columns)))
    page.wait_for_selector("table.runs")
    assert page.locator("table.runs thead th").count() == len(columns) + 1
    wide = page.evaluate("""() => {
        const wrap = document.querySelector('.runs-wrap');
        return {page: document.scrollingElement.scrollWidth, inner: window.innerWidth,
                box: wrap.clientWidth, table: wrap.scrollWidth};
    }""")
    assert wide["page"] <= wide["inner"], wide            # the page itself does not scroll
    assert wide["table"] > wide["box"] + 500, wide         # the table does, in its box
    shot(page, "runs-table-1024-wide")

    run_id = demo["runs"]["llm-pretrain/lr3e-4-s1"]
    cell = f'tr[data-run="{run_id}"] td.pin'
    pick = page.locator(f'tr[data-run="{run_id}"] td.pick').bounding_box()
    for left in (300, 100000):
        page.evaluate(f"document.querySelector('.runs-wrap').scrollLeft = {left}")
        page.wait_for_function("document.querySelector('.runs-wrap').scrollLeft >= 300")
        box = page.locator(cell).bounding_box()
        assert abs(box["x"] - (pick["x"] + pick["width"])) < 1.5, (left, box, pick)
    seen = page.evaluate(f"""() => {{
        const cell = document.querySelector('{cell}');
        window.scrollTo(0, cell.getBoundingClientRect().top + window.scrollY - 300);
        const box = cell.getBoundingClientRect();
        const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        return cell.contains(hit);
    }}""")
    assert seen                                            # on top of the cells scrolled under it
    assert page.locator(f"{cell} a.run-link").inner_text() == "lr3e-4-s1"
    last = page.locator("table.runs thead th").last.bounding_box()
    assert last["x"] + last["width"] <= 1024               # the last column came into view
    shot(page, "runs-table-1024-scrolled")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    assert not errors
