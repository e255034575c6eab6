"""nb.init and the Run: folders, ids, run.json, config forms, logging rules, bad input."""
from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
import os
import re
import sys
from pathlib import Path

import pytest
from helpers import QUIET

import nuboard as nb


def read_doc(run) -> dict:
    return json.loads((Path(run.path) / "run.json").read_text())


def test_spec_example_runs_as_written(root, tmp_path, monkeypatch):
    """The example of spec/init.md runs as written, from the working directory."""
    monkeypatch.delenv("NUBOARD_DIR")
    monkeypatch.chdir(tmp_path)

    @dataclasses.dataclass
    class Config:
        lr: float = 3e-4
        batch_size: int = 64
        layers: int = 4

    with nb.init("api-tour", run_name="init", config=Config(), tags=["docs"]) as run:
        assert re.fullmatch(r"\d{8}T\d{4}-[0-9a-f]{8}", run.id)
        assert Path(run.path) == Path("experiments") / "api-tour" / "runs" / run.id
    doc = json.loads((tmp_path / run.path / "run.json").read_text())
    assert doc["config"] == {"lr": 3e-4, "batch_size": 64, "layers": 4}
    assert doc["name"] == "init" and doc["tags"] == ["docs"] and doc["status"] == "finished"


def test_defaults_dir_and_nesting(root, tmp_path):
    """project defaults to 'default', dir to $NUBOARD_DIR, and '/' nests projects."""
    run = nb.init()
    assert Path(run.path).parent == root / "default" / "runs"
    assert run.name == "run"
    run.finish()
    run = nb.init("team/llm", dir=tmp_path / "other")
    assert Path(run.path).parent == tmp_path / "other" / "team" / "llm" / "runs"
    run.finish()


def test_run_json_records_what_the_spec_lists(root):
    """run.json holds config, name, tags, notes, group, host, Python, platform, times, status, prefixes."""
    run = nb.init("p", run_name="r1", config={"model": {"width": 512}}, tags=["a", "b", "a"],
                  notes="first try", group="sweep-1")
    doc = read_doc(run)
    assert doc["format"] == 1
    assert doc["config"] == {"model": {"width": 512}}
    assert doc["tags"] == ["a", "b"]
    assert (doc["notes"], doc["group"], doc["status"]) == ("first try", "sweep-1", "running")
    assert doc["host"] == os.uname().nodename and doc["python"].count(".") == 2
    assert doc["platform"] and doc["start_time"].endswith("Z") and doc["end_time"] is None
    assert doc["prefixes"] == {"system": "system", "timing": "timing"}
    run.finish()
    doc = read_doc(run)
    assert doc["status"] == "finished" and doc["end_time"] >= doc["start_time"]


def test_config_forms(root):
    """dict, dataclass (nested), Namespace, to_dict() objects and OmegaConf-free values all store."""
    @dataclasses.dataclass
    class Inner:
        width: int = 8

    @dataclasses.dataclass
    class Outer:
        inner: Inner = dataclasses.field(default_factory=Inner)
        path: Path = Path("/data/x")

    class Color(enum.Enum):
        RED = 1

    class HasToDict:
        def to_dict(self):
            return {"k": (1, 2), "color": Color.RED, "nan": math.nan, "inf": -math.inf}

    cases = [
        (Outer(), {"inner": {"width": 8}, "path": "/data/x"}),
        (argparse.Namespace(lr=0.1, name="x"), {"lr": 0.1, "name": "x"}),
        (HasToDict(), {"k": [1, 2], "color": "Color.RED", "nan": "nan", "inf": "-inf"}),
    ]
    for config, expected in cases:
        run = nb.init("cfg", config=config)
        assert read_doc(run)["config"] == expected
        assert run.config == expected
        run.finish()


def test_config_that_cannot_be_one_raises_type_error(root):
    """An object that is no config raises TypeError naming its type; nothing is created."""
    with pytest.raises(TypeError, match="int"):
        nb.init("cfg", config=42)
    with pytest.raises(TypeError, match="object"):
        nb.init("cfg", config=object())
    assert not (root / "cfg").exists()


