"""Every width and both themes, in a real browser: the system's dark scheme gives a dark page,
the header's theme button switches and is remembered, no page of the demo scrolls sideways at
1024 px or 390 px, the header's parts do not overlap on a phone, and scripts/screenshots.py
writes its PNGs.

Debian's Chromium driven by Playwright against `nuboard up` over one demo folder. Screenshots
go to test-screenshots/layout-*.png.
"""
from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from types import SimpleNamespace

import pytest
from helpers import REPO, child_env
from helpers_browser import serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The demo with two saved views, served; `pages` maps a name to each page a user reaches."""
    from nuboard.demo import write_demo
    from nuboard.web import views
    root = tmp_path_factory.mktemp("browser-layout") / "experiments"
    runs = write_demo(root, progress=lambda _line: None).runs
    for name, query, chosen in (("baseline runs", "tag:baseline", [runs["llm-pretrain/lr1e-3-s1"]]),
                                ("the learning-rate sweep, finished", "tag:sweep status:finished", [])):
        views.save_view(root, "llm-pretrain", views.make_view(name, query, ["status", "name"], "start",
                                                              True, chosen))
    proc, url = serve(root)
    run = f"{url}/p/llm-pretrain/.run/{runs['llm-pretrain/lr1e-3-s1']}"
    pages = {"index": f"{url}/", "runs": f"{url}/p/llm-pretrain",
             "runs-query": f"{url}/p/llm-pretrain?q=status%3Afinished",
             "run-overview": run, "run-console": f"{run}?tab=console", "run-files": f"{run}/files/",
             "charts": f"{url}/p/llm-pretrain/.charts", "timeline": f"{url}/p/llm-pretrain/.timeline",
             "artifacts": f"{url}/p/llm-pretrain/.artifacts", "all-artifacts": f"{url}/artifacts",
             "artifact": f"{url}/p/datasets/.artifact/fineweb-edu/v2",
             "lineage": f"{url}/p/llm-pretrain/.artifact/model/v1"}
    try:
        yield SimpleNamespace(url=url, root=root, pages=pages)
    finally:
        shutdown(proc)


def open_page(browser, width: int = 1400, scheme: str = "light"):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  bypass_csp=True)
    return context, context.new_page()


def luminance(css: str) -> float:
    """The relative luminance (0 black .. 1 white) of a computed 'rgb(r, g, b)' colour."""
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(fg: str, bg: str) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


COLOURS = """sel => Array.from(document.querySelectorAll(sel)).slice(0, 3).map(el => {
    const s = getComputedStyle(el);
    return [s.color, s.backgroundColor];
})"""


def test_the_dark_system_scheme_gives_a_dark_page_with_readable_controls(site, browser):
    context, page = open_page(browser, scheme="dark")
    errors = watch_errors(page)
    try:
        page.goto(site.pages["runs"])
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        body = page.evaluate("getComputedStyle(document.body).backgroundColor")
        text = page.evaluate("getComputedStyle(document.body).color")
        assert luminance(body) < 0.05, body
        assert luminance(text) > 0.6, text
        panel = page.evaluate("getComputedStyle(document.querySelector('.table-wrap')).backgroundColor")
        assert luminance(panel) < 0.05, panel
        shot(page, "layout-runs-dark")
        for sel in ("#q", "#project-picker", "button[type=submit]", "#clear-selection", ".badge", "th"):
            pairs = page.evaluate(COLOURS, sel)
            assert pairs, sel
            for fg, bg in pairs:
                assert contrast(fg, bg) >= 4.5, (sel, fg, bg)
        page.goto(site.pages["runs"] + "?cols=status,name,tags")     # tags are not a default column
        pairs = page.evaluate(COLOURS, ".tag")
        assert pairs
        for fg, bg in pairs:
            assert contrast(fg, bg) >= 4.5, (".tag", fg, bg)
        page.goto(site.pages["lineage"])
        node = page.locator("#lineage .node.run .box").first
        fill = node.evaluate("el => getComputedStyle(el).fill")
        ink = page.locator("#lineage .node.run .name").first.evaluate("el => getComputedStyle(el).fill")
        assert luminance(fill) < 0.05 and contrast(ink, fill) >= 4.5, (fill, ink)
        page.goto(site.pages["run-overview"])
        code = page.evaluate(COLOURS, "#notes textarea")
        assert code and contrast(*code[0]) >= 4.5, code
        assert errors == []
    finally:
        context.close()


def test_the_light_system_scheme_gives_a_light_page(site, browser):
    context, page = open_page(browser, scheme="light")
    try:
        page.goto(site.pages["runs"])
        expect(page.locator("html")).to_have_attribute("data-theme", "light")
        assert luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.8
        assert luminance(page.evaluate("getComputedStyle(document.body).color")) < 0.1
        expect(page.locator("#theme-toggle")).to_have_attribute("aria-label", "Switch to the dark theme")
        page.evaluate("""() => { window.heard = [];
            document.addEventListener('nuboard:theme', e => window.heard.push(e.detail.theme)); }""")
        page.emulate_media(color_scheme="dark")             # the system switches: the page follows
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert page.evaluate("window.heard") == ["dark"]
        expect(page.locator("#theme-toggle")).to_have_attribute("aria-label", "Switch to the light theme")
    finally:
        context.close()


def test_the_theme_button_switches_tells_the_page_and_is_remembered(site, browser):
    context, page = open_page(browser, scheme="light")
    errors = watch_errors(page)
    try:
        page.goto(site.pages["timeline"])
        toggle = page.locator("#theme-toggle")
        expect(toggle).to_be_visible()
        expect(toggle).to_contain_text("Dark")
        page.evaluate("""() => { window.heard = [];
            document.addEventListener('nuboard:theme', e => window.heard.push(e.detail.theme)); }""")
        toggle.click()
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        expect(toggle).to_contain_text("Light")
        expect(toggle).to_have_attribute("aria-label", "Switch to the light theme")
        assert page.evaluate("window.heard") == ["dark"]
        assert page.evaluate("localStorage.getItem('nuboard:theme')") == "dark"
        page.reload()
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) < 0.05
        stripe = page.locator("#timeline .tl-stripe").first
        if stripe.count():
            assert luminance(stripe.evaluate("el => getComputedStyle(el).fill")) < 0.05
        page.goto(site.pages["artifacts"])                  # another page: still dark
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.locator("#theme-toggle").click()
        expect(page.locator("html")).to_have_attribute("data-theme", "light")
        page.reload()
        expect(page.locator("html")).to_have_attribute("data-theme", "light")
        assert errors == []
    finally:
        context.close()


def test_a_stored_choice_beats_the_system_scheme(site, browser):
    context, page = open_page(browser, scheme="dark")
    try:
        page.goto(site.pages["index"])
        page.evaluate("localStorage.setItem('nuboard:theme', 'light')")
        page.reload()
        expect(page.locator("html")).to_have_attribute("data-theme", "light")
        assert luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.8
    finally:
        context.close()


def test_the_theme_is_set_by_a_blocking_script_before_the_stylesheet(site):
    html = urllib.request.urlopen(site.pages["runs"], timeout=30).read().decode()
    head = html[:html.index("</head>")]
    tag = re.search(r"<script[^>]*theme\.js[^>]*>", head)
    assert tag and "defer" not in tag.group(0) and "async" not in tag.group(0), tag
    assert head.index("theme.js") < head.index("nuboard.css")


def sideways(page) -> bool:
    return page.evaluate("document.scrollingElement.scrollWidth > window.innerWidth")


@pytest.mark.parametrize("width", [1024, 390])
def test_no_page_scrolls_sideways(site, browser, width):
    context, page = open_page(browser, width=width)
    try:
        wide = []
        for name, url in site.pages.items():
            page.goto(url)
            page.wait_for_load_state("load")
            if sideways(page):
                wide.append(name)
                shot(page, f"layout-{name}-{width}")
        assert wide == [], f"these pages scroll sideways at {width} px: {wide}"
    finally:
        context.close()


def test_saved_views_become_a_strip_above_the_table_below_1200_px(site, browser):
    context, page = open_page(browser, width=1024)
    try:
        page.goto(site.pages["runs"])
        expect(page.locator(".side .view-link")).to_have_count(2)
        side = page.locator(".side").bounding_box()
        query = page.locator("#query-form").bounding_box()
        assert side["y"] + side["height"] <= query["y"] + 1, (side, query)
        assert side["height"] < 120, side
        assert side["width"] > 900, side
        expect(page.locator("#save-view button[type=submit]")).to_be_visible()
        brand, toggle = (page.locator(sel).bounding_box() for sel in (".brand", "#theme-toggle"))
        middle = lambda box: box["y"] + box["height"] / 2                       # noqa: E731
        assert abs(middle(brand) - middle(toggle)) < 8, "the header should stay on one line (the root cut short)"
        shot(page, "layout-runs-1024")
    finally:
        context.close()
    context, page = open_page(browser, width=1440)
    try:
        page.goto(site.pages["runs"])
        side = page.locator(".side").bounding_box()
        query = page.locator("#query-form").bounding_box()
        assert side["x"] + side["width"] <= query["x"], (side, query)     # beside the table
    finally:
        context.close()


OVERLAPS = """() => {
    const header = document.querySelector('header.top');
    const sel = ':scope > a, :scope > label, nav a, :scope > button, :scope > .badge, :scope > .root';
    const parts = Array.from(header.querySelectorAll(sel))
        .filter(el => el.offsetParent !== null)
        .map(el => { const r = el.getBoundingClientRect();
                     return {name: el.id || el.className || el.textContent.trim(),
                             l: r.left, r: r.right, t: r.top, b: r.bottom}; });
    const hits = [];
    for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
        const a = parts[i], b = parts[j];
        if (a.l < b.r - 1 && b.l < a.r - 1 && a.t < b.b - 1 && b.t < a.b - 1) hits.push([a.name, b.name]);
    }
    const out = parts.filter(p => p.l < 0 || p.r > window.innerWidth).map(p => p.name);
    return {count: parts.length, hits: hits, out: out};
}"""


def test_on_a_phone_the_header_wraps_without_overlaps(site, browser):
    context, page = open_page(browser, width=390)
    try:
        for name in ("runs", "run-overview", "lineage"):
            page.goto(site.pages[name])
            found = page.evaluate(OVERLAPS)
            assert found["count"] >= 7, found          # brand, picker, four nav links, theme button
            assert found["hits"] == [] and found["out"] == [], (name, found)
            expect(page.locator("#theme-toggle")).to_be_visible()
        page.goto(site.pages["runs"])
        wrap = page.locator(".table-wrap").first
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth"), "the table should scroll in its box"
        assert not sideways(page)
        shot(page, "layout-runs-390")
    finally:
        context.close()


def test_the_screenshot_script_writes_pngs(make_run, root, tmp_path):
    make_run("llm", points={"train/loss": [(0, 1.0), (1, 0.5)]})
    out = tmp_path / "shots"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "screenshots.py"), "--root", str(root),
                           "--pages", "runs", "--width", "1440", "--out", str(out)],
                          capture_output=True, text=True, env=child_env(), timeout=180)
    assert done.returncode == 0, done.stderr
    png = out / "runs-1440.png"
    assert done.stdout.split() == [str(png)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
