"""One text for one value, in Chromium against `nuboard up`: a number reads the same on the Runs
table, in the table a query leaves, and on the run page (Results and Config), whatever else its
column holds; a config int past 2**53 keeps its last digit; sorting by duration orders a lost run
by the duration it shows. On the demo and on a small project written by the API."""
from __future__ import annotations

import random
import re

import pytest
from helpers import write_run
from helpers_browser import serve, shot, shutdown, watch_errors

from nuboard.web.number_text import number_text

pytestmark = pytest.mark.browser

SEED = 2 ** 53 + 1                       # its nearest double is 2**53: ...992

CELLS = """title => {
  const heads = [...document.querySelectorAll('table.runs thead th')]
    .map(th => th.innerText.replace(/\\s*[\\u25b2\\u25bc]$/, '').trim());
  const at = heads.indexOf(title);
  const out = {};
  for (const tr of document.querySelectorAll('table.runs tbody tr[data-run]'))
    out[tr.dataset.run] = at < 0 ? null : tr.children[at].innerText.trim();
  return out;
}"""
"""A Runs table column as the page shows it: {run id: the cell's text}."""

PAIRS = """selector => Object.fromEntries([...document.querySelectorAll(selector + ' tbody tr')]
  .map(tr => [tr.querySelector('th').innerText.trim(), tr.querySelector('td').innerText.trim()]))"""
"""A run page's two-column table (Results: the last value; Config): {name: text}."""

IN_PAGE = "values => values.map(v => window.NuBoardNumbers.text(v))"
"""The charts' own rule (static/chart_numbers.js, as the Charts page loads it) on each value."""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The demo and the `nums` project (a seed of 2**53 + 1, a tokens/s of 76193.4 beside one
    of 1.5e7), written once and served by `nuboard up`."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("numbers") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    big = write_run(root, "nums", {"train/tokens_per_s": [(0, 5.0e4), (1, 76193.4)]},
                    run_name="big", config={"seed": SEED, "lr": 1e-3}).name
    write_run(root, "nums", {"train/tokens_per_s": [(0, 1.5e7)]}, run_name="small",
              config={"seed": 7, "lr": 3e-5})
    proc, url = serve(root)
    yield {"url": url, "runs": written.runs, "big": big}
    shutdown(proc)


def query(page, text: str) -> None:
    """Type a query into the Runs page's box and wait for the table it leaves."""
    page.fill("#q", text)
    page.wait_for_function("q => [...document.querySelectorAll('#runs-results p.count code')]"
                           ".some(c => c.textContent === q)", arg=text)


def run_page(page, url: str) -> tuple[dict, dict]:
    """A run page's Results (each scalar's last value) and Config, as shown."""
    page.goto(url)
    page.wait_for_selector("#run-config table.config")
    return page.evaluate(PAIRS, "#run-results table.results"), page.evaluate(PAIRS, "#run-config table.config")


def test_a_value_reads_the_same_on_the_table_after_a_query_and_on_its_page(page, site):
    errors = watch_errors(page)
    page.goto(site["url"] + "/p/nums?cols=name,config:seed,config:lr,scalar:train/tokens_per_s")
    page.wait_for_selector("table.runs")
    full = {c: page.evaluate(CELLS, c) for c in ("seed", "lr", "train/tokens_per_s")}
    shot(page, "numbers-runs-table")
    query(page, "seed>10")
    left = {c: page.evaluate(CELLS, c) for c in ("seed", "lr", "train/tokens_per_s")}
    results, config = run_page(page, f"{site['url']}/p/nums/.run/{site['big']}")
    shot(page, "numbers-run-page")
    big = site["big"]
    assert list(left["seed"]) == [big]
    for shown in (full, left):
        assert shown["seed"][big] == "9007199254740993"           # not ...992, its double
        assert shown["lr"][big] == "0.001"
        assert shown["train/tokens_per_s"][big] == "76193"         # not 7.619e+04 beside 1.5e7
    assert config["seed"] == "9007199254740993" and config["lr"] == "0.001"
    assert results["train/tokens_per_s"] == "76193"
    assert not errors


def test_the_demo_shows_one_text_per_value_on_every_page(page, site):
    name = "lr1e-3-s1"
    run_id = site["runs"][f"llm-pretrain/{name}"]
    data = page.request.get(site["url"] + "/api/p/llm-pretrain/runs").json()
    values = next(r["values"] for r in data["runs"] if r["id"] == run_id)
    lr, speed = values["config:optimizer.lr"], values["scalar:train/tokens_per_s"]
    page.goto(site["url"] + "/p/llm-pretrain")
    page.wait_for_selector("table.runs")
    full = [page.evaluate(CELLS, c)[run_id] for c in ("optimizer.lr", "train/tokens_per_s")]
    query(page, "optimizer.lr=0.001")
    left = [page.evaluate(CELLS, c)[run_id] for c in ("optimizer.lr", "train/tokens_per_s")]
    results, config = run_page(page, f"{site['url']}/p/llm-pretrain/.run/{run_id}")
    shot(page, "numbers-demo-run-page")
    want = [number_text(lr), number_text(speed)]
    assert want[0] == "0.001" and re.fullmatch(r"\d{5}", want[1])
    assert full == want and left == want
    assert [config["optimizer.lr"], results["train/tokens_per_s"]] == want


def duration_seconds(text: str) -> int:
    """'42s', '3m 05s', '1h 02m', '2d 03h' as seconds (to the unit shown)."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", text))


def test_sorting_by_duration_puts_a_lost_run_by_the_duration_it_shows(page, site):
    page.goto(site["url"] + "/p/llm-pretrain?cols=status,name,duration")
    page.wait_for_selector("table.runs")
    rows = "() => [...document.querySelectorAll('table.runs tbody tr')].map(tr => " \
           "[...tr.querySelectorAll('td')].slice(1).map(td => td.innerText.trim()))"
    for desc in (True, False):
        page.click("table.runs th a.sort >> text=duration")
        page.wait_for_url(re.compile(f"sort=duration.*desc={int(desc)}"))
        page.wait_for_function("d => document.querySelector('table.runs th a.sorted')"
                               ".textContent.includes(d)", arg="\u25bc" if desc else "\u25b2")
        shown = page.evaluate(rows)
        status = {name: s for s, name, _ in shown}
        assert status["wide-d2048"] == "lost"
        seconds = [duration_seconds(d) for _, _, d in shown]
        assert seconds == sorted(seconds, reverse=desc), shown
    shot(page, "numbers-duration-sort")


def test_the_rule_in_javascript_writes_what_python_writes(page, site):
    rnd = random.Random(31)
    values = [rnd.uniform(-1, 1) * 10 ** rnd.randint(-9, 9) for _ in range(1500)]
    values += [round(v, rnd.randint(0, 6)) for v in values[:500]] + [1234.25, 10005000.0, 5e-324]
    page.goto(site["url"] + "/p/nums/.charts")
    page.wait_for_function("window.NuBoardNumbers !== undefined")
    assert page.evaluate(IN_PAGE, values) == [number_text(v) for v in values]
