"""Hypothesis over the importers: hostile TensorBoard log folders and MLflow `mlruns` folders.

Each example builds a source of a few runs, each good or made hostile one way (TensorBoard: a cut,
a flipped byte, garbage or a huge length after the last record, a wall time of 1e300 or NaN, a
string or vector tensor, a record that is not an Event, a FIFO, a name that is not UTF-8; MLflow:
malformed and non-numeric metric lines, steps past 2**63-1, negative steps, a FIFO, bytes that
are not UTF-8, a start in the year 10**22), imports it through the Python API, and checks that
the import returns (never raises, never hangs: a SIGALRM time limit turns a hang into a failure),
that every run that cannot be read exactly is in `unreadable` by its key, and that every other
run is imported with exactly the points the source holds (what TensorBoard reads, for a cut or
damaged file). The first TensorBoard run of each example is a real tensorboardX SummaryWriter
file, mutated.

The budget is the loaded hypothesis profile's (tests/conftest.py: seeded in CI, NUBOARD_FUZZ=long
or NUBOARD_FUZZ_EXAMPLES=N for a longer random search; docs/testing.md), two fifths of its
examples for TensorBoard and a quarter for MLflow, whose examples cost more.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from helpers import time_limit
from hostile_sources import (
    EVENT_FILE,
    EventFile,
    event_file,
    metric_points,
    read_run_points,
    same_points,
    scalar_event,
    string_tensor_event,
    vector_event,
    version_event,
    write_events,
    write_experiment,
    write_mlflow_run,
)

from nuboard import importers

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("tensorboard")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HANG = 60           # seconds one import may take before it counts as hung (it takes ~1 s)


def budget(share: float):
    """The loaded hypothesis profile (tests/conftest.py, docs/testing.md) with `share` of its
    examples, as an example here writes a source and imports it; NUBOARD_FUZZ_EXAMPLES=N gives
    N. A seeded (CI) failure is reported as found, not shrunk: it comes back as it was, and
    shrinking a hang would cost HANG seconds a try; random searches shrink."""
    profile = settings.default
    count = os.environ.get("NUBOARD_FUZZ_EXAMPLES")
    examples = int(count) if count else max(1, round(profile.max_examples * share))
    phases = [Phase.explicit, Phase.reuse, Phase.generate] if profile.derandomize else list(Phase)
    return settings(max_examples=examples, phases=phases, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def covering(kinds: list[str], seen: set[str]) -> list[str]:
    """The mutation kinds the search did not reach, each to be tried once more alone: which
    kinds a seeded search reaches changes with hypothesis's version and the test's source (it
    seeds from them), so every kind is checked whatever the search drew."""
    return sorted(set(kinds) - seen)


# -- TensorBoard ---------------------------------------------------------------------------------

TAGS = ["loss", "train/acc", "weird//name/", "system/cpu", "x y", "ünï/код"]
WALLS = st.floats(min_value=1e9, max_value=2e9, allow_nan=False)
VALUES = st.floats(width=32)                    # simple_value is a float32: NaN and inf too


@st.composite
def good_events(draw) -> list[tuple[bytes, list]]:
    """A version event, then points of a few tags, each tag's steps increasing (some negative)."""
    records = [(version_event(draw(WALLS)), [])]
    tags = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=3, unique=True))
    tensor = {tag: draw(st.booleans()) for tag in tags}
    steps = {tag: sorted(draw(st.sets(st.integers(-3, 2 ** 40), min_size=1, max_size=6)))
             for tag in tags}
    order = [(tag, step) for tag in tags for step in steps[tag]]
    order = draw(st.permutations(order)) if draw(st.booleans()) else order
    seen: dict[str, int] = {}
    for tag, step in order:
        if step < seen.get(tag, -10):             # keep each tag's steps in order
            continue
        seen[tag] = step
        wall, value = draw(WALLS), draw(VALUES)
        if tensor[tag]:
            value = float(value)
        first = len([1 for _, pts in records if pts and pts[0][0] == tag]) == 0
        records.append((scalar_event(tag, step, wall, value, tensor=tensor[tag], first=first),
                        [(tag, step, wall, value)]))
    return records


