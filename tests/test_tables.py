"""nb.runs and nb.history on runs written by the real API: the run table's rows and columns,
the history's every point (from data.parquet, from the logs of a running run, by rank and key),
and what bad arguments say."""
from __future__ import annotations

import datetime as dt
import json
import sys

import pyarrow as pa
import pytest
from helpers import QUIET, run_child

import nuboard as nb
from nuboard.catalog.query import QuerySyntaxError
from nuboard.errors import InvalidArgumentError, InvalidTypeError, MissingExtraError
from nuboard.files import layout
from nuboard.tables import HISTORY_SCHEMA, RUN_SCHEMA, ProjectNotFoundError
from nuboard.tables.history import run_points

LOSS = {"train/loss": [(0, 2.0), (1, 0.5), (2, 1.0)], "val/acc": [(0, 0.25), (5, 0.75)]}


def doc(path) -> dict:
    return json.loads((path / layout.RUN_JSON).read_text())


def utc(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))


@pytest.fixture
def three(make_run):
    """Three finished runs of 'llm', oldest first: (paths)."""
    return [
        make_run("llm", points=LOSS, run_name="base", tags=["baseline", "b"], group="g1",
                 config={"optimizer": {"name": "adam", "lr": 1e-3}, "seed": 1}),
        make_run("llm", points={"train/loss": [(0, 3.0), (1, 4.0)]}, run_name="wide",
                 config={"optimizer": {"name": "sgd", "lr": 0.1}, "seed": 2, "width": 512}),
        make_run("llm", run_name="empty", tags=["baseline"]),
    ]


# -- nb.runs ----------------------------------------------------------------------------------

def test_run_table_rows_and_columns_are_what_was_logged(root, three):
    table = nb.runs("llm").to_arrow()
    assert table.schema.names == RUN_SCHEMA.names + [
        "config.optimizer.lr", "config.optimizer.name", "config.seed", "config.width",
        "train/loss.last", "train/loss.min", "train/loss.max",
        "val/acc.last", "val/acc.min", "val/acc.max"]
    assert table.schema.field("created").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("tags").type == pa.list_(pa.string())
    assert [table.schema.field(c).type for c in ("config.optimizer.lr", "config.optimizer.name",
                                                  "config.seed", "config.width")] == \
        [pa.float64(), pa.string(), pa.int64(), pa.int64()]
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == [p.name for p in reversed(three)]           # newest first
    empty, wide, base = rows
    assert (base["project"], base["name"], base["status"], base["group"], base["tags"]) == \
        ("llm", "base", "finished", "g1", ["b", "baseline"])
    assert (base["config.optimizer.lr"], base["config.optimizer.name"], base["config.seed"],
            base["config.width"]) == (1e-3, "adam", 1, None)
    assert (base["train/loss.last"], base["train/loss.min"], base["train/loss.max"]) == (1.0, 0.5, 2.0)
    assert (base["val/acc.last"], base["val/acc.min"], base["val/acc.max"]) == (0.75, 0.25, 0.75)
    assert (wide["train/loss.last"], wide["train/loss.min"], wide["train/loss.max"]) == (4.0, 3.0, 4.0)
    assert wide["val/acc.last"] is None and wide["config.width"] == 512 and wide["group"] is None
    assert empty["train/loss.last"] is None and empty["config.seed"] is None
    d = doc(three[0])
    assert base["created"] == utc(d["start_time"]) and base["ended"] == utc(d["end_time"])
    assert base["duration"] == pytest.approx((utc(d["end_time"]) - utc(d["start_time"])).total_seconds())


def test_records_are_a_sequence_with_the_row_values(root, three):
    found = nb.runs("llm")
    assert len(found) == 3
    assert [r.name for r in found] == ["empty", "wide", "base"]
    assert [r.name for r in found[1:]] == ["wide", "base"] and found[-1].name == "base"
    base = found[2]
    assert base.config == {"optimizer.lr": 1e-3, "optimizer.name": "adam", "seed": 1}
    assert base.scalars == {"train/loss": {"last": 1.0, "min": 0.5, "max": 2.0},
                            "val/acc": {"last": 0.75, "min": 0.25, "max": 0.75}}
    assert found[0].scalars == {} and found[0].config == {}
    assert base.path.resolve() == three[0].resolve() and base.tags == ["b", "baseline"]
    assert isinstance(base.created, dt.datetime) and base.created.tzinfo is not None
    assert "base" in repr(base) and base.id in repr(base)
    text = repr(found)
    assert "3 runs" in text and all(p.name in text for p in three)
    with pytest.raises(IndexError):
        found[3]


