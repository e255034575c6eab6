"""Grouping on the Charts page and the order of its chart groups, over HTTP on runs written by
the real API: one line per group (mean, min, max), '(none)', a bad key, the colours, and the
user's own prefixes first with timing/ and system/ last."""
from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest
from helpers import QUIET, write_run
from helpers_http import AppViewer

import nuboard as nb
from nuboard.web.chart_groups import group_lines
from nuboard.web.run_colours import PALETTE, shade


def chart(viewer, project: str, ids: list[str], **params) -> dict:
    query = urlencode({"name": "train/loss", "runs": ",".join(ids), **params})
    reply = viewer.get(f"/api/p/{project}/.chart?{query}")
    assert reply.status == 200, reply.text
    return reply.json()


@pytest.fixture
def three(root, make_run):
    """Runs a and b with optimizer adam (group 'sweep'), c with sgd and no group; steps 0..2."""
    losses = {"a": [1.0, 2.0, 3.0], "b": [3.0, 6.0, 9.0], "c": [10.0, 20.0, 30.0]}
    config = {"a": "adam", "b": "adam", "c": "sgd"}
    ids = []
    for name, values in losses.items():
        folder = make_run("llm", points={"train/loss": list(enumerate(values))}, run_name=name,
                          group="sweep" if name != "c" else None,
                          config={"optimizer": {"name": config[name]}, "seed": len(ids)})
        ids.append(folder.name)
    return ids


def test_groups_by_a_config_key_give_exact_mean_min_and_max(root, three):
    a, b, c = three
    with AppViewer(root) as viewer:
        doc = chart(viewer, "llm", three, group="config.optimizer.name")
    assert doc["series"] == [] and doc["grouped_by"] == ["config.optimizer.name"]
    adam, sgd = doc["groups"]
    assert (adam["label"], adam["value"], adam["runs"], adam["count"]) == ("adam", "adam", [a, b], 2)
    assert adam["x"] == [0.0, 1.0, 2.0]
    assert adam["mean"] == [2.0, 4.0, 6.0]
    assert adam["min"] == [1.0, 2.0, 3.0] and adam["max"] == [3.0, 6.0, 9.0]
    assert (sgd["label"], sgd["runs"], sgd["mean"]) == ("sgd", [c], [10.0, 20.0, 30.0])
    assert sgd["min"] == sgd["max"] == sgd["mean"]
    assert (adam["colour"], sgd["colour"]) == PALETTE[:2]      # distinct, in the groups' order


def test_a_group_keeps_its_colour_on_a_chart_where_it_has_no_line():
    groups = {"r1": (0.001, "0.001"), "r2": (0.003, "0.003"), "r3": (0.01, "0.01")}
    series = [{"run": r, "x": [0.0], "y": [1.0]} for r in ("r1", "r3")]
    lines = group_lines(series, groups, 100)
    assert [(g["label"], g["colour"]) for g in lines] == [("0.001", PALETTE[0]),
                                                           ("0.01", PALETTE[2])]


def test_runs_without_the_key_form_the_none_group(root, three):
    a, b, c = three
    with AppViewer(root) as viewer:
        doc = chart(viewer, "llm", three, group="group")
        missing = chart(viewer, "llm", three, group="config.no.such.key")
    sweep, none = doc["groups"]
    assert (sweep["label"], sweep["runs"], sweep["mean"]) == ("sweep", [a, b], [2.0, 4.0, 6.0])
    assert (none["label"], none["value"], none["runs"]) == ("(none)", None, [c])
    assert [(g["label"], g["count"]) for g in missing["groups"]] == [("(none)", 3)]
    assert missing["groups"][0]["mean"] == [14.0 / 3, 28.0 / 3, 14.0]


def test_a_bad_group_key_is_a_400_naming_it(root, three):
    with AppViewer(root) as viewer:
        for path in ("/api/p/llm/.chart?name=train/loss&group=optimizer.name&runs=" + three[0],
                     "/api/p/llm/.charts?group=tags", "/p/llm/.charts?group=config."):
            reply = viewer.get(path)
            assert reply.status == 400, (path, reply.text)
            key = path.split("group=")[1].split("&")[0]
            assert f"group {key!r}" in reply.text.replace("&#39;", "'")


