"""A chart's every point as CSV (web/chart_csv.py) over real HTTP, on runs written by the real
API: all 5,000 points of a run come back exactly as logged (a NaN as an empty cell), lo and hi
cut the range as the chart's data endpoint does, a small run's rows equal that endpoint's JSON
on the wall-time axis, another scalar as the x axis pairs points by step, two scalars come in
one file, a run name a spreadsheet would run is written as text, and bad input (a
grouped chart, an unknown axis, lo above hi, no name, a range over the limit) is answered 4xx
with one message naming the value and the rule."""
from __future__ import annotations

import csv
import io
import math

import pytest
from helpers import QUIET
from helpers_http import Viewer

import nuboard as nb
from nuboard.web import chart_csv

FORMULA = "=HYPERLINK(\"x\"),a"
STEPS = 5000


def value(i: int) -> float:
    """A value of every kind of float: thirds, tiny, huge, negative, and a NaN at step 7."""
    if i == 7:
        return math.nan
    return (1.0 / (i + 3)) * (-1) ** i * 10.0 ** ((i % 17) * 20 - 160)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("chart_csv")
    ids = {}
    with nb.init("llm", dir=root, run_name="long", config={"lr": 0.1}, **QUIET) as run:
        for i in range(STEPS):
            run.add_scalar("train/loss", value(i), step=i)
            if i % 2 == 0 and i < 100:
                run.add_scalar("tokens", i * 512, step=i)
    ids["long"] = run.id
    with nb.init("llm", dir=root, run_name=FORMULA, config={"lr": 0.2}, **QUIET) as run:
        for i in range(10):
            run.add_scalar("train/loss", 2.0 + i / 3, step=i * 10)
    ids["short"] = run.id
    with Viewer(root) as viewer:
        yield viewer, ids


def rows(reply) -> list[list[str]]:
    assert reply.status == 200, reply.text
    return list(csv.reader(io.StringIO(reply.text)))


def test_every_point_comes_back_as_logged(site):
    viewer, ids = site
    reply = viewer.get(f"/p/llm/.chart.csv?name=train/loss&runs={ids['long']},{ids['short']}")
    assert reply.headers["content-type"].startswith("text/csv")
    assert reply.headers["content-disposition"].startswith('attachment; filename="train_loss.csv"')
    table = rows(reply)
    assert table[0] == ["run_id", "run_name", "rank", "scalar", "step", "value"]
    long = [r for r in table[1:] if r[0] == ids["long"]]
    assert len(long) == STEPS                                   # none left out, none added
    assert [int(r[4]) for r in long] == list(range(STEPS))
    for i, r in enumerate(long):
        assert r[1:4] == ["long", "0", "train/loss"]
        if i == 7:
            assert r[5] == ""                                   # NaN: an empty cell, a gap
        else:
            assert float(r[5]) == value(i), (i, r[5])           # the same double, exactly
    short = [r for r in table[1:] if r[0] == ids["short"]]
    assert [r[1] for r in short] == ["'" + FORMULA] * 10        # text in a spreadsheet
    assert [float(r[5]) for r in short] == [2.0 + i / 3 for i in range(10)]


def test_lo_and_hi_cut_the_range(site):
    viewer, ids = site
    table = rows(viewer.get(f"/api/p/llm/.chart.csv?name=train/loss&runs={ids['long']}"
                            "&lo=1000&hi=1999.5"))
    assert [int(r[4]) for r in table[1:]] == list(range(1000, 2000))
    assert rows(viewer.get(f"/p/llm/.chart.csv?name=train/loss&runs={ids['long']}"
                           "&lo=9000"))[1:] == []


def test_a_small_run_equals_the_charts_json(site):
    viewer, ids = site
    query = f"name=train/loss&runs={ids['short']}&x=wall"
    doc = viewer.get(f"/api/p/llm/.chart?{query}").json()
    series = doc["series"][0]
    assert not series["downsampled"]
    table = rows(viewer.get(f"/p/llm/.chart.csv?{query}"))
    assert table[0][4] == "wall_time"
    assert [float(r[4]) for r in table[1:]] == series["x"]
    assert [float(r[5]) for r in table[1:]] == series["y"]


def test_an_x_scalar_and_two_scalars(site):
    viewer, ids = site
    table = rows(viewer.get(f"/p/llm/.chart.csv?name=train/loss&name=tokens&runs={ids['long']}"
                            "&x=scalar:tokens&hi=10240"))
    assert table[0][3:5] == ["scalar", "tokens"]
    loss = [(float(r[4]), float(r[5])) for r in table[1:] if r[3] == "train/loss"]
    assert loss == [(i * 512, value(i)) for i in range(0, 21, 2)]    # paired by step; odd left out
    assert [r[4] for r in table[1:] if r[3] == "tokens"] == [r[5] for r in table[1:]
                                                             if r[3] == "tokens"]


@pytest.mark.parametrize("query, status, said", [
    ("name=train/loss&group=config.lr", 400, "group='config.lr': a grouped chart"),
    ("name=train/loss&x=epoch", 400, "x 'epoch' is not an axis"),
    ("name=train/loss&x=scalar:", 400, "give the x scalar's name"),
    ("name=train/loss&lo=5&hi=1", 400, "lo=5.0 is above hi=1.0"),
    ("name=train/loss&lo=abc", 400, "lo='abc' is not a number"),
    ("name=train/loss&rank=first", 400, "rank 'first'"),
    ("runs=x", 400, "name: give the scalar's name"),
])
def test_bad_input_is_refused_with_one_message(site, query, status, said):
    viewer, ids = site
    reply = viewer.get(f"/api/p/llm/.chart.csv?runs={ids['long']}&{query}")
    assert reply.status == status, reply.text
    assert said in reply.json()["error"]


def test_a_range_over_the_limit_is_refused_naming_it(site, monkeypatch):
    viewer, ids = site
    monkeypatch.setattr(chart_csv, "MAX_POINTS", 1000)
    reply = viewer.get(f"/p/llm/.chart.csv?name=train/loss&runs={ids['long']}")
    assert reply.status == 413
    assert "5,000 points, over the limit of 1,000" in reply.text
    assert rows(viewer.get(f"/p/llm/.chart.csv?name=train/loss&runs={ids['long']}"
                           "&lo=0&hi=999"))[-1][4] == "999"     # a range inside it is served