def test_a_query_selects_the_runs(root, three):
    assert {r.name for r in nb.runs("llm", "tag:baseline")} == {"base", "empty"}
    assert [r.name for r in nb.runs("llm", query="optimizer.lr>=0.01")] == ["wide"]
    assert [r.name for r in nb.runs("llm", query="min(train/loss)<1")] == ["base"]
    assert "query='tag:baseline'" in repr(nb.runs("llm", "tag:baseline"))
    none = nb.runs("llm", "tag:nothing")
    assert len(none) == 0 and list(none) == [] and "0 runs" in repr(none)
    assert none.to_arrow().schema.names == RUN_SCHEMA.names


def test_config_columns_are_typed_per_column(root, make_run):
    configs = [{"i": 1, "f": 1, "b": True, "s": "x", "mixed": 1, "lst": [1, 2], "none": None,
                "big": 2 ** 70, "sometimes": None},
               {"i": -5, "f": 2.5, "b": False, "s": "y", "mixed": "one", "lst": [], "none": None,
                "big": 1, "sometimes": 3}]
    for config in configs:
        make_run("types", config=config)
    table = nb.runs("types").to_arrow()
    types = {name[len("config."):]: table.schema.field(name).type
             for name in table.schema.names if name.startswith("config.")}
    assert types == {"b": pa.bool_(), "big": pa.string(), "f": pa.float64(), "i": pa.int64(),
                     "lst": pa.string(), "mixed": pa.string(), "none": pa.null(), "s": pa.string(),
                     "sometimes": pa.int64()}
    newest, oldest = table.to_pylist()
    assert (oldest["config.i"], oldest["config.f"], oldest["config.b"], oldest["config.mixed"],
            oldest["config.lst"], oldest["config.big"], oldest["config.sometimes"]) == \
        (1, 1.0, True, "1", "[1, 2]", str(2 ** 70), None)
    assert (newest["config.i"], newest["config.mixed"], newest["config.lst"], newest["config.big"]) == \
        (-5, "one", "[]", "1")
    record = nb.runs("types")[1]
    assert record.config["lst"] == [1, 2] and record.config["b"] is True
    assert record.config["none"] is None and record.config["sometimes"] is None


def test_a_running_run_is_running_with_its_duration_so_far(root):
    run = nb.init("live", dir=root, **QUIET)
    try:
        run.add_scalar("train/loss", 1.5, step=0)
        run.flush()
        [row] = nb.runs("live").to_arrow().to_pylist()
        assert row["status"] == "running" and row["ended"] is None
        assert row["duration"] is not None and row["duration"] >= 0
        assert row["train/loss.last"] == 1.5
    finally:
        run.finish()
    assert nb.runs("live")[0].status == "finished"


def test_to_pandas_gives_one_row_a_run(root, three):
    pd = pytest.importorskip("pandas")
    df = nb.runs("llm").to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df["name"]) == ["empty", "wide", "base"]
    assert df["train/loss.min"].iloc[2] == 0.5 and str(df["created"].dtype).startswith("datetime64")


def test_to_pandas_without_pandas_is_one_line(root, three, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)       # import pandas raises ImportError
    with pytest.raises(MissingExtraError) as err:
        nb.runs("llm").to_pandas()
    assert "pip install 'nuboard[pandas]'" in str(err.value) and "\n" not in str(err.value)


# -- nb.history -------------------------------------------------------------------------------

def points(table: pa.Table) -> dict:
    """{(run_id, rank, key): [(step, value), ...]} of a history table."""
    out: dict = {}
    for r in table.to_pylist():
        out.setdefault((r["run_id"], r["rank"], r["key"]), []).append((r["step"], r["value"]))
    return out


def test_history_has_every_point_of_finished_runs_from_data_parquet(root, three):
    base, wide, _ = three
    table = nb.history("llm")
    assert table.schema == HISTORY_SCHEMA
    assert points(table) == {(base.name, 0, "train/loss"): LOSS["train/loss"],
                             (base.name, 0, "val/acc"): LOSS["val/acc"],
                             (wide.name, 0, "train/loss"): [(0, 3.0), (1, 4.0)]}
    assert set(table.column("project").to_pylist()) == {"llm"}
    assert table.column("run_id").to_pylist()[0] == wide.name                  # newest first
    walls = nb.read_scalars(base)["train/loss"].wall_times
    assert table.filter(pa.compute.equal(table["run_id"], base.name)).column("wall_time").to_pylist()[:3] \
        == list(walls)
    # the finished runs' points came from data.parquet, the read that does not touch the logs
    from nuboard.tables.history import _parquet_points
    assert (base / layout.PARQUET).is_file()
    assert len(_parquet_points(base, 0, None, {}).keys) == 5


