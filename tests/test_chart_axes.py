"""The Charts page's x axes over the chart data endpoint: a fork and a resumed run on the
relative axes ('relative': wall time since the run's own start; 'process': time while it ran),
from data.parquet and from the logs alike, the demo's 12 runs within a day, and errors as JSON."""
from __future__ import annotations

import json
import shutil
import time
from urllib.parse import urlencode

import pytest
from helpers import QUIET, loss_run
from helpers_http import AppViewer, Viewer

import nuboard as nb
from nuboard.eventlog import parquet
from nuboard.files import layout
from nuboard.web.chartdata import SeriesCache, series_payload

HOUR = 3600.0
T0 = time.time() - 30 * 24 * HOUR           # a month ago: the runs' own clock


def chart(viewer, project: str, ids: list[str], **args) -> dict:
    """The chart data endpoint's answer, checked to be 200."""
    query = urlencode({"runs": ",".join(ids), "name": "train/loss", "buckets": 1000, **args})
    reply = viewer.get(f"/api/p/{project}/.chart?{query}")
    assert reply.status == 200, reply.text
    return reply.json()


def log_points(run, steps, wall, value) -> None:
    """train/loss at these steps, each at wall time wall(step): the run's own clock."""
    for step in steps:
        run.add_scalar("train/loss", value(step), step=step, wall_time=wall(step))


@pytest.fixture
def story(root):
    """A parent of steps 0..99 (10 s apart), its fork at step 49 three days later (steps 50..99,
    values negated), and a run preempted after step 99 and resumed five hours later."""
    with nb.init("llm", dir=root, run_name="parent", **QUIET) as parent:
        log_points(parent, range(100), lambda s: T0 + 10 * s, float)
    with nb.init("llm", dir=root, run_name="fork", fork_from=(parent.id, 49), **QUIET) as fork:
        log_points(fork, range(50, 100), lambda s: T0 + 72 * HOUR + 10 * s, lambda s: -float(s))
    with nb.init("llm", dir=root, run_name="resumed", **QUIET) as first:
        log_points(first, range(100), lambda s: T0 + 10 * s, float)
    with nb.init("llm", dir=root, run_id=first.id, resume="must", **QUIET) as again:
        log_points(again, range(100, 200), lambda s: T0 + 5 * HOUR + 10 * s, float)
    return {"parent": parent.id, "fork": fork.id, "resumed": first.id}


def test_a_fork_counts_from_its_own_start_without_its_parents_points(root, story):
    with AppViewer(root) as viewer:
        by_step = chart(viewer, "llm", [story["fork"]], x="step")["series"][0]
        assert by_step["total"] == 100 and by_step["x"][0] == 0      # the copy, on steps
        for x in ("relative", "process"):
            body = chart(viewer, "llm", [story["fork"], story["parent"]], x=x)
            fork, parent = body["series"]
            assert fork["run"] == story["fork"] and fork["total"] == 50
            assert fork["x"][0] == 0 and fork["x"][-1] == pytest.approx(490)
            assert fork["y"] == [-float(s) for s in range(50, 100)]   # none of the copied
            assert parent["x"][-1] == pytest.approx(990)             # not 3 days and more


def test_process_time_leaves_out_the_pause_between_sessions(root, story):
    with AppViewer(root) as viewer:
        rel = chart(viewer, "llm", [story["resumed"]], x="relative")["series"][0]
        proc = chart(viewer, "llm", [story["resumed"]], x="process")["series"][0]
        assert rel["total"] == proc["total"] == 200 and rel["y"] == proc["y"]
        assert rel["x"][100] - rel["x"][99] == pytest.approx(5 * HOUR + 10)   # the pause
        gaps = [b - a for a, b in zip(proc["x"], proc["x"][1:])]
        assert max(gaps) == pytest.approx(10) and min(gaps) >= 0   # the session's first point
        assert proc["x"][-1] == pytest.approx(1980)                # where the last one ended
        zoom = chart(viewer, "llm", [story["resumed"]], x="process", lo=985, hi=1005)
        assert zoom["range"] == [985, 1005]
        assert zoom["series"][0]["in_range"] == 3                  # 99 and 100 at 990, 101
        assert chart(viewer, "llm", [story["resumed"]], x="process")["range"] is None


def test_data_parquet_and_the_logs_give_the_same_axes(root, story, tmp_path):
    cache = SeriesCache()
    for name in ("fork", "resumed"):
        run_dir = layout.run_dir(root, "llm", story[name])
        assert "sessions" in parquet.current_parquet_meta(run_dir)[1]
        logs = tmp_path / name
        shutil.copytree(run_dir, logs, ignore=shutil.ignore_patterns(layout.PARQUET))
        assert cache.get(run_dir, 0, "train/loss").source == "parquet"
        assert cache.get(logs, 0, "train/loss").source == "logs"
        for x in ("step", "wall", "relative", "process"):
            a = series_payload(cache, run_dir, 0, "train/loss", x=x, buckets=20)
            b = series_payload(cache, logs, 0, "train/loss", x=x, buckets=20)
            assert a == b


