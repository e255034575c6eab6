"""The Charts page's smoothing kinds (issue 33, item 5): EMA, a running average and a Gaussian
each draw a noisy series differently, the choice is in the URL and survives a reload, and the
three functions (window.NuBoardSmoothing, static/charts.js) do what docs/viewer.md says."""
from __future__ import annotations

import math

import pytest
from helpers_browser import serve, shot, shutdown, watch_errors

pytestmark = pytest.mark.browser

CHART = "train/loss"
# a fingerprint of the chart's plot: the canvas' pixels summed with their positions
PIXELS = """f => { const c = f.querySelector('canvas'), d = c.getContext('2d')
    .getImageData(0, 0, c.width, c.height).data; let h = 0;
    for (let i = 0; i < d.length; i += 4) h = (h * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) % 1000000007;
    return h; }"""


def noisy(i: int) -> float:
    """A falling curve with a deterministic zig-zag: every smoothing kind flattens it its own way."""
    return 2.0 / (1 + i / 40) + 0.3 * math.sin(i * 2.1) + (0.4 if i % 17 == 0 else 0.0)


def draw_with(page, kind: str, before: int | None) -> int:
    page.select_option("#smoothing-kind", kind)
    figure = page.locator(f'figure.chart[data-name="{CHART}"]')
    page.wait_for_function(f"""([f, before]) => {{ const h = ({PIXELS})(f); return h !== before; }}""",
                           arg=[figure.element_handle(), before])
    return figure.evaluate(PIXELS)


def test_each_kind_draws_its_own_line_and_is_kept(page, root, make_run):
    run = make_run("llm", {CHART: [(i, noisy(i)) for i in range(400)]}, run_name="noisy").name
    proc, url = serve(root)
    base = f"{url}/p/llm/.charts?runs={run}"
    try:
        errors = watch_errors(page)
        page.goto(base + "&smoothing=0.5")
        figure = page.wait_for_selector(f'figure.chart[data-name="{CHART}"][data-drawn="1"]')
        assert page.input_value("#smoothing-kind") == "ema"
        assert "smoothing_kind" not in page.url
        ema = figure.evaluate(PIXELS)
        mean = draw_with(page, "mean", ema)
        assert "smoothing_kind=mean" in page.url
        assert page.inner_text("#smoothing-value") == "0.50 (51 points)"
        gauss = draw_with(page, "gauss", mean)
        assert "smoothing_kind=gauss" in page.url
        assert len({ema, mean, gauss}) == 3
        shot(page, "charts-gaussian-smoothing")
        page.reload()                                     # the URL keeps it
        figure = page.wait_for_selector(f'figure.chart[data-name="{CHART}"][data-drawn="1"]')
        assert page.input_value("#smoothing-kind") == "gauss"
        page.goto(base)                                   # no settings in the URL: this project's
        figure = page.wait_for_selector(f'figure.chart[data-name="{CHART}"][data-drawn="1"]')
        assert page.input_value("#smoothing-kind") == "gauss"
        assert page.input_value("#smoothing") == "0.5"
        assert figure.evaluate(PIXELS) == gauss           # the same line as before the reload
        draw_with(page, "ema", gauss)
        assert "smoothing_kind" not in page.url           # the default is left out
        page.goto(base + "&smoothing_kind=nonsense")      # a kind it does not know: EMA
        page.wait_for_selector(f'figure.chart[data-name="{CHART}"][data-drawn="1"]')
        assert page.input_value("#smoothing-kind") == "ema"

        got = page.evaluate("""() => { const S = window.NuBoardSmoothing, big = [];
            for (let i = 0; i < 10000; i++) big.push(i % 500 === 0 ? null : Math.sin(i));
            return { mean3: S.mean([1, 2, 3, 4, 5], 3),
                     meanGap: S.mean([1, 3, null, 10, 20, 30], 3),
                     gaussFlat: S.gauss([4, 4, 4, 4, 4, 4, 4], 2),
                     gaussGap: S.gauss([1, 1, null, 5, 5], 3),
                     emaGap: S.ema([1, null, 3], 0.5),
                     windows: [S.meanWindow(0.1), S.meanWindow(0.5), S.meanWindow(0.99)],
                     sigma: S.gaussSigma(0.5),
                     bigNulls: S.apply(big, 0.99, 'gauss').filter(v => v === null).length }; }""")
        assert got["mean3"] == [1.5, 2, 3, 4, 4.5]
        assert got["meanGap"] == [2, 2, None, 15, 20, 25]      # no window reaches across a null
        assert got["gaussFlat"] == [4] * 7
        assert got["gaussGap"] == [1, 1, None, 5, 5]
        assert got["emaGap"][1] is None
        assert got["windows"] == [11, 51, 101] and got["sigma"] == 10
        assert got["bigNulls"] == 20
        assert not errors
    finally:
        shutdown(proc)
