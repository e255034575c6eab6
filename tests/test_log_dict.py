"""run.log of dicts: each scalar's points come back in the order logged, whatever the mix of
dict shapes, add_scalar calls, flushes and sessions, with the step=None rule of the docs."""
from __future__ import annotations

import random

import pytest
from helpers import QUIET

import nuboard as nb
from nuboard.eventlog.writer import SERIES_CAP


class Expected:
    """What the docs say a run holds after each call: {name: [(step, value), ...]}."""

    def __init__(self):
        self.points: dict[str, list] = {}
        self.last: dict[str, int] = {}

    def add_scalar(self, name, value, step=None):
        step = self.last.get(name, -1) + 1 if step is None else step
        self.points.setdefault(name, []).append((step, float(value)))
        self.last[name] = step

    def log(self, values, step=None):
        if step is None:
            step = max((self.last.get(n, -1) for n in values), default=-1) + 1
        for name, value in values.items():
            self.points.setdefault(name, []).append((step, float(value)))
            self.last[name] = step


def read_back(path) -> dict:
    return {name: list(zip(s.steps.tolist(), s.values.tolist()))
            for name, s in nb.read_scalars(path).items()}


SHAPES = [("a", "b", "c"), ("b", "d"), ("e", "f"), ("c", "a", "b"), ("g",), ("h", "i", "j", "k")]


def play(run, want: Expected, rng: random.Random, calls: int, counter: list) -> None:
    """Random calls of every kind, mirrored in `want`."""
    for _ in range(calls):
        counter[0] += 1
        v = float(counter[0])
        kind = rng.random()
        step = None if rng.random() < 0.7 else rng.randrange(0, 50)
        if kind < 0.6:
            shape = SHAPES[rng.randrange(len(SHAPES)) if rng.random() < 0.3 else rng.choice((0, 2, 5))]
            values = {name: v + i / 10 for i, name in enumerate(shape)}
            if rng.random() < 0.1:
                values = {name: int(counter[0]) for name in shape}     # ints, not floats
            run.log(values, step=step)
            want.log(values, step)
        elif kind < 0.85:
            name = rng.choice("abcdefghijk")
            run.add_scalar(name, v, step=step)
            want.add_scalar(name, v, step)
        elif kind < 0.95:
            run.flush()
        else:
            with run.timer("t"):
                pass


@pytest.mark.parametrize("seed", range(6))
def test_mixed_dict_shapes_and_add_scalar_keep_each_scalars_order(root, seed):
    """Alternating and overlapping dict shapes, add_scalar between log calls, flushes while
    the writer drains every millisecond, then a resume: the points read back are exactly
    the logged ones, in order, from the logs and from data.parquet."""
    rng = random.Random(seed)
    want, counter = Expected(), [0]
    run = nb.init("p", run_id="mix", flush_interval=0.001, compact=False, **QUIET)
    play(run, want, rng, 3000, counter)
    run.finish()
    got = read_back(run.path)
    got.pop("timing/t", None)
    assert got == want.points

    run = nb.init("p", run_id="mix", resume="must", flush_interval=0.001, **QUIET)
    resumed = Expected()                 # step=None goes on after the earlier session's
    resumed.last = {name: max(step for step, _ in points) for name, points in want.points.items()}
    for name in want.points:
        resumed.points[name] = []
    play(run, resumed, rng, 1000, counter)
    run.finish()
    got = read_back(run.path)            # data.parquet (compact=True) merges the sessions
    got.pop("timing/t", None)
    for name, points in resumed.points.items():
        if points:
            first = points[0][0]
            earlier = [p for p in want.points.get(name, []) if p[0] < first]
            assert got[name] == earlier + points, name
        else:
            assert got[name] == want.points[name], name


def test_a_dict_after_add_scalar_and_back_again(root):
    """A scalar logged by add_scalar, then in a dict, then by add_scalar and in another
    dict, keeps every point in order; step=None follows the last step of each path."""
    run = nb.init("p", flush_interval=3600, compact=False, **QUIET)
    run.add_scalar("loss", 1.0)                          # 0
    run.log({"loss": 2.0, "lr": 0.1})                    # 1
    run.log({"loss": 3.0, "lr": 0.1})                    # 2
    run.add_scalar("loss", 4.0)                          # 3
    run.log({"loss": 5.0, "lr": 0.2})                    # 4: max(3, 2) + 1
    run.log({"lr": 0.3, "loss": 6.0})                    # 5: another order is another shape
    run.log({"loss": 7.0, "lr": 0.4}, step=2)            # back to step 2
    run.add_scalar("lr", 0.5)                            # 3
    run.finish()
    got = read_back(run.path)
    assert got["loss"] == [(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0), (4, 5.0), (5, 6.0), (2, 7.0)]
    assert got["lr"] == [(1, 0.1), (2, 0.1), (4, 0.2), (5, 0.3), (2, 0.4), (3, 0.5)]


def test_values_of_every_accepted_type_and_refusals_in_a_dict(root):
    """A dict takes exactly what add_scalar takes (bool, int, numpy scalars, one-element
    arrays); a refused value raises add_scalar's error and logs nothing of the dict."""
    np = pytest.importorskip("numpy")
    run = nb.init("p", compact=False, **QUIET)
    row = {"f": 0.5, "i": 3, "b": True, "n32": np.float32(0.25), "n64": np.int64(7),
           "arr": np.array([2.5])}
    run.log(row)
    run.log(row)                                          # the second call takes the fast path
    for bad, error, match in (("x", ValueError, "'i' is a scalar of this run"),   # a str is text
                              (None, TypeError, "real number"),
                              (10 ** 400, ValueError, "range of a float"),
                              (np.array([1.0, 2.0]), TypeError, "one element")):
        with pytest.raises(error, match=match):
            run.log({**row, "i": bad})
    run.log(row, step=9)
    run.finish()
    got = read_back(run.path)
    assert got == {"f": [(0, 0.5), (1, 0.5), (9, 0.5)], "i": [(0, 3.0), (1, 3.0), (9, 3.0)],
                   "b": [(0, 1.0), (1, 1.0), (9, 1.0)], "n32": [(0, 0.25), (1, 0.25), (9, 0.25)],
                   "n64": [(0, 7.0), (1, 7.0), (9, 7.0)], "arr": [(0, 2.5), (1, 2.5), (9, 2.5)]}


def test_a_full_dict_buffer_waits_for_the_writer(root):
    """With a long flush interval, a dict shape that buffers SERIES_CAP rows has them
    written without a flush (the call waits for the writer), none lost."""
    run = nb.init("p", flush_interval=3600, compact=False, **QUIET)
    log = run.log
    for step in range(SERIES_CAP + 10):
        log({"a": float(step), "b": -float(step)})
    on_disk = nb.read_scalars(run.path)                   # before any flush or finish
    assert len(on_disk["a"]) >= SERIES_CAP and len(on_disk["b"]) >= SERIES_CAP
    run.finish()
    got = nb.read_scalars(run.path)
    assert got["a"].steps.tolist() == list(range(SERIES_CAP + 10))
    assert got["b"].values.tolist() == [-float(s) for s in range(SERIES_CAP + 10)]
