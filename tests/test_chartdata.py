"""Chart data: min/max downsampling, and the series cache over real run folders."""
from __future__ import annotations

import json
import math
import os
import shutil
import threading
from array import array

import pytest
from helpers import QUIET

import nuboard as nb
from nuboard.eventlog.reader import RunReader
from nuboard.files import layout
from nuboard.web import downsampling
from nuboard.web.chartdata import SeriesCache, list_ranks, series_payload
from nuboard.web.downsampling import downsample, prepare_axis, reduce_axis


def write_run(root, project="p", name="train/loss", n=1000, value=lambda i: float(i),
              **kwargs):
    """A finished run with one scalar of n points, written with the real API."""
    with nb.init(project, dir=root, **QUIET, **kwargs) as run:
        for i in range(n):
            run.add_scalar(name, value(i), step=i)
    return run.path


def logs_only_copy(run_dir, dest):
    """The same run folder without its data.parquet, so it must be read from the logs."""
    shutil.copytree(run_dir, dest, ignore=shutil.ignore_patterns(layout.PARQUET))
    return dest


# -- downsample ----------------------------------------------------------------------------------

@pytest.mark.parametrize("buckets", [500, 4000])     # the per-bucket and the vectorized paths
def test_spike_and_dip_of_one_step_survive_in_a_million_points(buckets):
    n = 1_000_000
    y = array("d", (math.sin(i / 5000.0) for i in range(n)))
    y[123_457] = 100.0
    y[765_433] = -100.0
    x = array("q", range(n))
    xs, ys = downsample(x, y, buckets=buckets)
    assert len(xs) <= 2 * buckets + 4
    assert max(ys) == 100.0 and xs[ys.index(100.0)] == 123_457.0
    assert min(ys) == -100.0 and xs[ys.index(-100.0)] == 765_433.0
    assert xs == sorted(xs)
    assert xs[0] == 0.0 and xs[-1] == n - 1        # the very first and last points


def test_each_bucket_keeps_its_own_min_and_max():
    n = 100_000
    y = [((i * 7919) % 1000) / 10.0 for i in range(n)]
    xs, ys = downsample(range(n), y, buckets=10)
    kept = set(zip(xs, ys))
    for k in range(10):
        part = [(float(i), y[i]) for i in range(k * 10_000, (k + 1) * 10_000)]
        low = min(part, key=lambda p: p[1])            # the first point holding the minimum
        high = max(part, key=lambda p: p[1])
        assert low in kept and high in kept
    assert len(xs) <= 2 * 10 + 4


def test_few_points_come_back_unchanged():
    x = [0, 1, 2, 5, 9]
    y = [0.5, -1.0, 2.25, 3.0, 1e300]
    xs, ys = downsample(x, y, buckets=10)
    assert xs == [0.0, 1.0, 2.0, 5.0, 9.0]
    assert ys == y
    assert all(type(v) is float for v in xs)


def test_lo_and_hi_keep_one_point_beyond_each_edge():
    x = list(range(100))
    xs, ys = downsample(x, [float(v) for v in x], lo=10.5, hi=20.5)
    assert xs == [float(v) for v in range(10, 22)]   # 11..20 inside, 10 and 21 just outside
    out = reduce_axis(prepare_axis(x, x), lo=10.5, hi=20.5)
    assert out.in_range == 10 and not out.downsampled
    at_edges = reduce_axis(prepare_axis(x, x), lo=0, hi=99)
    assert at_edges.x == [float(v) for v in range(100)]


def test_zoomed_downsample_stays_in_range_plus_edges():
    n = 200_000
    x = array("q", range(n))
    y = array("d", (float(i % 997) for i in range(n)))
    out = reduce_axis(prepare_axis(x, y), lo=1000, hi=50_000, buckets=100)
    assert out.downsampled and out.in_range == 49_001
    assert out.x[0] == 999.0 and out.x[-1] == 50_001.0
    assert all(1000 <= v <= 50_000 for v in out.x[1:-1])
    assert out.x[1] == 1000.0 and out.x[-2] == 50_000.0
    assert len(out.x) <= 2 * 100 + 4


def test_a_range_between_two_points_gives_the_two_points():
    xs, ys = downsample([0, 10], [1.0, 2.0], lo=3, hi=4)
    assert xs == [0.0, 10.0] and ys == [1.0, 2.0]
    assert reduce_axis(prepare_axis([0, 10], [1.0, 2.0]), lo=3, hi=4).in_range == 0


