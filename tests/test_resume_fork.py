"""Resume and fork: session files, hiding scalar by scalar, copies up to the fork step."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import nuboard as nb


def steps_values(path, name, rank=0):
    s = nb.read_scalars(path, rank=rank)[name]
    return list(zip(s.steps.tolist(), s.values.tolist()))


def test_resume_must_and_auto(root):
    """'must' fails for a missing run; 'auto' creates it, then continues it in s1."""
    with pytest.raises(ValueError, match="not found") as info:
        nb.init("p", run_id="job-1", resume="must")
    assert "'job-1'" in str(info.value) and not (root / "p" / "runs" / "job-1").exists()
    run = nb.init("p", run_id="job-1", resume="auto", config={"lr": 1})
    run.add_scalar("a", 1.0, step=0)
    run.finish()
    run = nb.init("p", run_id="job-1", resume="auto")
    assert run.session == 1 and run.config == {"lr": 1}
    doc = json.loads((Path(run.path) / "run.json").read_text())
    assert doc["status"] == "running" and doc["end_time"] is None
    assert [s["session"] for s in doc["sessions"]] == [0, 1]
    run.finish()
    names = sorted(p.name for p in Path(run.path).glob("events.*"))
    assert names == ["events.r0.s0.log", "events.r0.s1.log"]


def test_resume_hides_scalar_by_scalar_across_three_sessions(root):
    """Each session's first step of a scalar hides that scalar's earlier points from there on."""
    run = nb.init("p", run_id="r", compact=False)
    for step in range(10):
        run.log({"loss": float(step), "acc": 100.0 + step}, step=step)
    run.finish()

    run = nb.init("p", run_id="r", resume="must", compact=False)   # restart from step 6
    for step in range(6, 12):
        run.add_scalar("loss", 10.0 + step, step=step)
    run.finish()                                                    # acc untouched in s1

    run = nb.init("p", run_id="r", resume="must", compact=False)   # restart from step 8
    for step in range(8, 9):
        run.add_scalar("loss", 20.0 + step, step=step)
    run.add_scalar("acc", 300.0, step=3)
    run.finish()

    assert steps_values(run.path, "loss") == (
        [(s, float(s)) for s in range(6)] + [(6, 16.0), (7, 17.0)] + [(8, 28.0)])
    assert steps_values(run.path, "acc") == [(0, 100.0), (1, 101.0), (2, 102.0), (3, 300.0)]


def test_resume_continues_auto_steps_and_keeps_prefixes(root):
    """step=None after a resume goes on after the earlier sessions; prefixes stay."""
    run = nb.init("p", run_id="r", timing_prefix="perf")
    run.add_scalar("a", 1.0)
    run.add_scalar("a", 1.0)
    run.finish()
    run = nb.init("p", run_id="r", resume="must")
    run.add_scalar("a", 2.0)
    with pytest.raises(ValueError, match="perf"):
        run.add_scalar("perf/x", 1.0)
    run.finish()
    assert steps_values(run.path, "a") == [(0, 1.0), (1, 1.0), (2, 2.0)]
    with pytest.raises(ValueError, match="differs"):
        nb.init("p", run_id="r", resume="must", timing_prefix="other")


def test_resume_replaces_given_labels_only(root):
    """Values passed on resume replace the stored ones; the rest are kept."""
    nb.init("p", run_id="r", run_name="first", tags=["a"], notes="n", group="g").finish()
    run = nb.init("p", run_id="r", resume="must", tags=["b"])
    assert (run.name, run.tags, run.notes, run.group) == ("first", ["b"], "n", "g")
    run.finish()


def test_fork_copies_points_up_to_the_step_for_every_rank(root, monkeypatch):
    """A fork holds the parent's points up to the step, per rank, in its own folder."""
    parent = nb.init("p", run_id="parent", compact=False)
    for step in range(100):
        parent.log({"loss": float(step), "lr": 0.1}, step=step)
    parent.add_scalar("late", 1.0, step=500)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    rank1 = nb.init("p", run_id="parent", resume="auto", compact=False)
    for step in range(0, 100, 10):
        rank1.add_scalar("loss", -float(step), step=step)
    rank1.finish()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    parent.finish()

    fork = nb.init("p", run_name="lower-lr", fork_from=("parent", 50), compact=False)
    for step in range(51, 55):
        fork.add_scalar("loss", 1000.0 + step, step=step)
    fork.add_scalar("lr", 0.05)                          # continues after the copy: step 51
    fork.finish()

    assert steps_values(fork.path, "loss") == (
        [(s, float(s)) for s in range(51)] + [(s, 1000.0 + s) for s in range(51, 55)])
    assert steps_values(fork.path, "lr")[-2:] == [(50, 0.1), (51, 0.05)]
    assert "late" not in nb.read_scalars(fork.path)
    assert steps_values(fork.path, "loss", rank=1) == [(s, -float(s)) for s in range(0, 51, 10)]
    doc = json.loads((Path(fork.path) / "run.json").read_text())
    assert doc["parent"] == {"run_id": "parent", "step": 50, "project": "p"}
    # The fork never refers outside its folder: removing the parent changes nothing.
    import shutil
    shutil.rmtree(root / "p" / "runs" / "parent")
    assert len(steps_values(fork.path, "loss")) == 55


