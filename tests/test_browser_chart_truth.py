"""Charts that never say something false (issue 31), in a real browser on the demo and on a run
of 2,000,000 steps: one zoom for every chart, each drawn only with the data fetched for its
range; a fork's jump stays a gap beside 11 other runs; the group legend shows the current
grouping only; SI step ticks and y labels that fit; a failed request shows the server's words."""
from __future__ import annotations

import json
import math
import re
import urllib.request

import pytest
from helpers import QUIET
from helpers_browser import INKED, serve, shot, shutdown, watch_errors

import nuboard as nb

pytestmark = pytest.mark.browser

BIG_STEPS = 2_000_000
BIG_CHARTS = ("train/loss", "train/lr", "train/grad_norm", "train/tokens")
FORK = "lr1e-3-s1-halflr"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo written once, served by `nuboard up`; the 12 llm-pretrain runs that train."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("chart-truth-demo") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    proc, url = serve(root)
    runs = {key.split("/", 1)[1]: run_id for key, run_id in written.runs.items()
            if key.startswith("llm-pretrain/")}
    training = [run_id for name, run_id in runs.items() if name not in ("prepare-data", "eval-mmlu")]
    yield {"url": url, "runs": runs, "training": training}
    shutdown(proc)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """One run of 2,000,000 steps (train/loss every step, three more scalars every 100 steps),
    written with the real API, served by `nuboard up`."""
    root = tmp_path_factory.mktemp("chart-truth-big") / "experiments"
    with nb.init("big", dir=root, run_name="two-million", **QUIET) as run:
        add = run.add_scalar
        for i in range(BIG_STEPS):
            add("train/loss", 3.0 / (1 + i * 1e-5) + 0.02 * math.sin(i * 1e-3), step=i)
            if i % 100 == 0:
                add("train/lr", 1e-3 * (1 - i / BIG_STEPS), step=i)
                add("train/grad_norm", 1.0 + math.sin(i * 1e-5), step=i)
                add("train/tokens", 2.057e9 + i * 0.01, step=i)     # ticks of many digits
    proc, url = serve(root)
    yield {"url": url, "run": run.id}
    shutdown(proc)


def drawn(page, name: str):
    page.wait_for_selector(f'figure.chart[data-name="{name}"][data-drawn="1"]', timeout=30000)
    return page.locator(f'figure.chart[data-name="{name}"]')


def pair(text: str) -> tuple[float, float] | None:
    return tuple(float(v) for v in text.split(",")) if text else None


def settled(page, want: str) -> None:
    """Wait until every chart drew the data fetched for the page's zoom `want` ('' none)."""
    page.wait_for_function(
        """want => document.querySelector('#charts').dataset.zoom === want &&
                  Array.from(document.querySelectorAll('figure.chart')).every(f =>
                      f.dataset.drawn === '1' && f.dataset.fetched === want)""",
        arg=want, timeout=30000)


def views(page) -> dict[str, tuple]:
    return page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('figure.chart'))
        .map(f => [f.dataset.name, [f.dataset.view, f.dataset.fetched]]))""")


def agree(view: tuple, fetched: tuple | None) -> bool:
    """The fetch covers the view, padded by at most the view's width."""
    lo, hi = view
    if fetched is None:
        return False
    width, eps = hi - lo, 1e-6 * max(1.0, abs(hi))
    return (fetched[0] <= lo + eps and fetched[1] >= hi - eps
            and lo - fetched[0] <= width + eps and fetched[1] - hi <= width + eps)