TB_MUTATIONS = ["none", "none", "cut", "flip", "garbage", "huge_length", "wall_1e300", "wall_nan",
                "string_tensor", "vector_tensor", "not_an_event", "fifo", "not_utf8"]
SKIPPED = {"wall_1e300", "wall_nan", "string_tensor", "vector_tensor", "not_an_event", "fifo",
           "not_utf8"}


@st.composite
def tb_runs(draw, mutations: list[str] = TB_MUTATIONS) -> list[dict]:
    """1-4 runs: {"key", "file": EventFile, "mutation", "at": a byte offset or garbage}."""
    runs = []
    for i in range(draw(st.integers(1, 4))):
        records = draw(good_events())
        mutation = draw(st.sampled_from(mutations))
        run = {"key": f"run{i}", "mutation": mutation}
        if mutation == "wall_1e300":
            records.append((scalar_event("loss", 0, 1e300, 1.0), []))
        elif mutation == "wall_nan":
            records.insert(1, (scalar_event("nan/wall", 0, float("nan"), 1.0), []))
        elif mutation == "string_tensor":
            records.insert(draw(st.integers(1, len(records))), (string_tensor_event("s", 0, 1.7e9), []))
        elif mutation == "vector_tensor":
            records.append((vector_event("v", 1, 1.7e9), []))
        elif mutation == "not_an_event":
            records.insert(draw(st.integers(0, len(records))), (b"\xff\xfe not a protobuf", []))
        elif mutation == "not_utf8":
            run["key"] = os.fsdecode(f"run{i}-".encode() + b"\xff")
        run["file"] = event_file(records)
        size = len(run["file"].data)
        if mutation in ("cut", "flip"):
            run["at"] = draw(st.integers(0, size - 1))
        elif mutation == "garbage":
            run["at"] = draw(st.binary(min_size=1, max_size=40))
        runs.append(run)
    return runs


def real_writer_file(folder: Path) -> EventFile:
    """A tensorboardX SummaryWriter's own event file, split back into its records and points."""
    import struct

    import tensorboardX
    writer = tensorboardX.SummaryWriter(str(folder))
    points = [("train/loss", i, 1.7e9 + i, float(struct.unpack("f", struct.pack("f", 1 / (i + 1)))[0]))
              for i in range(8)]
    for tag, step, wall, value in points:
        writer.add_scalar(tag, value, step, walltime=wall)
    writer.close()
    [path] = folder.glob("events.out.tfevents.*")
    data = path.read_bytes()
    path.unlink()
    out, at = EventFile(data), 0
    from tensorboard.compat.proto import event_pb2
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        end = at + 16 + length
        event = event_pb2.Event.FromString(data[at + 12:at + 12 + length])
        out.ranges.append((at, end))
        out.points.append([(v.tag, event.step, event.wall_time, v.simple_value)
                           for v in event.summary.value])
        at = end
    assert sum(len(p) for p in out.points) == len(points)
    return out


def write_tb_run(logdir: Path, run: dict) -> tuple[dict | None, bool]:
    """Write one run's folder as its mutation says: (expected points, or None when the run must
    be skipped; whether a note about unread bytes is expected)."""
    folder, file, mutation = logdir / run["key"], run["file"], run["mutation"]
    data, upto, note = file.data, len(file.data), False
    if mutation == "cut":
        data = data[:run["at"]]
        upto = max([end for _, end in file.ranges if end <= run["at"]], default=0)
        note = upto < run["at"]
    elif mutation == "flip":
        flipped = bytearray(data)
        flipped[run["at"]] ^= 0xA5
        data, upto, note = bytes(flipped), file.record_at(run["at"]), True
    elif mutation == "garbage":
        data, note = data + run["at"], True
    elif mutation == "huge_length":
        import struct
        head = struct.pack("<Q", 1 << 62)
        from hostile_sources import masked_crc
        data, note = data + head + struct.pack("<I", masked_crc(head)), True
    if mutation == "fifo":
        folder.mkdir(parents=True)
        os.mkfifo(folder / EVENT_FILE)
    else:
        write_events(folder, data)
    return (None if mutation in SKIPPED else file.kept(upto)), note