def test_nan_and_inf_are_gaps_and_never_a_min_or_max():
    xs, ys = downsample([0, 1, 2, 3], [1.0, math.nan, math.inf, -math.inf])
    assert ys == [1.0, None, None, None]
    n = 100_000
    y = array("d", (float(i % 100) for i in range(n)))
    y[5_000] = math.inf
    y[6_000] = -math.inf
    for i in range(50_000, 60_000):                  # one bucket of nothing but NaN
        y[i] = math.nan
    for buckets in (10, 20):
        xs, ys = downsample(range(n), y, buckets=buckets)
        finite = [v for v in ys if v is not None]
        assert max(finite) == 99.0 and min(finite) == 0.0
        assert None in ys                            # the NaN bucket shows as a gap
        gap = xs[ys.index(None)]
        assert 50_000 <= gap < 60_000
    json.dumps({"y": ys}, allow_nan=False)           # valid JSON


def test_empty_and_single_point():
    assert downsample([], []) == ([], [])
    assert downsample([], [], lo=0, hi=1) == ([], [])
    assert downsample([7], [3.5]) == ([7.0], [3.5])
    assert downsample([7], [3.5], lo=0, hi=100, buckets=1) == ([7.0], [3.5])
    assert downsample([7], [3.5], lo=10, hi=20) == ([7.0], [3.5])   # the point before lo


def test_all_equal_x_keeps_min_max_first_and_last():
    n = 10_000
    wall = 1_790_000_000.25
    y = [float((i * 31) % 101) for i in range(n)]
    xs, ys = downsample([wall] * n, y, buckets=10)
    assert set(xs) == {wall}
    assert 0.0 in ys and 100.0 in ys
    assert ys[0] == y[0] and ys[-1] == y[-1]
    assert len(xs) <= 4


def test_unsorted_x_comes_back_sorted_and_bad_x_is_dropped():
    xs, ys = downsample([3, 1, 2, math.nan], [30.0, 10.0, 20.0, 40.0])
    assert xs == [1.0, 2.0, 3.0] and ys == [10.0, 20.0, 30.0]


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="buckets"):
        downsample([1], [1.0], buckets=0)
    with pytest.raises(ValueError, match="lo"):
        downsample([1], [1.0], lo=5, hi=1)
    with pytest.raises(ValueError, match="length"):
        downsample([1, 2], [1.0])


# -- the cache -----------------------------------------------------------------------------------

def test_logs_and_parquet_give_the_same_series(root, tmp_path):
    run_dir = write_run(root, n=3000, value=lambda i: math.cos(i) if i != 1234 else math.nan)
    assert (run_dir / layout.PARQUET).is_file()
    logs_dir = logs_only_copy(run_dir, tmp_path / "copy")
    cache = SeriesCache()
    from_parquet = cache.get(run_dir, 0, "train/loss")
    from_logs = cache.get(logs_dir, 0, "train/loss")
    assert from_parquet.source == "parquet" and from_logs.source == "logs"
    for column in ("steps", "walls"):
        assert getattr(from_parquet, column).equals(getattr(from_logs, column))
    assert from_parquet.values.to_pylist()[:1234] == from_logs.values.to_pylist()[:1234]
    assert math.isnan(from_logs.values[1234].as_py())
    assert from_parquet.first_wall == from_logs.first_wall == min(from_logs.walls.to_pylist())
    for x in ("step", "wall", "relative", "process"):
        a = series_payload(cache, run_dir, 0, "train/loss", x=x, buckets=100)
        b = series_payload(cache, logs_dir, 0, "train/loss", x=x, buckets=100)
        assert a == b
    assert cache.names(run_dir, 0) == cache.names(logs_dir, 0) == ["train/loss"]