def drag(page, figure, start: float, end: float) -> None:
    box = figure.locator(".u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * end, y, steps=6)
    page.mouse.up()


def test_one_zoom_for_every_chart_each_with_its_own_data(page, big):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1400, "height": 1600})       # every chart in view
    page.goto(f"{big['url']}/p/big/.charts?runs={big['run']}&x=step")
    for name in BIG_CHARTS:
        drawn(page, name)
    settled(page, "")
    first, second = (page.locator(f'figure.chart[data-name="{n}"]') for n in BIG_CHARTS[:2])
    drag(page, first, 0.2, 0.6)
    page.wait_for_function("document.querySelector('#charts').dataset.zoom")
    zoom = page.get_attribute("#charts", "data-zoom")
    settled(page, zoom)
    for name, (view, fetched) in views(page).items():
        assert agree(pair(view), pair(fetched)), (name, view, fetched)
        assert 300_000 < pair(view)[0] < pair(view)[1] < 1_300_000, (name, view)
    drag(page, second, 0.3, 0.5)                    # on another chart: every chart follows
    page.wait_for_function("z => document.querySelector('#charts').dataset.zoom !== z", arg=zoom)
    zoom = page.get_attribute("#charts", "data-zoom")
    settled(page, zoom)
    for name, (view, fetched) in views(page).items():
        assert agree(pair(view), pair(fetched)), (name, view, fetched)
        lo, hi = pair(view)
        assert hi - lo < 400_000, (name, view)
        assert "points" in page.inner_text(f'figure.chart[data-name="{name}"] .chart-note')
    shot(page, "charts-2m-zoomed-twice")
    first.locator(".u-over").dblclick()              # on the first chart: every chart resets
    settled(page, "")
    for name, (view, fetched) in views(page).items():
        lo, hi = pair(view)
        assert fetched == "" and lo <= 100 and hi >= BIG_STEPS - 101, (name, view)
    assert not errors


def test_step_ticks_read_in_si_and_y_labels_are_not_clipped(page, big):
    errors = watch_errors(page)
    page.goto(f"{big['url']}/p/big/.charts?runs={big['run']}&x=step")
    for name in ("train/loss", "train/tokens"):
        figure = drawn(page, name)
        ticks = figure.get_attribute("data-x-ticks").split("|")
        assert any(t.endswith(("M", "k")) for t in ticks), ticks
        assert not any(re.search(r"\d{6}", t) for t in ticks), ticks
        labels = figure.get_attribute("data-y-ticks").split("|")
        # the y axis's width (left of the plot) against its widest label, measured in uPlot's axis font, with the
        # ticks (10 px) and the gap (5 px) between them and the labels
        room, need = figure.evaluate("""(f, labels) => {
            const ctx = document.createElement('canvas').getContext('2d');
            ctx.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, ' +
                '"Noto Sans", sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Segoe UI Symbol", "Noto Color Emoji"';
            const left = f.querySelector('canvas').getBoundingClientRect().left;
            return [f.querySelector('.u-over').getBoundingClientRect().left - left,
                    Math.max(...labels.map(l => ctx.measureText(l).width)) + 15]; }""", labels)
        assert room >= need, (name, labels, room, need)
    shot(page, "charts-2m-si-ticks")
    assert not errors




def test_a_fork_beside_11_runs_on_wall_time_draws_no_line_across_its_jump(page, demo):
    fork = demo["runs"][FORK]
    runs = ",".join(demo["training"])
    assert fork in demo["training"] and len(demo["training"]) == 12
    with urllib.request.urlopen(f"{demo['url']}/api/p/llm-pretrain/.chart?name=train/loss"
                                f"&runs={fork}&x=wall&buckets=4000") as answer:
        xs = json.load(answer)["series"][0]["x"]
    gaps = sorted(zip(xs, xs[1:]), key=lambda p: p[1] - p[0])
    before, after = gaps[-1]                         # the copied history's end, the fork's start
    assert after - before > 86400
    errors = watch_errors(page)
    page.goto(f"{demo['url']}/p/llm-pretrain/.charts?runs={runs}&x=wall&group=")
    loss = drawn(page, "train/loss")
    page.dispatch_event(f'input.run-colour[data-colour-of="{fork}"]', "click")
    assert "off" not in (page.get_attribute(f'.legend-runs li[data-run="{fork}"]', "class") or "")
    magenta = "#ff00ff"                              # no run's colour: only the fork's line
    page.evaluate("""([run, colour]) => document.dispatchEvent(new CustomEvent('nuboard:colour',
                      {detail: {run: run, colour: colour}}))""", [fork, magenta])
    page.wait_for_function(f"""() => document.querySelector('.legend-runs li[data-run="{fork}"]')
                               .dataset.colour === '{magenta}'""")
    margin = (after - before) * 0.05
    own = loss.evaluate(INKED, [after, after + (after - before) * 0.3, magenta, 30])
    across = loss.evaluate(INKED, [before + margin, after - margin, magenta, 30])
    shot(page, "charts-fork-wall-12-runs")
    assert own > 30                                  # the fork's own points are drawn
    assert across == 0
    assert not errors


