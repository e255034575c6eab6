"""Run colours in a real browser on the demo: the 12 llm-pretrain runs that train and the 7
optimizer.lr groups each get a colour of their own, read from what the pages render; every
colour reads on the chart background in both themes; a colour set in the Charts run list is
kept after a reload and shown on the Runs table, the run list and the Timeline; the running
badge reads (4.5:1) and a status has one colour on the Runs table and the Timeline.

Debian's Chromium through Playwright against `nuboard up` on the demo (written once).
"""
from __future__ import annotations

import itertools
import re

import pytest
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

from nuboard.web.run_colours import contrast, delta_e

pytestmark = pytest.mark.browser
MIN_DE = 10


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo, served by `nuboard up`; the llm-pretrain runs by name."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("colours-demo") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    proc, url = serve(root)
    runs = {key: run_id for key, run_id in written.runs.items()}
    training = [run_id for key, run_id in runs.items() if key.startswith("llm-pretrain/")
                and key.split("/", 1)[1] not in ("prepare-data", "eval-mmlu")]
    yield {"url": url, "runs": runs, "training": training, "root": root}
    shutdown(proc)


def hex_of(css: str) -> str:
    """'rgb(35, 120, 180)' as '#2378b4'."""
    r, g, b = (int(v) for v in re.findall(r"\d+", css)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def colours(page, selector: str, prop: str, key: str = "data-run") -> dict[str, str]:
    """{the element's key attribute: its rendered colour} of each element the selector finds
    (the colour read from `prop` of the element, or of its .swatch / .tl-swatch)."""
    found = page.eval_on_selector_all(selector, """(els, [prop, key]) => els.map(el => {
        const sw = el.matches('.swatch, .tl-swatch') ? el : el.querySelector('.swatch, .tl-swatch');
        const owner = el.closest('[' + key + ']');
        return [owner.getAttribute(key), getComputedStyle(sw || el)[prop]]; })""", [prop, key])
    return {k: hex_of(v) for k, v in found}


def set_theme(page, theme: str) -> None:
    """Switch as the header's toggle does (theme.js): the choice kept in localStorage."""
    page.evaluate("t => localStorage.setItem('nuboard:theme', t)", theme)
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", theme)


def assert_apart(found: dict[str, str], count: int) -> None:
    assert len(found) == count, found
    pairs = sorted((delta_e(a, b), x, y) for (x, a), (y, b) in itertools.combinations(found.items(), 2))
    assert pairs[0][0] >= MIN_DE, pairs[:3]


def test_each_run_and_group_has_a_colour_of_its_own_that_reads_in_both_themes(page, demo):
    errors = watch_errors(page)
    url, training = demo["url"], demo["training"]
    assert len(training) == 12
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(url + "/p/llm-pretrain")
    table = colours(page, "#runs-results tr[data-run] .swatch", "backgroundColor")
    assert_apart({r: table[r] for r in training}, 12)

    charts = url + "/p/llm-pretrain/.charts?runs=" + ",".join(training)
    page.goto(charts)
    listed = colours(page, ".legend-runs li[data-run]", "backgroundColor")
    assert listed == {r: table[r] for r in training}           # one run, one colour

    page.goto(charts + "&group=config.optimizer.lr")
    expect(page.locator(".legend-groups li")).to_have_count(7)
    groups = colours(page, ".legend-groups li", "backgroundColor", key="data-group")
    assert_apart(groups, 7)
    shot(page, "colours-01-lr-groups")

    for theme in ("light", "dark"):
        set_theme(page, theme)
        expect(page.locator(".legend-groups li")).to_have_count(7)
        background = hex_of(page.eval_on_selector("figure.chart", "f => getComputedStyle(f).backgroundColor"))
        shown = list(colours(page, ".legend-groups li", "backgroundColor", key="data-group").values())
        page.goto(charts)
        shown += list(colours(page, ".legend-runs li[data-run]", "backgroundColor").values())
        worst = min(shown, key=lambda c: contrast(c, background))
        assert contrast(worst, background) >= 3.0, (theme, worst, background)
        shot(page, f"colours-02-runs-{theme}")
        page.goto(charts + "&group=config.optimizer.lr")
    set_theme(page, "light")
    assert not errors, errors


def test_a_colour_set_in_the_run_list_is_kept_and_shown_everywhere(page, demo):
    errors = watch_errors(page)
    url, run_id, colour = demo["url"], demo["runs"]["vit-ablations/vit-p8"], "#123456"
    page.goto(url + "/p/vit-ablations/.charts")
    heard = page.evaluate_handle("""() => { const got = [];
        document.addEventListener('nuboard:colour', ev => got.push(ev.detail)); return got; }""")
    item = page.locator(f'.legend-runs li[data-run="{run_id}"]')
    picker = item.locator("input.run-colour")
    expect(picker).to_have_attribute("aria-label", re.compile("^colour of vit-p8"))
    with page.expect_response(lambda r: r.url.endswith("/.colours") and r.status == 200):
        picker.fill(colour)
    expect(item).to_have_attribute("data-colour", colour)       # repainted without a reload
    assert heard.json_value() == [{"run": run_id, "colour": colour}]

    page.reload()
    expect(picker).to_have_value(colour)
    assert colours(page, ".legend-runs li[data-run]", "backgroundColor")[run_id] == colour
    page.goto(url + "/p/vit-ablations")
    assert colours(page, "#runs-results tr[data-run] .swatch", "backgroundColor")[run_id] == colour
    page.goto(url + "/p/vit-ablations/.timeline")
    on_timeline = colours(page, "#timeline a.tl-label[data-run]", "fill")
    assert on_timeline[run_id] == colour
    assert len(set(on_timeline.values())) == 4
    shot(page, "colours-03-timeline-swatch")
    assert (demo["root"] / "vit-ablations" / "colours.json").is_file()
    assert not errors, errors


def test_statuses_have_one_colour_and_the_running_badge_reads(page, demo):
    url = demo["url"]
    for theme in ("light", "dark"):
        page.goto(url + "/p/llm-pretrain")
        set_theme(page, theme)
        badges = page.eval_on_selector_all("#runs-results .badge[class*=status-]", """els =>
            els.map(b => [b.textContent.trim(), getComputedStyle(b).color])""")
        on_table = {status: hex_of(c) for status, c in badges}
        assert {"finished", "crashed", "lost"} <= set(on_table), on_table
        running = page.evaluate("""() => { const b = document.createElement('span');
            b.className = 'badge status-running'; b.textContent = 'running';
            document.querySelector('main').append(b); const s = getComputedStyle(b);
            return [s.color, s.backgroundColor]; }""")
        ratio = contrast(hex_of(running[0]), hex_of(running[1]))
        assert ratio >= 4.5, (theme, running, ratio)

        page.goto(url + "/p/llm-pretrain/.timeline")
        bars = page.eval_on_selector_all("#timeline a.tl-run", """els => els.map(a =>
            [a.getAttribute('class').match(/status-(\\w+)/)[1],
             getComputedStyle(a.querySelector('rect.tl-seg')).fill])""")
        on_timeline = {status: hex_of(c) for status, c in bars}
        assert on_timeline == {s: on_table[s] for s in on_timeline}, theme
        assert set(on_timeline) == set(on_table)
        # bars and diamonds are links with a name
        unnamed = page.eval_on_selector_all("#timeline a[href]", """els => els.filter(a =>
            !(a.getAttribute('aria-label') || '').trim() && !a.textContent.trim()).length""")
        assert unnamed == 0
        expect(page.get_by_role("link", name=re.compile(r"^wide-d2048: lost"))).to_have_count(1)
        shot(page, f"colours-04-timeline-{theme}")
    set_theme(page, "light")