def test_payload_fields(root):
    with nb.init("p", dir=root, **QUIET) as run:
        for i in range(5000):
            run.add_scalar("train/loss", 1.0 / (i + 1), step=i)
        for i in range(0, 5000, 500):
            run.add_scalar("eval/acc", i / 5000, step=i)
        run.add_scalar("eval/acc", math.inf, step=5000)
    cache = SeriesCache()
    p = series_payload(cache, run.path, 0, "train/loss", buckets=100)
    assert set(p) == {"x", "y", "total", "in_range", "sent", "downsampled", "first_wall", "last"}
    assert p["total"] == p["in_range"] == 5000 and p["downsampled"]
    assert p["sent"] == len(p["x"]) == len(p["y"]) <= 204
    assert p["last"]["step"] == 4999 and p["last"]["value"] == 1 / 5000
    assert p["y"][0] == 1.0                          # the first point, and the max
    assert all(type(v) is int for v in p["x"])       # steps go out as ints: shorter JSON
    assert json.dumps(p["x"][:2]) == "[0, 49]"       # a bucket's first and its min
    small = series_payload(cache, run.path, 0, "eval/acc", x="relative")
    assert not small["downsampled"] and small["total"] == 11
    assert small["y"][-1] is None and small["last"]["value"] is None
    assert all(v >= 0 for v in small["x"])
    walls = series_payload(cache, run.path, 0, "eval/acc", x="wall")["x"]
    assert small["x"] == [w - small["first_wall"] for w in walls]
    assert all(type(v) is float for v in walls)
    zoom = series_payload(cache, run.path, 0, "train/loss", lo=100, hi=200)
    assert zoom["in_range"] == 101 and zoom["x"][0] == 99.0 and zoom["x"][-1] == 201.0
    rel = series_payload(cache, run.path, 0, "eval/acc", x="relative", lo=small["x"][3],
                         hi=small["x"][5])
    assert rel["in_range"] == 3
    json.dumps(p, allow_nan=False)
    json.dumps(small, allow_nan=False)
    assert series_payload(cache, run.path, 0, "no/such") is None
    assert series_payload(cache, run.path, 3, "train/loss") is None
    with pytest.raises(ValueError, match="x="):
        series_payload(cache, run.path, 0, "train/loss", x="epoch")


def test_a_stale_parquet_is_not_used_after_a_resume(root):
    run_dir = write_run(root, n=100, compact=True)
    run_id = run_dir.name
    run = nb.init("p", dir=root, run_id=run_id, resume="must", **QUIET)
    for i in range(50, 150):                         # the new session hides steps 50 and up
        run.add_scalar("train/loss", -float(i), step=i)
    run.flush()
    try:
        series = SeriesCache().get(run_dir, 0, "train/loss", live=True)
        assert series.source == "logs"
        assert series.steps.to_pylist() == list(range(150))
        assert series.values.to_pylist()[49:51] == [49.0, -50.0]
    finally:
        run.finish()


def test_sessions_are_kept_through_the_resume_rule(root, tmp_path):
    """A resumed session that goes back 50 steps hides them: each session's points stay
    together, and the process axis goes on where the first session's last point was."""
    run_dir = write_run(root, n=100, value=float)
    with nb.init("p", dir=root, run_id=run_dir.name, resume="must", **QUIET) as run:
        for i in range(50, 150):
            run.add_scalar("train/loss", -float(i), step=i)
    logs = logs_only_copy(run_dir, tmp_path / "logs")
    reader = RunReader(logs)
    reader.refresh()
    first = reader.sessions()[0]
    cache = SeriesCache()
    for folder in (run_dir, logs):
        series = cache.get(folder, 0, "train/loss")
        assert series.starts == [(0, 0), (1, 50)] and len(series) == 150
        x = series_payload(cache, folder, 0, "train/loss", x="process")["x"]
        assert x == sorted(x) and x[0] == 0
        assert x[50] == pytest.approx(first.last_wall - first.first_wall)   # hidden: 50..99
    assert series_payload(cache, run_dir, 0, "train/loss", x="process") == \
        series_payload(cache, logs, 0, "train/loss", x="process")


def test_a_live_run_shows_new_points_after_refresh(root):
    run = nb.init("p", dir=root, **QUIET)
    try:
        for i in range(100):
            run.add_scalar("train/loss", float(i), step=i)
        run.flush()
        cache = SeriesCache()
        assert len(cache.get(run.path, 0, "train/loss", live=True)) == 100
        assert series_payload(cache, run.path, 0, "train/loss", live=True)["total"] == 100
        for i in range(100, 250):
            run.add_scalar("train/loss", float(i), step=i)
        run.add_scalar("eval/acc", 0.5, step=249)
        run.flush()
        p = series_payload(cache, run.path, 0, "train/loss", live=True)
        assert p["total"] == 250 and p["last"] == {"step": 249, "value": 249.0,
                                                    "wall": p["last"]["wall"]}
        assert cache.names(run.path, 0, live=True) == ["train/loss", "eval/acc"]
        assert len(cache.get(run.path, 0, "train/loss", live=True)) == 250   # nothing new
        run.add_scalar("train/loss", 250.0, step=250)
    finally:
        run.finish()
    settled = cache.get(run.path, 0, "train/loss", live=False)   # the run stopped: settle
    assert len(settled) == 251
    assert cache.get(run.path, 0, "eval/acc").values.to_pylist() == [0.5]