def test_the_group_legend_shows_the_current_grouping_only(page, demo):
    errors = watch_errors(page)
    page.goto(f"{demo['url']}/p/llm-pretrain/.charts?runs={','.join(demo['training'])}&group=group")
    drawn(page, "train/loss")
    page.wait_for_function("document.querySelectorAll('.legend-groups li').length >= 2")
    assert "lr-sweep" in page.inner_text(".legend-groups")
    page.select_option("#group-by", "config.optimizer.lr")
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.legend-groups li'))
                              .some(li => li.textContent.includes('0.001'))""")
    page.wait_for_function("document.querySelector('figure.chart').dataset.series.includes('0.001')")
    groups = page.eval_on_selector_all(".legend-groups li", "lis => lis.map(li => li.dataset.group)")
    legend = page.inner_text(".legend-groups")
    shot(page, "charts-grouped-by-lr")
    assert not {"ddp", "lr-sweep"} & set(groups), groups
    assert "lr-sweep" not in legend and "ddp" not in legend
    assert len(groups) == len(set(groups)) >= 5
    assert not errors


def test_a_failed_chart_request_shows_the_server_s_message(page, demo):
    errors = watch_errors(page)
    page.goto(f"{demo['url']}/p/llm-pretrain/.charts?runs={demo['runs'][FORK]}&x=step")
    loss = drawn(page, "train/loss")
    # 51 runs asked for: the data endpoint answers 400 in JSON with its reason
    page.evaluate("""() => { const c = document.querySelector('#charts');
        c.dataset.runs = Array.from({length: 51}, (_, i) => 'run' + i).join(','); }""")
    page.select_option("#x-axis", "wall")
    page.wait_for_function("document.querySelector('figure.chart').classList.contains('failed')")
    note = loss.locator(".chart-note").inner_text()
    assert "51 runs asked for; a chart shows at most 50." in note and "400" in note, note
    # an address that answers with the HTML error page: its message, not the whole page
    page.evaluate("""() => { const c = document.querySelector('#charts');
        c.dataset.runs = c.dataset.runs.split(',')[0];
        c.dataset.api = c.dataset.api.replace('/api/p/', '/p/nope/'); }""")
    page.select_option("#x-axis", "step")
    page.wait_for_function("""() => document.querySelector('figure.chart .chart-note').textContent
                              .includes('404')""")
    note = loss.locator(".chart-note").inner_text()
    shot(page, "charts-failed-request")
    assert "The requested URL was not found on the server." in note, note
    assert "Back to the projects" not in note and "<" not in note, note   # the message alone
    assert loss.locator("canvas").count() == 0        # no plot left from other settings
    assert not errors


@pytest.mark.parametrize("axis", ["relative", "process"])
def test_the_relative_axes_of_the_12_demo_runs_span_less_than_a_day(page, demo, axis):
    errors = watch_errors(page)
    page.goto(f"{demo['url']}/p/llm-pretrain/.charts?runs={','.join(demo['training'])}&x={axis}")
    assert page.input_value("#x-axis") == axis
    loss = drawn(page, "train/loss")
    lo, hi = pair(loss.get_attribute("data-view"))
    assert 0 < hi - lo < 86400, (axis, lo, hi)
    assert not errors