def check_import(result, root: Path, project: str, expected: dict, notes: dict) -> None:
    """The import's promises: every expected-bad run named, every other one exact."""
    unreadable = {u["key"]: u["reason"] for u in result.unreadable}
    bad = {importers.source_runs.printable(k) for k, v in expected.items() if v is None}
    assert set(unreadable) == bad, (unreadable, expected)
    assert all(unreadable.values())
    good = {k: v for k, v in expected.items() if v is not None}
    assert sorted(result.pending) == sorted(good)
    assert len(result.written) == len(good)
    import json
    for run_id in result.written:
        doc = json.loads((root / project / "runs" / run_id / "run.json").read_text())
        key = doc["source"]["key"]
        got = read_run_points(root / project / "runs" / run_id, doc["source"].get("renamed", {}))
        assert same_points(got, good[key]), (key, got, good[key])
        said = [n for n in result.notes if n.startswith(f"{key}: event file")]
        assert bool(said) == notes.get(key, False), (key, result.notes)


def test_hostile_tensorboard_logdirs(root, tmp_path):
    counter, seen = itertools.count(), set()
    real = real_writer_file(tmp_path / "real")

    def check(runs, mutate_real, at):
        logdir = tmp_path / f"logs{next(counter)}"
        logdir.mkdir()
        runs = [{"key": "real", "file": real, "mutation": mutate_real,
                 "at": at % len(real.data) if mutate_real != "garbage" else b"\0" * (1 + at % 30)}] + runs
        expected, notes = {}, {}
        for run in runs:
            expected[run["key"]], notes[run["key"]] = write_tb_run(logdir, run)
            seen.add(run["mutation"])
        with time_limit("the import", HANG):
            result = importers.tensorboard(logdir, "tb", root)
        check_import(result, root, "tb", expected, notes)

    budget(0.4)(given(runs=tb_runs(), mutate_real=st.sampled_from(["none", "cut", "flip", "garbage"]),
                      at=st.integers(0, 10 ** 6))(check))()
    for kind in covering(TB_MUTATIONS, seen):
        settings(budget(0.4), max_examples=1)(given(runs=tb_runs([kind]), mutate_real=st.just("none"),
                                                    at=st.just(0))(check))()
    assert set(TB_MUTATIONS) <= seen, seen


# -- MLflow --------------------------------------------------------------------------------------

ML_MUTATIONS = ["none", "none", "negative_step", "fields", "not_a_number", "step_2_70", "fifo",
                "not_utf8_line", "future_start", "not_utf8_folder"]
ML_OK = {"none", "negative_step"}
LINE = st.builds(lambda ts, value, step: f"{ts} {value!r} {step}",
                 st.integers(1_500_000_000_000, 1_800_000_000_000),
                 st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 2 ** 63 - 1))
METRICS = st.dictionaries(st.sampled_from(["loss", "train/acc", "a b", "nested/deep/key", "ünï"]),
                          st.lists(LINE, min_size=1, max_size=5), min_size=0, max_size=3)