def test_fork_of_a_missing_parent_is_refused(root):
    """fork_from naming no run raises ValueError with the id; no folder is made."""
    with pytest.raises(ValueError, match="'ghost' not found"):
        nb.init("p", fork_from=("ghost", 10))
    assert not (root / "p" / "runs").exists() or not list((root / "p" / "runs").iterdir())
    nb.init("p", run_id="real").finish()
    with pytest.raises(ValueError, match="resume"):
        nb.init("p", run_id="x", resume="auto", fork_from=("real", 1))


def own_points(path, sessions_below=None) -> dict:
    """The run's own scalars (system/, timing/) of rank 0: {name: [(step, wall, value)]}."""
    reader = nb.RunReader(path, sessions_below=sessions_below)
    reader.refresh()
    return {name: list(zip(s.steps.tolist(), s.wall_times.tolist(), s.values.tolist()))
            for name, s in reader.scalars().items() if name.split("/")[0] in ("system", "timing")}


def slow_start(run, seconds: float = 2.0) -> None:
    """What a job does before its first add_scalar: load a checkpoint, timed, while sampling."""
    with run.timer("load"):
        time.sleep(seconds)


def train_ten_timed_steps(run):
    """Steps 0-9 of 'loss', each timed as timing/step (80 ms, so the sampler logs meanwhile)."""
    for step in range(10):
        with run.timer("step"):
            time.sleep(0.08)
        run.add_scalar("loss", float(step), step=step)
    run.finish()
    return run


def test_resume_keeps_every_earlier_system_and_timing_point(root):
    """A session that samples and times for 2 s before its first add_scalar logs those points
    at the step the run reached, and every earlier system/ and timing/ point stays readable,
    from the logs and from data.parquet, even where the new session goes back to a checkpoint."""
    kw = dict(system_interval=0.2, capture_console=False, capture_env=False)
    run = train_ten_timed_steps(nb.init("p", run_id="job", **kw))
    before = own_points(run.path)
    assert len(before["system/memory/process_gb"]) >= 3 and len(before["timing/step"]) == 10

    run = nb.init("p", run_id="job", resume="must", **kw)
    slow_start(run)
    assert run.step == -1                              # nothing logged yet by this session
    for step in range(6, 9):                           # back to the checkpoint of step 6
        with run.timer("step"):
            time.sleep(0.05)
        run.add_scalar("loss", 10.0 + step, step=step)
    run.finish()
    assert (Path(run.path) / "data.parquet").is_file()
    from_parquet = {n: list(zip(s.steps.tolist(), s.wall_times.tolist(), s.values.tolist()))
                    for n, s in nb.read_scalars(run.path).items()}
    assert [(s, v) for s, _, v in from_parquet.pop("loss")] == (
        [(s, float(s)) for s in range(6)] + [(s, 10.0 + s) for s in range(6, 9)])
    for got in (own_points(run.path), from_parquet):
        for name, points in before.items():
            assert got[name][:len(points)] == points, name
        later = {name: got[name][len(before[name]):] for name in before}
        assert later["system/memory/process_gb"][0][0] == 9    # sampled while loading: step 9
        assert [s for s, _, _ in later["timing/step"]] == [9, 6, 7]   # each at the latest step
        assert got["timing/load"][0][0] == 9 and got["timing/load"][0][2] >= 2.0


def test_fork_keeps_every_copied_system_and_timing_point(root):
    """A fork's own points before its first add_scalar go at the fork step, and every
    system/ and timing/ point copied from the parent (those at the fork step too) stays."""
    kw = dict(system_interval=0.2, capture_console=False, capture_env=False)
    parent = train_ten_timed_steps(nb.init("p", run_id="parent", **kw))
    copied = {name: [p for p in points if p[0] <= 7]
              for name, points in own_points(parent.path).items()}
    assert copied["timing/step"][-1][0] == 7 and copied["system/cpu/percent"]

    fork = nb.init("p", run_id="fork", fork_from=("parent", 7), **kw)
    slow_start(fork)
    fork.add_scalar("loss", 100.0, step=8)
    with fork.timer("step"):
        pass
    fork.finish()
    got = own_points(fork.path)
    for name, points in copied.items():
        assert got[name][:len(points)] == points, name
    assert got["timing/load"][0][0] == 7
    assert [s for s, _, _ in got["timing/step"]] == [s for s, _, _ in copied["timing/step"]] + [8]
    new_samples = got["system/memory/process_gb"][len(copied["system/memory/process_gb"]):]
    assert new_samples and new_samples[0][0] == 7