@pytest.mark.parametrize("kwargs, match", [
    ({"project": ""}, "empty"),
    ({"project": ".."}, "relative"),
    ({"project": "a//b"}, "empty segment"),
    ({"project": "/abs"}, "empty segment"),
    ({"project": ".hidden"}, "dot"),
    ({"project": "x" * 129}, "too long"),
    ({"run_id": "a/b"}, "'/'"),
    ({"run_id": ".."}, "relative"),
    ({"run_id": ".x"}, "dot"),
    ({"run_id": "a\nb"}, "control"),
    ({"run_id": "x" * 129}, "too long"),
    ({"run_id": ""}, "empty"),
    ({"project": " llm"}, "project ' llm' has spaces at its ends"),
    ({"project": "team/llm\u3000"}, "segment 'llm\\u3000' has spaces at its ends"),
    ({"run_id": "run "}, "run_id 'run ' has spaces at its ends"),
    ({"run_id": "report\u202etxt.exe"}, "'report\\u202etxt.exe' has a bidirectional-formatting character (U+202E)"),
    ({"project": "a\u2066b"}, "(U+2066)"),
    ({"project": "team/\u200fllm"}, "(U+200F)"),
    ({"run_id": "x\u061c"}, "(U+061C)"),
    ({"resume": "maybe"}, "maybe"),
    ({"flush_interval": 0}, "positive"),
    ({"heartbeat_interval": -1.0}, "positive"),
    ({"system_interval": math.inf}, "finite"),
    ({"system_metrics": ["disk"]}, "disk"),
    ({"system_devices": "tpu"}, "tpu"),
    ({"system_devices": "cpu"}, "cpu"),
    ({"system_devices": "mps"}, "macOS"),
    ({"system_prefix": "a/b"}, "a/b"),
    ({"timing_prefix": ""}, "one segment"),
    ({"system_prefix": "same", "timing_prefix": "same"}, "differ"),
    ({"tags": ["ok", ""]}, "tag"),
    ({"fork_from": ("nope", 3)}, "nope"),
    ({"fork_from": ("x", -1)}, "-1"),
    ({"fork_from": ("x", 2**70)}, "step 1180591620717411303424 must be between 0 and 2**63-1"),
    ({"fork_from": ("x", 2**63)}, "9223372036854775808 must be between 0 and 2**63-1"),
    ({"resume": "must"}, "run_id"),
    ({"run_name": "a\x00b"}, "control"),
])
def test_bad_arguments_raise_value_error_naming_the_value(root, kwargs, match):
    """Each bad value raises ValueError whose message names it; nothing is written."""
    with pytest.raises(ValueError, match=re.escape(match)):
        nb.init(**{"project": "p", **kwargs})
    assert not (root / "p" / "runs").exists() or not any((root / "p" / "runs").iterdir())


@pytest.mark.parametrize("kwargs, match", [
    ({"project": 3}, "int"),
    ({"run_id": 5}, "int"),
    ({"tags": "baseline"}, "list of str"),
    ({"tags": [1]}, "str"),
    ({"compact": "yes"}, "True or False"),
    ({"flush_interval": "1"}, "seconds"),
    ({"fork_from": "run"}, "pair"),
    ({"system_metrics": "gpu"}, "list of groups"),
    ({"dir": 3}, "path"),
    ({"notes": 1}, "str"),
])
def test_bad_types_raise_type_error(root, kwargs, match):
    """A value of the wrong type raises TypeError naming what was expected."""
    with pytest.raises(TypeError, match=re.escape(match)):
        nb.init(**{"project": "p", **kwargs})


def test_a_dir_that_is_a_file_is_refused_before_anything_is_written(root, tmp_path):
    """dir= a file, or under one (or a file where a project folder goes): ValueError naming it."""
    afile = tmp_path / "passwd"
    afile.write_text("root:x:0:0\n")
    for where, says in ((afile, f"dir {str(afile)!r} is a file, not a folder"),
                        (afile / "sub", f"dir {str(afile / 'sub')!r} cannot be a folder: "
                                        f"{str(afile)!r} is a file"),
                        (afile / "sub" / "deeper", f"{str(afile)!r} is a file")):
        with pytest.raises(nb.NuBoardError, match=re.escape(says)) as caught:
            nb.init("p", dir=where, **QUIET)
        assert isinstance(caught.value, ValueError)
    root.mkdir()
    (root / "team").write_text("")
    with pytest.raises(ValueError, match=re.escape(
            f"project 'team/llm' cannot be made under dir {str(root)!r}: "
            f"{str(root / 'team')!r} is a file")):
        nb.init("team/llm", **QUIET)
    assert afile.read_text() == "root:x:0:0\n" and sorted(os.listdir(root)) == ["team"]