def test_history_of_a_running_run_is_read_from_its_logs(root, make_run):
    make_run("live", points={"train/loss": [(0, 9.0)]})
    run = nb.init("live", dir=root, **QUIET)
    try:
        for step in range(4):
            run.add_scalar("train/loss", step / 2, step=step)
        run.flush()
        assert not (run.path / layout.PARQUET).exists()
        table = nb.history("live", keys="train/loss", query="status:running")
        assert points(table) == {(run.id, 0, "train/loss"): [(s, s / 2) for s in range(4)]}
    finally:
        run.finish()


def test_history_keys_take_names_and_globs(root, three):
    base = three[0].name
    assert set(k for _, _, k in points(nb.history("llm", keys=["val/acc"]))) == {"val/acc"}
    assert set(points(nb.history("llm", keys="val/*"))) == {(base, 0, "val/acc")}
    assert len(points(nb.history("llm", keys=["train/*", "val/acc"]))) == 3
    assert len(points(nb.history("llm", keys=("v?l/acc",)))) == 1
    assert nb.history("llm", keys=[]).num_rows == 0
    assert nb.history("llm", keys=["nope", "Train/*"]).num_rows == 0       # globs keep case
    only = nb.history("llm", keys=["train/loss"], query="name:wide")
    assert points(only) == {(three[1].name, 0, "train/loss"): [(0, 3.0), (1, 4.0)]}


def test_history_takes_the_rank_asked_for(root, monkeypatch):
    run_id = "20261201T0000-abcdef07"
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        with nb.init("dist", dir=root, run_id=run_id, resume="auto" if rank else None, **QUIET) as run:
            run.add_scalar("train/loss", 1.0 + rank, step=0)
            run.add_scalar("train/loss", 5.0 + rank, step=1)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert points(nb.history("dist")) == {(run_id, 0, "train/loss"): [(0, 1.0), (1, 5.0)]}
    assert points(nb.history("dist", rank=1)) == {(run_id, 1, "train/loss"): [(0, 2.0), (1, 6.0)]}
    assert nb.history("dist", rank=2).num_rows == 0
    # rank 0 from data.parquet, rank 1 from its logs: both the same as read_scalars
    path = layout.run_dir(root, "dist", run_id)
    for rank in (0, 1):
        chunk = run_points(path, rank)
        assert chunk.columns[2].to_pylist() == list(nb.read_scalars(path, rank=rank)["train/loss"].values)


def test_history_of_no_runs_has_the_columns(root, three):
    table = nb.history("llm", query="tag:nothing")
    assert table.num_rows == 0 and table.schema == HISTORY_SCHEMA


# -- bad arguments, and import nuboard -------------------------------------------------------

def test_bad_arguments_say_what_is_wrong(root, three):
    with pytest.raises(ProjectNotFoundError, match="'nope' not found"):
        nb.runs("nope")
    with pytest.raises(ProjectNotFoundError, match="does not exist"):
        nb.history("llm", dir=root / "elsewhere")
    with pytest.raises(QuerySyntaxError):
        nb.runs("llm", query="lr>")
    with pytest.raises(QuerySyntaxError):
        nb.history("llm", query="(tag:a")
    with pytest.raises(InvalidTypeError, match="query must be a str"):
        nb.runs("llm", query=3)
    with pytest.raises(InvalidTypeError, match="keys"):
        nb.history("llm", keys=5)
    with pytest.raises(InvalidTypeError, match="keys entry"):
        nb.history("llm", keys=["a", 2])
    with pytest.raises(InvalidTypeError, match="rank must be an int"):
        nb.history("llm", rank=True)
    with pytest.raises(InvalidArgumentError, match="negative"):
        nb.history("llm", rank=-1)
    with pytest.raises(nb.InvalidNameError):
        nb.runs("")


def test_import_nuboard_stays_light_and_exposes_both(root):
    out = run_child("""
        import json, sys
        import nuboard as nb
        heavy = [m for m in ("sqlalchemy", "flask", "rich", "pyarrow", "pandas", "nuboard.tables")
                 if m in sys.modules]
        print(json.dumps([heavy, "runs" in nb.__all__, "history" in nb.__all__,
                          callable(nb.runs), callable(nb.history)]))
    """)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], True, True, True, True]
