"""The Charts page computes its first charts ahead; their data requests take that result, and
it is the same as computing it then (web/chart_prefetch.py)."""
from __future__ import annotations

import threading
import time

from helpers import QUIET
from helpers_http import AppViewer

import nuboard as nb
from nuboard.web.chart_prefetch import Prefetch, run_in_background


def test_a_result_is_taken_once_and_a_pending_one_is_waited_for():
    pre = Prefetch()
    assert pre.take("k") is None                       # nothing claimed: the caller computes
    started = threading.Event()

    def slow():
        started.set()
        time.sleep(0.3)
        return [1, 2, 3]
    run_in_background(pre, [("k", slow)])
    started.wait(5)
    t = time.monotonic()
    assert pre.take("k") == [1, 2, 3]                  # waited for the thread, not recomputed
    assert time.monotonic() - t > 0.1
    assert pre.take("k") is None                       # once


def test_a_failed_or_expired_result_leaves_the_work_to_the_request():
    pre = Prefetch(ttl=0.05)

    def boom():
        raise OSError("gone")
    run_in_background(pre, [("bad", boom), ("good", lambda: "v")])
    assert pre.take("bad") is None
    assert pre.take("good") == "v"
    run_in_background(pre, [("late", lambda: "w")])
    time.sleep(0.3)
    pre.claim("other")                                 # any later use drops what expired
    assert pre.take("late") is None


def test_only_the_newest_results_are_kept():
    pre = Prefetch(size=2)
    for key in ("a", "b", "c"):
        assert pre.claim(key)
        pre.put(key, key.upper())
    assert pre.take("a") is None and pre.take("b") == "B" and pre.take("c") == "C"


def test_chart_data_after_the_page_is_what_it_would_be_without_it(root):
    ids = []
    for seed in range(3):
        run = nb.init("llm", dir=root, run_name=f"s{seed}", **QUIET)
        for step in range(3000):
            run.add_scalar("train/loss", 1.0 / (step + 1) + seed, step=step)
            run.add_scalar("train/acc", step / 3000 - seed, step=step)
        run.finish()
        ids.append(run.id)
    url = f"/api/p/llm/.chart?runs={','.join(ids)}&x=step&rank=0&buckets=1000&name="
    with AppViewer(root) as cold:
        expected = {n: cold.get(url + n).json() for n in ("train/loss", "train/acc")}
    with AppViewer(root) as viewer:
        viewer.get(f"/p/llm/.charts?runs={','.join(ids)}")            # starts the prefetch
        prefetch = viewer.app.extensions["nuboard_prefetch"]
        key = ("llm", "train/loss", tuple(ids), "step", "0", 1000)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not prefetch._items.get(key, [threading.Event()])[0].is_set():
            time.sleep(0.02)
        assert key in prefetch._items                                  # computed ahead
        for name in ("train/loss", "train/acc"):
            assert viewer.get(url + name).json() == expected[name]
        assert key not in prefetch._items                              # and taken