@st.composite
def ml_runs(draw, mutations: list[str] = ML_MUTATIONS) -> list[dict]:
    runs = []
    for _ in range(draw(st.integers(1, 4))):
        metrics = draw(METRICS)
        mutation = draw(st.sampled_from(mutations))
        if mutation != "none" and not metrics:
            metrics = {"loss": ["1700000000000 0.5 0"]}
        key = next(iter(metrics), "loss")
        if mutation == "negative_step":
            metrics[key] = metrics[key] + [f"1700000000000 0.5 {draw(st.integers(-2 ** 63, -1))}"]
        elif mutation == "fields":
            metrics[key] = metrics[key] + [draw(st.sampled_from(["1 2 3 4", "1", "", "1 2 3 4 5 6"]))]
        elif mutation == "not_a_number":
            metrics[key] = metrics[key] + [f"1700000000000 {draw(st.sampled_from(['abc', '0x1p3', '1e']))} 0"]
        elif mutation == "step_2_70":
            metrics[key] = metrics[key] + [f"1700000000000 0.5 {draw(st.integers(2 ** 63, 2 ** 80))}"]
        runs.append({"id": f"{draw(st.integers(0, 2 ** 64)):032x}"[:32], "metrics": metrics,
                     "mutation": mutation, "params": draw(st.dictionaries(
                         st.sampled_from(["lr", "opt", "n"]),
                         st.sampled_from(["0.1", "adam", "4", "True", "-0.5", "1e999"]), max_size=2))})
    return runs


def write_ml_run(experiment: Path, run: dict) -> tuple[str, dict | None]:
    """Write one run as its mutation says: (its key, expected points or None when skipped)."""
    mutation, metrics = run["mutation"], run["metrics"]
    folder_name = None
    if mutation == "not_utf8_folder":
        folder_name = run["id"][:20].encode() + b"\xfe\xff"
    folder = write_mlflow_run(experiment, run["id"], metrics, params=run["params"],
                              start=10 ** 25 if mutation == "future_start" else 1_700_000_000_000,
                              folder_name=folder_name)
    key = next(iter(metrics), None)
    if mutation == "fifo":
        os.unlink(folder / "metrics" / key)
        os.mkfifo(folder / "metrics" / key)
    elif mutation == "not_utf8_line":
        with open(folder / "metrics" / key, "ab") as f:
            f.write(b"1700000000000 0.5 0 \xe9t\xe9\n")
    expected = {k: metric_points(lines) for k, lines in metrics.items()} if mutation in ML_OK else None
    return (os.fsdecode(folder_name) if folder_name else run["id"]), expected


def test_hostile_mlflow_stores(root, tmp_path):
    pytest.importorskip("mlflow")
    counter, seen = itertools.count(), set()

    def check(experiments, broken_experiment):
        store = tmp_path / f"mlruns{next(counter)}"
        expected = {}
        for n, runs in enumerate(experiments, start=1):
            folder = write_experiment(store, str(n), f"exp{n}")
            for i, run in enumerate(runs):
                run["id"] = f"{n:x}{i:x}{run['id'][2:]}"          # unique in the store, as MLflow's
                key, points = write_ml_run(folder, run)
                expected[key] = points
                seen.add(run["mutation"])
        if broken_experiment:
            (store / "99").mkdir()
            os.mkfifo(store / "99" / "meta.yaml")
        with time_limit("the import", HANG):
            result = importers.mlflow(store, "ml", dir=root)
        experiments_skipped = [u for u in result.unreadable if u["kind"] == "experiment"]
        assert [u["key"] for u in experiments_skipped] == (["99"] if broken_experiment else [])
        result.unreadable = [u for u in result.unreadable if u["kind"] == "run"]
        check_import(result, root, "ml", expected, {})

    budget(0.25)(given(experiments=st.lists(ml_runs(), min_size=1, max_size=2),
                       broken_experiment=st.booleans())(check))()
    for kind in covering(ML_MUTATIONS, seen):
        settings(budget(0.25), max_examples=1)(given(experiments=st.lists(ml_runs([kind]), min_size=1,
                                                                          max_size=1),
                                                     broken_experiment=st.just(False))(check))()
    assert set(ML_MUTATIONS) <= seen, seen