def test_colours_and_group_keys_in_the_page_and_the_series(root, three):
    a, b, c = three
    with AppViewer(root) as viewer:
        page = viewer.get(f"/api/p/llm/.charts?runs={','.join(three)}&group=group").json()
        doc = chart(viewer, "llm", three)
    # the project's runs in creation order take the palette in its order (run_colours)
    assert [(r["id"], r["colour"]) for r in page["runs"]] == list(zip(three, PALETTE))
    assert page["group"] == "group"
    # group first; then the keys whose values differ (seed, optimizer.name) in config order
    assert page["group_keys"] == [["group", "group"], ["config.optimizer.name", "optimizer.name"],
                                  ["config.seed", "seed"]]
    assert [(s["run"], s["colour"]) for s in doc["series"]] == list(zip(three, PALETTE))
    assert "grouped_by" not in doc and "groups" not in doc


def test_keys_that_do_not_differ_come_after_those_that_do(root, make_run):
    ids = [make_run("llm", points={"train/loss": [(0, 1.0)]},
                    config={"batch": 32, "lr": lr}).name for lr in (0.1, 0.2)]
    with AppViewer(root) as viewer:
        page = viewer.get(f"/api/p/llm/.charts?runs={','.join(ids)}").json()
    assert page["group"] == "" and page["group_keys"] == [["config.lr", "lr"],
                                                          ["config.batch", "batch"]]


def test_ranks_get_shades_of_the_run_colour(root, monkeypatch):
    run_id = "20261201T0000-abcdef02"
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        with nb.init("dist", dir=root, run_id=run_id, resume="auto" if rank else None,
                     **QUIET) as run:
            run.add_scalar("train/loss", 1.0 + rank, step=0)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    with AppViewer(root) as viewer:
        doc = chart(viewer, "dist", [run_id], rank="all")
    assert [(s["rank"], s["colour"]) for s in doc["series"]] == [
        (0, PALETTE[0]), (1, shade(PALETTE[0], 1))]
    assert shade(PALETTE[0], 1) != PALETTE[0]


def test_chart_groups_are_in_first_logged_order_with_timing_then_system_last(root):
    with nb.init("llm", dir=root, system_metrics=True, system_interval=0.05,
                 capture_console=False, capture_env=False) as run:
        time.sleep(0.3)                       # system/ is logged first
        run.add_scalar("zeta/x", 1.0, step=0)
        with run.timer("step"):
            run.add_scalar("alpha/y", 2.0, step=0)
        run.add_scalar("loss", 3.0, step=0)
        run.add_scalar("zeta/w", 4.0, step=1)
    first = run.id
    second = write_run(root, "llm", {"beta/z": [(0, 1.0)], "alpha/v": [(0, 1.0)]}).name
    with AppViewer(root) as viewer:
        page = viewer.get(f"/api/p/llm/.charts?runs={first},{second}").json()
        html = viewer.get(f"/p/llm/.charts?runs={first},{second}").text
    groups = [g["group"] for g in page["groups"]]
    assert groups == ["zeta", "alpha", "", "beta", "timing", "system"], groups
    names = {g["group"]: g["names"] for g in page["groups"]}
    assert names["zeta"] == ["zeta/x", "zeta/w"] and names["alpha"] == ["alpha/y", "alpha/v"]
    assert html.index("zeta/x") < html.index("alpha/y") < html.index("timing/step")


def test_a_run_s_own_timing_prefix_goes_last_too(root):
    with nb.init("llm", dir=root, timing_prefix="perf", **QUIET) as run:
        with run.timer("step"):
            run.add_scalar("zeta/x", 1.0, step=0)
        run.add_scalar("alpha/y", 2.0, step=0)
    with AppViewer(root) as viewer:
        page = viewer.get(f"/api/p/llm/.charts?runs={run.id}").json()
    assert [g["group"] for g in page["groups"]] == ["zeta", "alpha", "perf"]