def test_a_root_that_cannot_be_written_is_one_nuboard_error(root):
    """A run folder that cannot be made (here under /sys) is a NuBoardError naming the path."""
    where = Path("/sys/nuboard-test-root")
    if not Path("/sys").is_dir() or where.exists():
        pytest.skip("needs Linux's /sys, where no folder can be created")
    for kwargs in ({}, {"run_id": "fixed"}):
        with pytest.raises(nb.RunFolderError) as caught:
            nb.init("p", dir=where, **QUIET, **kwargs)
        assert isinstance(caught.value, nb.NuBoardError) and isinstance(caught.value, OSError)
        assert "cannot create the run folder" in str(caught.value)
        assert f"run folder '{where / 'p' / 'runs'}" in str(caught.value)
        assert isinstance(caught.value.__cause__, OSError)
    assert not where.exists()


def test_cuda_device_needs_nvidia_smi(root, monkeypatch, tmp_path):
    """Tracking cuda:0 without nvidia-smi on the PATH is refused at init."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ValueError, match="nvidia-smi") as caught:
        nb.init("p", system_devices="cuda:0")
    assert ("mps" in str(caught.value)) == (sys.platform == "darwin")    # MPS only on macOS
    with pytest.raises(ValueError, match="cannot be tracked") as caught:
        nb.init("p", system_devices="tpu")
    assert ("mps" in str(caught.value)) == (sys.platform == "darwin")


def test_existing_run_id_without_resume_is_refused(root):
    """Starting a new run with a taken run_id fails and leaves the old run untouched."""
    run = nb.init("p", run_id="fixed")
    run.add_scalar("x", 1.0, step=0)
    run.finish()
    before = (Path(run.path) / "run.json").read_bytes()
    with pytest.raises(ValueError, match="already exists"):
        nb.init("p", run_id="fixed")
    assert (Path(run.path) / "run.json").read_bytes() == before
    assert [p.name for p in Path(run.path).glob("events.*")] == ["events.r0.s0.log"]


def test_scalar_names_and_values(root):
    """Names are '/'-segments outside the reserved prefixes; values must be real numbers."""
    run = nb.init("p", timing_prefix="perf")
    for bad in ["", "a//b", "/a", "a/", "system/cpu", "perf/step", "x" * 257, "a\tb"]:
        with pytest.raises(ValueError):
            run.add_scalar(bad, 1.0)
    run.add_scalar("timing/ok", 1.0)          # 'timing' is free once the prefix is 'perf'
    for bad in ["1.5", b"1", None, [1, 2], 1 + 2j, object()]:
        with pytest.raises(TypeError, match="real number"):
            run.add_scalar("loss", bad)
    with pytest.raises(TypeError, match="int"):
        run.add_scalar("loss", 1.0, step=1.5)
    with pytest.raises(ValueError, match="between 0"):
        run.add_scalar("loss", 1.0, step=-1)
    with pytest.raises(TypeError):
        run.log([("loss", 1.0)])
    run.add_scalar("loss", True)
    run.add_scalar("loss", math.nan)
    run.add_scalar("loss", math.inf)
    run.add_scalar("loss", -math.inf)
    run.finish()
    values = nb.read_scalars(run.path)["loss"].values
    assert values[0] == 1.0 and math.isnan(values[1]) and values[2:] .tolist() == [math.inf, -math.inf]


def test_numpy_scalars_and_one_element_arrays(root):
    """numpy scalars and one-element arrays log; a two-element array is a TypeError."""
    np = pytest.importorskip("numpy")
    run = nb.init("p")
    run.add_scalar("a", np.float32(0.5), step=np.int64(3))
    run.add_scalar("a", np.array([2.0]))
    with pytest.raises(TypeError, match="one element"):
        run.add_scalar("a", np.array([1.0, 2.0]))
    run.finish()
    s = nb.read_scalars(run.path)["a"]
    assert s.steps.tolist() == [3, 4] and s.values.tolist() == [0.5, 2.0]


def test_step_none_rule(root):
    """step=None is one past the scalar's last step; log() puts a dict on one shared step."""
    run = nb.init("p", system_metrics=False)
    run.add_scalar("a", 1.0)                 # 0
    run.add_scalar("a", 1.0)                 # 1
    run.add_scalar("b", 1.0, step=10)
    run.add_scalar("b", 1.0)                 # 11
    run.log({"a": 2.0, "c": 3.0})            # max(1, -1) + 1 = 2
    run.log({"b": 1.0, "a": 1.0})            # max(11, 2) + 1 = 12
    run.log({"d": 1.0}, step=7)
    assert run.step == 7
    run.finish()
    got = {k: v.steps.tolist() for k, v in nb.read_scalars(run.path).items()}
    assert got == {"a": [0, 1, 2, 12], "b": [10, 11, 12], "c": [2], "d": [7]}