def test_a_cache_evicts_the_least_recently_used_beyond_its_bound(root):
    runs = [write_run(root, n=1000, value=lambda i, k=k: float(i * k)) for k in range(3)]
    cache = SeriesCache(max_points=2500)
    for run_dir in runs[:2]:
        assert len(cache.get(run_dir, 0, "train/loss", x="step")) == 1000
    assert len(cache) == 2 and cache.points <= 2500
    cache.get(runs[0], 0, "train/loss")              # runs[0] used last: runs[1] goes first
    cache.get(runs[2], 0, "train/loss")
    assert (runs[1], 0) not in cache
    assert (runs[0], 0) in cache and (runs[2], 0) in cache
    assert cache.points <= 2500
    tiny = SeriesCache(max_points=10)                # one run larger than the bound stays
    assert len(tiny.get(runs[0], 0, "train/loss")) == 1000
    assert len(tiny) == 1
    tiny.get(runs[1], 0, "train/loss")
    assert len(tiny) == 1 and (runs[1], 0) in tiny


def test_one_scalar_of_many_is_sliced_without_the_others(root):
    with nb.init("p", dir=root, **QUIET) as run:
        for i in range(200):
            run.log({f"layer{k}/norm": float(i * k) for k in range(50)}, step=i)
    cache = SeriesCache()
    names = cache.names(run.path, 0)
    assert len(names) == 50 and names[0] == "layer0/norm"
    series = cache.get(run.path, 0, "layer7/norm")
    assert series.values.to_pylist() == [float(i * 7) for i in range(200)]
    assert series.source == "parquet"
    zoom = series_payload(cache, run.path, 0, "layer7/norm", lo=50, hi=60)   # a slice at 1400
    assert zoom["x"] == [float(v) for v in range(49, 62)] and zoom["in_range"] == 11
    assert zoom["y"] == [float(v * 7) for v in range(49, 62)]
    walls = series.walls.to_pylist()
    by_wall = series_payload(cache, run.path, 0, "layer7/norm", x="wall", lo=walls[100])
    assert by_wall["in_range"] == sum(1 for w in walls if w >= walls[100])
    assert by_wall["x"][0] == max(w for w in walls if w < walls[100])
    entry = cache._entries[(os.path.abspath(run.path), 0)]
    assert list(entry.series) == ["layer7/norm"]     # the others were not made into Series


def test_threads_share_one_load(root):
    run_dir = write_run(root, n=20_000, value=lambda i: float(i % 13))
    cache = SeriesCache()
    results, errors = [], []

    def fetch():
        try:
            results.append(series_payload(cache, run_dir, 0, "train/loss", buckets=50))
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8
    assert all(r == results[0] for r in results)
    assert len(cache) == 1


def test_list_ranks(root, tmp_path):
    run_dir = write_run(root, n=10)
    assert list_ranks(run_dir) == [0]
    copy = logs_only_copy(run_dir, tmp_path / "two")
    os.link(copy / layout.log_name(0, 0), copy / layout.log_name(1, 0))
    assert list_ranks(copy) == [0, 1]
    assert SeriesCache().names(copy, 1) == ["train/loss"]
    assert list_ranks(tmp_path / "missing") == []


def test_per_bucket_and_vectorized_paths_agree(monkeypatch):
    n = 300_000
    y = array("d", (math.sin(i * 0.001) * (1 + (i % 7)) for i in range(n)))
    y[1000] = math.nan
    axis = prepare_axis(array("q", range(n)), y)
    window = dict(lo=500.5, hi=250_500.5, buckets=250)   # bucket edges halfway between steps
    monkeypatch.setattr(downsampling, "LOOP_PER_BUCKET", 0)
    by_bucket = reduce_axis(axis, **window)
    monkeypatch.setattr(downsampling, "LOOP_PER_BUCKET", 10**9)
    vectorized = reduce_axis(axis, **window)
    assert by_bucket == vectorized and by_bucket.downsampled
    assert 2 * 250 <= len(by_bucket.x) <= 2 * 250 + 4