def test_a_series_without_points_in_range_is_left_out_of_the_line():
    series = [{"run": "a", "x": [], "y": []}, {"run": "b", "x": [5.0, 6.0], "y": [7.0, None]}]
    (line,) = group_lines(series, {"a": (1, "1"), "b": (1, "1")}, 100)
    assert (line["x"], line["mean"], line["min"], line["runs"]) == (
        [5.0, 6.0], [7.0, None], [7.0, None], ["a", "b"])


def test_many_points_are_put_in_equal_bins_shared_by_the_groups(root, make_run):
    ids = [make_run("llm", points={"train/loss": [(i, value) for i in range(100)]},
                    config={"k": k}).name for k, value in ((0, 1.0), (0, 3.0), (10, 10.0))]
    with AppViewer(root) as viewer:
        doc = chart(viewer, "llm", ids, group="config.k", buckets=10)
    low, high = doc["groups"]
    assert low["x"] == high["x"] == pytest.approx([9.9 * (i + 0.5) for i in range(10)])
    assert (low["mean"], low["min"], low["max"]) == ([2.0] * 10, [1.0] * 10, [3.0] * 10)
    assert high["mean"] == [10.0] * 10 and low["count"] == 2


def test_the_run_that_logged_most_leads_the_order_not_the_newest(root):
    """A newest run that logged only evaluation scalars does not put eval/ before train/."""
    train = write_run(root, "llm", {"train/loss": [(0, 1.0)], "train/lr": [(0, 1.0)],
                                    "eval/loss": [(0, 1.0)]}).name
    evaluation = write_run(root, "llm", {"eval/mmlu": [(0, 0.3)]}).name
    with AppViewer(root) as viewer:
        page = viewer.get(f"/api/p/llm/.charts?runs={evaluation},{train}").json()
    assert [g["group"] for g in page["groups"]] == ["train", "eval"]
    assert [g["names"] for g in page["groups"]][1] == ["eval/loss", "eval/mmlu"]


def test_median_std_and_count_per_step_and_groups_of_two_keys(root, make_run):
    """Each group line carries what every centre and band needs: mean, median (exact), min,
    max, sample standard deviation and how many runs have a value; ?group= given twice
    groups by both keys, labelled 'a · b', ordered by each key's value."""
    import statistics

    losses = {("adam", 1): [1.0, 2.0], ("adam", 2): [2.0, 4.0], ("adam", 3): [9.0, 6.0],
              ("sgd", 1): [5.0, 5.0]}
    ids = []
    for (opt, seed), values in losses.items():
        config = {"opt": opt, "seed": seed, "bs": 32 if seed < 3 else 64}
        ids.append(make_run("llm", points={"train/loss": list(enumerate(values))},
                            run_name=f"{opt}-{seed}", config=config).name)
    with AppViewer(root) as viewer:
        one = chart(viewer, "llm", ids, group="config.opt")
        reply = viewer.get(f"/api/p/llm/.chart?name=train/loss&runs={','.join(ids)}"
                           "&group=config.opt&group=config:bs")      # the Runs table's spelling
        too_many = viewer.get(f"/api/p/llm/.chart?name=train/loss&runs={ids[0]}"
                              "&group=config.opt&group=config.bs&group=config.seed&group=group")
    adam = one["groups"][0]
    assert adam["median"] == [2.0, 4.0] and adam["mean"] == [4.0, 4.0]
    assert adam["std"] == [statistics.stdev([1.0, 2.0, 9.0]), statistics.stdev([2.0, 4.0, 6.0])]
    assert adam["n"] == [3, 3] and one["groups"][1]["std"] == [None, None]
    two = reply.json()
    assert two["grouped_by"] == ["config.opt", "config.bs"]
    assert [(g["label"], g["count"]) for g in two["groups"]] == [("adam · 32", 2), ("adam · 64", 1),
                                                                  ("sgd · 32", 1)]
    assert two["groups"][0]["value"] == ["adam", 32]
    assert too_many.status == 400 and "at most 3" in too_many.text