def test_wall_time_given_or_now(root):
    """wall_time defaults to the current time and keeps what the caller passes."""
    import time
    run = nb.init("p")
    t0 = time.time()
    run.add_scalar("a", 1.0)
    run.add_scalar("a", 1.0, wall_time=123.5)
    with pytest.raises(TypeError, match="wall_time"):
        run.add_scalar("a", 1.0, wall_time="noon")
    run.finish()
    walls = nb.read_scalars(run.path)["a"].wall_times
    assert t0 <= walls[0] <= time.time() and walls[1] == 123.5


def test_context_manager_marks_crashed_and_propagates(root):
    """An exception in the with block marks the run crashed and still propagates."""
    with pytest.raises(KeyError):
        with nb.init("p") as run:
            run.add_scalar("a", 1.0)
            raise KeyError("boom")
    assert read_doc(run)["status"] == "crashed"
    assert nb.read_scalars(run.path)["a"].values.tolist() == [1.0]


def test_logging_after_finish_raises(root):
    """A finished run refuses more points with a clear error; finish() twice is harmless."""
    run = nb.init("p")
    run.finish()
    run.finish()
    with pytest.raises(RuntimeError, match="finished"):
        run.add_scalar("a", 1.0)
    with pytest.raises(ValueError, match="status"):
        nb.init("p").finish("done")


def test_flush_writes_without_finishing(root):
    """flush() writes buffered points now, readable while the run goes on."""
    run = nb.init("p", flush_interval=3600)
    run.add_scalar("a", 1.0)
    run.flush()
    assert nb.read_scalars(run.path)["a"].values.tolist() == [1.0]
    run.finish()


def test_omegaconf_config_is_kept_nested(root):
    """An OmegaConf config is stored as its resolved, nested container."""
    from omegaconf import OmegaConf
    cfg = OmegaConf.create({"model": {"width": 512, "depth": "${model.width}"}, "lr": 0.1})
    run = nb.init("p", config=cfg)
    assert read_doc(run)["config"] == {"model": {"width": 512, "depth": 512}, "lr": 0.1}
    run.finish()


def test_plain_config_imports_no_omegaconf(root):
    """A dict or dataclass config never imports omegaconf (or anything heavy)."""
    from helpers import run_child
    out = run_child("""
        import sys, dataclasses, nuboard as nb
        @dataclasses.dataclass
        class C:
            lr: float = 0.1
        nb.init("p", config=C(), compact=False).finish()
        nb.init("p", config={"a": 1}, compact=False).finish()
        heavy = [m for m in ("omegaconf", "numpy", "torch", "pyarrow", "flask", "sqlalchemy")
                 if m in sys.modules]
        print(heavy)
    """, NUBOARD_DIR=str(root))
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_config_enums_and_huge_ints_store_readably(root):
    """IntEnum and str enums read as 'Class.NAME'; an int too big for JSON readers is text."""
    class Mode(str, enum.Enum):
        FAST = "fast"

    class Level(enum.IntEnum):
        HIGH = 3

    run = nb.init("p", config={"mode": Mode.FAST, "level": Level.HIGH, "big": 10 ** 30,
                               "huge": 10 ** 5000})
    doc = read_doc(run)["config"]
    assert doc == run.config
    assert doc["mode"] == "Mode.FAST" and doc["level"] == "Level.HIGH"
    assert doc["big"] == str(10 ** 30) and doc["huge"].startswith("<int of ")
    run.finish()