def without_sessions(run_dir) -> None:
    """Rewrite data.parquet's metadata as the version before this one wrote it: no sessions."""
    import pyarrow.parquet as pq
    table = pq.read_table(run_dir / layout.PARQUET)
    meta = json.loads(table.schema.metadata[b"nuboard"])
    del meta["sessions"]
    meta["meta_crc32"] = parquet._meta_crc(meta)
    table = table.replace_schema_metadata({b"nuboard": json.dumps(meta).encode()})
    pq.write_table(table, run_dir / layout.PARQUET)


def test_a_data_parquet_of_before_sessions_is_never_read_wrong(root, story):
    expected = {}
    cache = SeriesCache()
    for name in ("fork", "resumed", "parent"):
        run_dir = layout.run_dir(root, "llm", story[name])
        expected[name] = [series_payload(cache, run_dir, 0, "train/loss", x=x)
                          for x in ("relative", "process")]
        without_sessions(run_dir)
        assert parquet.current_parquet_meta(run_dir) is not None
    cache = SeriesCache()
    for name, source in (("fork", "logs"), ("resumed", "logs"), ("parent", "parquet")):
        run_dir = layout.run_dir(root, "llm", story[name])
        found = [series_payload(cache, run_dir, 0, "train/loss", x=x)
                 for x in ("relative", "process")]
        assert found == expected[name]
        assert cache.get(run_dir, 0, "train/loss").source == source


def test_a_live_run_resumed_while_charted_moves_on_the_process_axis(root):
    with nb.init("llm", dir=root, run_name="live", **QUIET) as first:
        log_points(first, range(10), lambda s: T0 + 10 * s, float)
    cache = SeriesCache()
    again = nb.init("llm", dir=root, run_id=first.id, resume="must", **QUIET)
    try:
        before = series_payload(cache, first.path, 0, "train/loss", x="process", live=True)
        assert before["x"][-1] == pytest.approx(90)
        log_points(again, range(10, 20), lambda s: T0 + HOUR + 10 * s, float)
        again.flush()
        after = series_payload(cache, first.path, 0, "train/loss", x="process", live=True)
        assert after["total"] == 20 and after["x"][-1] == pytest.approx(180)
    finally:
        again.finish()


# -- the demo ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo written once; the ids of the 12 llm-pretrain runs that train."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("axes-demo") / "experiments"
    write_demo(root, progress=lambda _line: None)
    with AppViewer(root) as viewer:
        runs = viewer.get("/api/p/llm-pretrain/runs?limit=100").json()["runs"]
    ids = [r["id"] for r in runs if r["name"] not in ("prepare-data", "eval-mmlu")]
    assert len(ids) == 12
    return root, ids


def test_the_demos_runs_on_the_relative_axes_span_less_than_a_day(demo):
    root, ids = demo
    with AppViewer(root) as viewer:
        spans, starts = {}, {}
        for x in ("relative", "process"):
            series = chart(viewer, "llm-pretrain", ids, x=x)["series"]
            assert len(series) == 12
            spans[x] = {s["run_name"]: s["x"][-1] for s in series}
            starts[x] = {s["run_name"]: s["x"][0] for s in series}
            assert max(spans[x].values()) < 24 * HOUR      # 77 h with the fork's copy
        assert min(starts["relative"].values()) >= 0
        assert starts["process"] == starts["relative"]
        # preempted for hours: its second session starts 12.2 h after its first (the demo's
        # plan), which ran for 3 h to 5 h of the demo's clock (slower on a loaded machine)
        assert spans["relative"]["lr6e-4-long"] > 10 * HOUR
        assert spans["process"]["lr6e-4-long"] < spans["relative"]["lr6e-4-long"] - 3 * HOUR
        page = viewer.get(f"/p/llm-pretrain/.charts?x=process&runs={','.join(ids)}")
        assert page.status == 200


# -- errors --------------------------------------------------------------------------------------

def test_a_bad_chart_request_answers_json_with_one_message(root):
    run_id = loss_run(root, "llm")
    with Viewer(root) as viewer:
        base = f"/api/p/llm/.chart?runs={run_id}&name=train/loss"
        for query, words in (("&x=epoch", "is not an axis"), ("&lo=5&hi=1", "lo=5.0 is above"),
                             ("&lo=abc", "is not a number"), ("&rank=x", "rank 'x'")):
            reply = viewer.get(base + query, headers={"Accept": "application/json"})
            assert reply.status == 400, (query, reply.text)
            assert reply.headers["content-type"] == "application/json"
            assert words in reply.json()["error"], reply.text


def test_a_chart_request_whose_catalog_is_down_answers_503_json(root, monkeypatch):
    run_id = loss_run(root, "llm")
    monkeypatch.setenv("NUBOARD_CATALOG_URL", "postgresql+psycopg://nuboard@127.0.0.1:1/nuboard")
    with Viewer(root) as viewer:
        reply = viewer.get(f"/api/p/llm/.chart?runs={run_id}&name=train/loss",
                           headers={"Accept": "application/json"})
        assert reply.status == 503 and reply.headers["content-type"] == "application/json"
        assert "cannot be used" in reply.json()["error"] and "SELECT" not in reply.text
