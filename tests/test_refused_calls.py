"""A refused call changes nothing: after each bad add_scalar, log or timer call, the next
valid calls, the timers and the system sampler still work, and exactly the valid points
come back."""
from __future__ import annotations

import math
import time

import pytest

import nuboard as nb

MAX = 2**63 - 1


def refusals(run):
    """(call, error, message pattern) for every kind of bad input."""
    add, log = run.add_scalar, run.log
    return [
        (lambda: add("x", 1.0, step=2**63), ValueError, r"9223372036854775808 must be between 0 and 2\*\*63-1"),
        (lambda: add("x", 1.0, step=2**200), ValueError, "between 0 and 2"),
        (lambda: add("x", 1.0, step=-1), ValueError, "between 0 and 2"),
        (lambda: add("x", 1.0, step=1.5), TypeError, "must be an int"),
        (lambda: add("x", 1.0, step=True), TypeError, "must be an int"),
        (lambda: add("x", 10**400), ValueError, "out of the range of a float"),
        (lambda: add("x", 10**5000), ValueError, "an int of about 5001 digits"),
        (lambda: add("x", "1.5"), TypeError, "not a real number"),
        (lambda: add("x", None), TypeError, "not a real number"),
        (lambda: add("x", 1.0, wall_time=math.inf), ValueError, "wall_time inf must be .* finite"),
        (lambda: add("x", 1.0, wall_time=math.nan), ValueError, "finite"),
        (lambda: add("x", 1.0, wall_time=10**400), ValueError, "finite"),
        (lambda: add("x", 1.0, wall_time="noon"), TypeError, "wall_time 'noon'"),
        (lambda: add("x", 1.0, wall_time=True), TypeError, "wall_time True"),
        (lambda: add("", 1.0), ValueError, "is empty"),
        (lambda: add("a//b", 1.0), ValueError, "empty segment"),
        (lambda: add("system/cpu/percent", 1.0), ValueError, "reserves"),
        (lambda: add("timing/t", 1.0), ValueError, "reserves"),
        (lambda: add(["x"], 1.0), TypeError, "must be a str"),
        (lambda: add(5, 1.0), TypeError, "must be a str"),
        (lambda: log({"u": 1.0, "v": 2.0}, step=2**63), ValueError, "between 0 and 2"),
        (lambda: log({"u": 1.0, "v": 2.0}, step=-5), ValueError, "between 0 and 2"),
        (lambda: log({"u": 1.0, "v": 2.0}, step="3"), TypeError, "must be an int"),
        (lambda: log({"u": 1.0, "v": 10**400}), ValueError, "'v': value .* range of a float"),
        (lambda: log({"u": True, "v": "a"}), ValueError, "'v' is a scalar of this run"),
        (lambda: log({"u": True, "v": object()}), TypeError, "'v': value <object"),
        (lambda: log({"u": 1.0, "": 1.0}), ValueError, "is empty"),
        (lambda: log({"v": 1.0, "timing/t": 1.0}), ValueError, "reserves"),
        (lambda: log([("u", 1.0)]), TypeError, "dict of name to value"),
        (lambda: run.timer(""), ValueError, "is empty"),
        (lambda: run.timer("a//b"), ValueError, "empty segment"),
        (lambda: run.timer(5), TypeError, "must be a str"),
        (lambda: run.timer("t", all_ranks="yes"), TypeError, "all_ranks"),
    ]


def test_after_every_refused_call_the_run_goes_on(root):
    run = nb.init("p", system_interval=0.1, compact=False, capture_console=False,
                  capture_env=False)
    want_x, want_uv, timed = [], [], 0
    run.log({"u": 0.0, "v": 0.0})                 # u and v go through run.log's fast path
    run.log({"u": 0.0, "v": 0.0})
    want_uv += [(0, 0.0), (1, 0.0)]
    for i, (call, error, match) in enumerate(refusals(run)):
        with pytest.raises(error, match=match):
            call()
        run.add_scalar("x", float(i))             # step=None: one past the last valid point
        want_x.append((i, float(i)))
        run.log({"u": float(i), "v": -float(i)})
        want_uv.append((len(want_uv), float(i)))
        with run.timer("t"):
            pass
        timed += 1
        assert run.step == len(want_uv) - 1
    refused_at = time.time()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:            # the sampler still logs, at a valid step
        run.flush()
        cpu = nb.read_scalars(run.path).get("system/memory/process_gb")
        if cpu is not None and cpu.wall_times[-1] > refused_at:
            break
        time.sleep(0.1)
    run.finish()
    got = nb.read_scalars(run.path)
    assert list(zip(got["x"].steps.tolist(), got["x"].values.tolist())) == want_x
    assert list(zip(got["u"].steps.tolist(), got["u"].values.tolist())) == want_uv
    assert got["v"].values.tolist() == [-v for _, v in want_uv]
    assert len(got["timing/t"]) == timed
    assert set(got) == {"x", "u", "v", "timing/t"} | {n for n in got if n.startswith("system/")}
    memory = got["system/memory/process_gb"]
    assert memory.wall_times[-1] > refused_at and max(memory.steps) == len(want_uv) - 1
    assert run.dropped_points == 0


def test_step_none_past_the_largest_step_is_refused(root):
    """step=None after a point at 2**63-1 is a ValueError; that point and later calls stay."""
    run = nb.init("p", compact=False, system_metrics=False, capture_console=False,
                  capture_env=False)
    run.add_scalar("big", 1.0, step=MAX)
    run.log({"a": 1.0, "b": 1.0}, step=MAX)
    run.log({"a": 2.0, "b": 2.0}, step=MAX)
    with pytest.raises(ValueError, match="9223372036854775808 must be between"):
        run.add_scalar("big", 2.0)
    with pytest.raises(ValueError, match="9223372036854775808 must be between"):
        run.log({"a": 3.0, "b": 3.0})
    with run.timer("t"):
        pass
    run.add_scalar("big", 3.0, step=5)
    run.log({"a": 4.0, "b": 4.0}, step=6)
    run.finish()
    got = {n: list(zip(s.steps.tolist(), s.values.tolist())) for n, s in nb.read_scalars(run.path).items()}
    assert got == {"big": [(MAX, 1.0), (5, 3.0)], "a": [(MAX, 1.0), (MAX, 2.0), (6, 4.0)],
                   "b": [(MAX, 1.0), (MAX, 2.0), (6, 4.0)], "timing/t": got["timing/t"]}
    assert [s for s, _ in got["timing/t"]] == [MAX]
