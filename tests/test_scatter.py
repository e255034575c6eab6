"""The Scatter page and its JSON twin over real HTTP, on runs written by the real API: the
points and the trend line for known runs, log axes leaving out values of zero or less, a
categorical axis, ?q= and ?runs= narrowing the runs, a run named "<script>" escaped, and bad
input (an unknown field, a query that does not parse) answered 400 with one message."""
from __future__ import annotations

import json
import re

import pytest
from helpers import sweep_runs
from helpers_http import Viewer

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")

XSS = "<script>alert('sc')</script>"


@pytest.fixture
def sweep(root):
    ids = sweep_runs(root, XSS)
    with Viewer(root) as viewer:
        yield viewer, ids


def scatter(viewer, **args) -> dict:
    query = "&".join(f"{k}={v}" for k, v in args.items())
    reply = viewer.get(f"/api/p/llm/.scatter?{query}")
    assert reply.status == 200, reply.text
    return reply.json()


def by_name(doc: dict) -> dict:
    return {p["name"]: (p["x"], p["y"]) for p in doc["points"]}


def test_points_trend_and_log_axes(sweep):
    viewer, ids = sweep
    doc = scatter(viewer, x="config.width", y="train/acc.last")
    assert by_name(doc) == {"w1": (1, 10), "w10": (10, 1000), XSS: (100, 100000),
                            "w0": (0, 5)}
    assert doc["left_out"] == {"missing": 1, "not_positive": 0}
    colours = {p["id"]: p["colour"] for p in doc["points"]}
    assert len(set(colours.values())) == 4 and all(re.fullmatch(r"#[0-9a-f]{6}", c)
                                                    for c in colours.values())
    assert doc["trend"]["space"] == {"x": "linear", "y": "linear"}

    log = scatter(viewer, x="config.width", y="train/acc.last", logx=1, logy=1)
    assert set(by_name(log)) == {"w1", "w10", XSS}
    assert log["left_out"] == {"missing": 1, "not_positive": 1}
    assert log["axes"]["x"]["log"] and log["axes"]["y"]["log"]
    assert log["trend"]["slope"] == pytest.approx(2.0)
    assert log["trend"]["intercept"] == pytest.approx(1.0)
    assert log["trend"]["space"] == {"x": "log10", "y": "log10"}

    low = scatter(viewer, x="config.width", y="train/acc.min", logy=1)
    assert by_name(low)["w10"] == (10, 500)


def test_categorical_axis_and_query(sweep):
    viewer, ids = sweep
    doc = scatter(viewer, x="config.opt", y="train/acc.last", logx=1)
    assert doc["axes"]["x"] == {"field": "config.opt", "kind": "categorical", "log": False,
                                "categories": ["adam", "adamw", "sgd"]}
    assert by_name(doc)["nowidth"] == (1, 7) and by_name(doc)["w10"] == (2, 1000)
    assert doc["trend"] is None

    narrowed = scatter(viewer, x="config.width", y="train/acc.last", q="opt:adam")
    assert set(by_name(narrowed)) == {"w1", XSS} and narrowed["total"] == 2
    picked = scatter(viewer, x="config.width", y="train/acc.last",
                     runs=f"{ids['w1']},{ids['w0']}")
    assert set(by_name(picked)) == {"w1", "w0"}

    default = scatter(viewer)
    assert (default["x"], default["y"]) == ("config.opt", "train/acc.last")
    assert "config.width" in default["fields"] and "train/acc.max" in default["fields"]


def test_page_escapes_names_and_bad_input_is_400(sweep):
    viewer, ids = sweep
    page = viewer.get("/p/llm/.scatter?x=config.width&y=train/acc.last&logx=1")
    assert page.status == 200
    assert "<script>alert" not in page.text
    data = json.loads(re.search(r'<script type="application/json" id="scatter-data">(.*?)</script>',
                                page.text, re.S).group(1))
    assert XSS in {p["name"] for p in data["points"]}
    assert 'value="config.width" selected' in page.text
    assert "1 left out for a value of zero or less on a log axis" in page.text

    for args, words in (("x=config.nope&y=train/acc.last", "unknown field 'config.nope'"),
                        ("x=config.width&y=train/acc.median", "unknown field 'train/acc.median'"),
                        ("x=config.width&y=train/acc.last&q=(opt:adam", "")):
        reply = viewer.get(f"/api/p/llm/.scatter?{args}")
        assert reply.status == 400 and words in reply.json()["error"]
        page = viewer.get(f"/p/llm/.scatter?{args}")
        assert page.status == 400 and 'id="scatter-data"' not in page.text
        assert page.text.count('class="error query-error"') == 1
