"""The parallel-coordinates page and its JSON twin over real HTTP, on runs written by the real
API: the axes and each run's values for known runs, brushed ranges choosing the runs `inside`,
a categorical axis, a log axis (and one refused for a value of zero), colour by a field, the
Charts link of the runs inside, a run named "<script>" escaped, and bad input (an unknown
field, a brush that does not parse or names no axis) answered 400 with one message."""
from __future__ import annotations

import json
import re

import pytest
from helpers import sweep_runs
from helpers_http import Viewer

XSS = "<script>alert('pc')</script>"
AXES = "config.width,config.opt,train/acc.last"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel")
    ids = sweep_runs(root, XSS)
    with Viewer(root) as viewer:
        yield viewer, ids


def parallel(viewer, **args) -> dict:
    query = "&".join(f"{k}={v}" for k, v in args.items())
    reply = viewer.get(f"/api/p/llm/.parallel?{query}")
    assert reply.status == 200, reply.text
    return reply.json()


def values(doc: dict) -> dict:
    return {r["name"]: r["values"] for r in doc["runs"]}


def test_axes_values_and_brushes(sweep):
    viewer, ids = sweep
    doc = parallel(viewer, axes=AXES)
    assert [a["field"] for a in doc["axes"]] == AXES.split(",")
    width, opt, acc = doc["axes"]
    assert width == {"field": "config.width", "kind": "numeric", "range": [0, 100]}
    assert opt == {"field": "config.opt", "kind": "categorical",
                   "categories": ["adam", "adamw", "sgd"]}
    assert acc["range"] == [5, 100000]
    assert values(doc)["w10"] == {"config.width": 10, "config.opt": "sgd",
                                  "train/acc.last": 1000}
    assert values(doc)["nowidth"]["config.width"] is None
    assert sorted(doc["inside"]) == sorted(ids.values())         # nothing brushed: all inside
    assert len({r["colour"] for r in doc["runs"]}) == 5

    brushed = parallel(viewer, axes=AXES, brush="config.width:5:200")
    assert sorted(brushed["inside"]) == sorted([ids["w10"], ids[XSS]])
    assert brushed["brush"] == [{"field": "config.width", "lo": 5, "hi": 200}]
    assert brushed["links"]["charts"].endswith("?runs=" + ",".join(brushed["inside"]))
    both = parallel(viewer, axes=AXES, brush="config.width:5:200,config.opt:0:0")
    assert both["inside"] == [ids[XSS]]                          # adam is category 0
    sgd = parallel(viewer, axes=AXES, brush="config.opt:1.5:2")
    assert sorted(sgd["inside"]) == sorted([ids["w10"], ids["w0"]])
    narrowed = parallel(viewer, axes=AXES, q="opt:adam", brush="train/acc.last:0:50")
    assert narrowed["total"] == 2 and narrowed["inside"] == [ids["w1"]]


def test_log_axis_colour_and_defaults(sweep):
    viewer, ids = sweep
    doc = parallel(viewer, axes="config.width,train/acc.last", log="config.width,train/acc.last",
                   brush="train/acc.last:100:1e6")
    width, acc = doc["axes"]
    assert width["kind"] == "numeric" and "zero or less" in width["note"]   # w0 has width 0
    assert acc["kind"] == "log" and acc["range"] == [5, 100000]
    assert sorted(doc["inside"]) == sorted([ids["w10"], ids[XSS]])

    coloured = parallel(viewer, axes="config.opt", colour="train/acc.last")
    colours = {r["name"]: r["colour"] for r in coloured["runs"]}
    assert colours["w0"] == "#2c7bb6" and colours[XSS] == "#d7191c"      # low and high
    assert coloured["colour"]["by"] == "train/acc.last"
    assert [a["field"] for a in coloured["axes"]] == ["config.opt"]

    default = parallel(viewer)
    assert [a["field"] for a in default["axes"]] == ["config.opt", "config.width",
                                                     "train/acc.last"]


def test_page_escapes_names_and_bad_input_is_400(sweep):
    viewer, ids = sweep
    page = viewer.get(f"/p/llm/.parallel?axes={AXES}&brush=config.width:5:200")
    assert page.status == 200
    assert "<script>alert" not in page.text
    data = json.loads(re.search(r'<script type="application/json" id="parallel-data">(.*?)'
                                r'</script>', page.text, re.S).group(1))
    assert XSS in {r["name"] for r in data["runs"]}
    assert '<span id="pc-inside">2</span> of 5 runs' in page.text
    assert 'id="pc-canvas"' in page.text
    runs_page = viewer.get("/p/llm?q=opt:adam").text                 # the Runs page links here
    assert 'id="parallel-link" href="/p/llm/.parallel?q=opt:adam"' in runs_page

    for args, words in (("axes=config.nope", "unknown field 'config.nope'"),
                        ("axes=config.width&colour=train/acc.median",
                         "unknown field 'train/acc.median'"),
                        ("axes=config.width&brush=config.width:a:2", "two numbers"),
                        ("axes=config.width&brush=config.width:3:2", "lo <= hi"),
                        ("axes=config.width&brush=config.opt:0:1", "not one of the axes"),
                        ("axes=config.width&q=(opt:adam", "")):
        reply = viewer.get(f"/api/p/llm/.parallel?{args}")
        assert reply.status == 400 and words in reply.json()["error"], args
        page = viewer.get(f"/p/llm/.parallel?{args}")
        assert page.status == 400 and 'id="parallel-data"' not in page.text
        assert page.text.count('class="error query-error"') == 1
