"""Charts as a user shapes them, over the chart data endpoint: an x axis that is another logged
scalar (tokens seen, epoch) paired by step, several scalars on one chart, and their errors."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest
from helpers import QUIET
from helpers_http import AppViewer

import nuboard as nb


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two runs of train/loss at steps 0..9 (loss = 10 - step, val/loss = step); 'tokens' at the
    even steps only (100 * step, logged twice at step 4: 999 then 400); a third run without
    tokens. Config opt adam, adam, sgd."""
    root = tmp_path_factory.mktemp("shape") / "experiments"
    ids = {}
    for name, opt, with_tokens in (("a", "adam", True), ("b", "adam", True), ("c", "sgd", False)):
        with nb.init("llm", dir=root, run_name=name, config={"opt": opt}, **QUIET) as run:
            for step in range(10):
                run.add_scalar("train/loss", 10.0 - step, step=step)
                run.add_scalar("val/loss", float(step), step=step)
                if with_tokens and step % 2 == 0:
                    if step == 4:
                        run.add_scalar("tokens", 999.0, step=4)
                    run.add_scalar("tokens", 100.0 * step, step=step)
        ids[name] = run.id
    with AppViewer(root) as viewer:
        yield viewer, ids


def chart(viewer, ids, *pairs, status=200) -> dict:
    query = urlencode([("runs", ",".join(ids)), *pairs])
    reply = viewer.get(f"/api/p/llm/.chart?{query}")
    assert reply.status == status, reply.text
    return reply.json()


def test_the_x_axis_is_another_scalar_paired_by_step(site):
    viewer, ids = site
    body = chart(viewer, [ids["a"], ids["c"]], ("name", "train/loss"), ("x", "scalar:tokens"))
    assert body["x"] == "scalar:tokens"
    (series,) = body["series"]                      # run c logged no tokens: no line
    assert series["run"] == ids["a"]
    # only the even steps have tokens; at step 4 the last value logged (400) counts
    assert series["x"] == [0.0, 200.0, 400.0, 600.0, 800.0]
    assert series["y"] == [10.0, 8.0, 6.0, 4.0, 2.0]
    zoomed = chart(viewer, [ids["a"]], ("name", "train/loss"), ("x", "scalar:tokens"),
                   ("lo", "350"), ("hi", "450"))["series"][0]
    # the point in range, and its neighbours so the line reaches the chart's edges
    assert zoomed["in_range"] == 1
    assert zoomed["x"] == [200.0, 400.0, 600.0] and zoomed["y"] == [8.0, 6.0, 4.0]


def test_the_charts_page_offers_logged_scalars_as_x_axes(site):
    viewer, ids = site
    page = viewer.get(f"/p/llm/.charts?runs={ids['a']}&x=scalar:tokens")
    assert page.status == 200
    assert '<option value="scalar:tokens" selected>' in page.text
    assert '<option value="scalar:val/loss"' in page.text


def test_several_scalars_on_one_chart_each_labelled(site):
    viewer, ids = site
    body = chart(viewer, [ids["a"], ids["b"]], ("name", "train/loss"), ("name", "val/loss"))
    assert body["names"] == ["train/loss", "val/loss"]
    got = {(s["run"], s["scalar"]): s for s in body["series"]}
    assert set(got) == {(r, n) for r in (ids["a"], ids["b"]) for n in ("train/loss", "val/loss")}
    assert got[(ids["a"], "val/loss")]["y"] == [float(s) for s in range(10)]
    assert got[(ids["a"], "val/loss")]["label"].endswith(" · val/loss")
    one = chart(viewer, [ids["a"]], ("name", "train/loss"))["series"][0]
    assert one["scalar"] == "train/loss" and "·" not in one["label"]


def test_several_scalars_grouped_give_a_line_per_group_and_scalar(site):
    viewer, ids = site
    body = chart(viewer, list(ids.values()), ("name", "train/loss"), ("name", "val/loss"),
                 ("group", "config.opt"))
    lines = {(g["label"], g["scalar"]): g for g in body["groups"]}
    assert set(lines) == {(f"{opt} · {n}", n) for opt in ("adam", "sgd")
                          for n in ("train/loss", "val/loss")}
    assert lines[("adam · val/loss", "val/loss")]["mean"] == [float(s) for s in range(10)]
    assert lines[("adam · val/loss", "val/loss")]["count"] == 2


@pytest.mark.parametrize("pairs, says", [
    ([("name", "train/loss"), ("x", "scalar:")], "give the x scalar's name"),
    ([("name", "train/loss"), ("x", "tokens")], "scalar:NAME"),
    ([("name", f"s{i}") for i in range(11)], "at most 10 scalars"),
])
def test_bad_axes_and_names_are_refused_with_the_rule(site, pairs, says):
    viewer, ids = site
    assert says in chart(viewer, [ids["a"]], *pairs, status=400)["error"]
