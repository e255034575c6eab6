"""Issue 30, item 9: the smaller promises of the spec, each as a user would notice it.

- $NUBOARD_CACHE_DIR is where the catalog lives when it is set (else in the project's
  .nuboard, or under ~/.cache/nuboard where the project folder cannot hold it);
- system/torch/cuda_* are the current device's, not a sum over devices;
- run_name="" and system_devices=[] are refused, not turned into "run" and no GPU;
- Artifact.files is absolute;
- a script that never calls finish() gets its data.parquet at exit;
- an artifact whose versions are all unlinked names the command that restores one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import QUIET, QUIET_ARGS, REPO, cli, run_child, write_run
from helpers_http import RemoteViewer

import nuboard as nb
from nuboard.artifacts import unlink_version
from nuboard.catalog.project_catalog import Catalog
from nuboard.errors import InvalidArgumentError


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def catalogs_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("catalog.sqlite")) if folder.exists() else []


# -- NUBOARD_CACHE_DIR ----------------------------------------------------------------------------

def test_the_viewer_keeps_its_catalog_under_nuboard_cache_dir_when_it_is_set(root, tmp_path,
                                                                            monkeypatch):
    """A real `nuboard up` and `nuboard ls`: the catalog is in the cache folder the user set,
    found again by the next command, and the project folder holds only what the runs wrote."""
    write_run(root, "llm", run_name="first", points={"loss": [(0, 1.0)]})
    cache = tmp_path / "my-cache"
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(cache))
    project_before = files_under(root / "llm")
    with RemoteViewer(root, project="llm") as viewer:
        page = viewer.get("/api/p/llm/runs")
        assert page.status == 200 and "first" in page.text
    made = catalogs_under(cache)
    assert len(made) == 1 and made[0].parent.name.startswith("llm-")
    assert files_under(root / "llm") == project_before        # no .nuboard in the project
    listed = cli(root, "ls", "llm")
    assert listed.returncode == 0 and "first" in listed.stdout
    assert catalogs_under(cache) == made                       # the same catalog, found again
    assert not (root / "llm" / ".nuboard").exists()


def test_without_nuboard_cache_dir_the_catalog_stays_in_the_project(root, tmp_path, monkeypatch):
    write_run(root, "llm", points={"loss": [(0, 1.0)]})
    monkeypatch.delenv("NUBOARD_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with Catalog(root, "llm") as catalog:
        assert catalog.path == root / "llm" / ".nuboard" / "catalog.sqlite"
        assert catalog.moved_because is None
    assert not (tmp_path / "home" / ".cache").exists()


# -- system/torch/cuda_* --------------------------------------------------------------------------

FAKE_CUDA = '''
"""A stand-in for torch.cuda on a machine with four GPUs (there is none here): the current
device is per thread, as CUDA's is, and every allocator question is recorded."""
import threading

asked = []
_here = threading.local()


def is_initialized():
    return True


def device_count():
    return 4


def current_device():
    return getattr(_here, "device", 0)


def set_device(device):
    _here.device = device


def memory_allocated(device=None):
    asked.append(device)
    return (device + 1) * 2**30          # cuda:i holds i+1 GiB


def max_memory_allocated(device=None):
    asked.append(device)
    return (device + 1) * 2**31
'''


@pytest.mark.parametrize("when", ["before init", "after init"])
def test_cuda_scalars_are_the_current_devices_not_a_sum(root, tmp_path, when):
    """The script trains on cuda:2 of four GPUs: the allocator scalars are cuda:2's (3 GiB),
    not the sum over the devices (10 GiB), nor the sampler thread's own default (cuda:0)."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("from . import cuda\n")
    (fake / "torch" / "cuda.py").write_text(FAKE_CUDA)
    before, after = ("torch.cuda.set_device(2)", "") if when == "before init" else \
        ("", "torch.cuda.set_device(2)")
    code = f"""
        import json, time
        import torch
        import nuboard as nb
        {before}
        run = nb.init("llm", dir={str(root)!r}, system_metrics=["gpu"], system_interval=0.1,
                      capture_console=False, capture_env=False)
        {after}
        run.add_scalar("loss", 1.0)
        seen = len(torch.cuda.asked) + 2          # a sample under way may have read before
        deadline = time.monotonic() + 60
        while len(torch.cuda.asked) < seen + 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        run.finish()
        print(json.dumps([str(run.path), torch.cuda.asked[seen:]]))
    """
    out = run_child(code, PYTHONPATH=f"{fake}{os.pathsep}{REPO}")
    path, asked = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(asked) >= 8 and set(asked) == {2}
    scalars = nb.read_scalars(path)
    allocated = scalars["system/torch/cuda_allocated_gb"].values
    assert allocated[-1] == 3.0 and scalars["system/torch/cuda_peak_gb"].values[-1] == 6.0
    assert 10.0 not in allocated


# -- refused arguments ---------------------------------------------------------------------------

@pytest.mark.parametrize("kw, value", [
    ({"run_name": ""}, "''"), ({"run_name": "   "}, "'   '"), ({"group": ""}, "''"),
    ({"system_devices": []}, "[]"), ({"system_devices": ()}, "()"),
])
def test_an_empty_run_name_group_or_device_list_is_refused(root, kw, value):
    with pytest.raises(InvalidArgumentError) as caught:
        nb.init("llm", dir=root, **{**QUIET, **kw})
    message = str(caught.value)
    assert message.startswith(f"{next(iter(kw))} {value}") and "\n" not in message
    assert not root.exists()                                   # nothing written


def test_a_run_name_with_text_and_no_name_still_work(root):
    with nb.init("llm", dir=root, run_name=" a ", **QUIET) as named:
        pass
    with nb.init("llm", dir=root, **QUIET) as unnamed:
        pass
    assert (named.name, unnamed.name) == (" a ", "run")


# -- Artifact.files -------------------------------------------------------------------------------

@pytest.mark.parametrize("reference", [False, True])
def test_artifact_files_is_absolute_under_a_relative_root(tmp_path, monkeypatch, reference):
    """A copy, and a reference inside the project (stored relative to it), under NUBOARD_DIR
    given as a relative path: the paths the Artifact gives work from any folder."""
    monkeypatch.chdir(tmp_path)
    where = Path("experiments/datasets/incoming") if reference else Path("outside")
    (where / "data").mkdir(parents=True)
    (where / "data" / "a.txt").write_text("a")
    (where / "weights.bin").write_bytes(b"w")
    monkeypatch.setenv("NUBOARD_DIR", "experiments")
    made = nb.add_artifact("datasets", "raw", where / "data", type="dataset", reference=reference)
    one = nb.add_artifact("datasets", "ckpt", where / "weights.bin", type="model",
                          reference=reference)
    assert made.manifest.get("base", "version") == ("project" if reference else "version")
    for artifact in (made, nb.get_artifact("datasets/raw:v1"), one,
                     nb.get_artifact("datasets/ckpt:v1")):
        assert artifact.files.is_absolute(), artifact.files
        for key in artifact:
            assert artifact[key].is_absolute() and artifact[key].is_file()
    assert made["a.txt"].read_text() == "a" and one["weights.bin"].read_bytes() == b"w"
    monkeypatch.chdir("/")                                     # still right from elsewhere
    assert made["a.txt"].read_text() == "a"


# -- data.parquet at exit -------------------------------------------------------------------------

@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_a_script_that_never_calls_finish_gets_its_data_parquet(root, ending):
    pytest.importorskip("pyarrow")
    code = f"""
        import nuboard as nb
        run = nb.init("llm", dir={str(root)!r}, {QUIET_ARGS})
        for step in range(100):
            run.add_scalar("loss", 1.0 / (step + 1), step=step)
        print(run.path, flush=True)
        {"raise RuntimeError('the script fails')" if ending == "raises" else ""}
    """
    out = run_child(code, check=False)
    assert out.returncode == (1 if ending == "raises" else 0), out.stderr
    assert "data.parquet" not in out.stderr and "atexit" not in out.stderr, out.stderr
    path = Path(out.stdout.strip().splitlines()[-1])
    assert (path / "data.parquet").is_file()
    doc = json.loads((path / "run.json").read_text())
    assert doc["status"] == ("crashed" if ending == "raises" else "finished")
    scalars = nb.read_scalars(path)
    assert list(scalars["loss"].steps) == list(range(100))


# -- the restore hint -----------------------------------------------------------------------------

def test_all_versions_unlinked_names_the_restore_command(root, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    for _ in range(2):
        nb.add_artifact("datasets", "raw", tmp_path / "a.txt", dir=root, type="dataset")
    unlink_version("datasets", "raw", 1, dir=root)
    unlink_version("datasets", "raw", 2, dir=root)
    with pytest.raises(nb.NuBoardError) as caught:
        nb.get_artifact("datasets/raw:latest", dir=root)
    message = str(caught.value)
    assert "'nuboard artifact restore datasets/raw:v2'" in message
    assert "restore_version" not in message
    shown = cli(root, "artifact", "show", "datasets/raw:latest")
    assert shown.returncode == 1 and "nuboard artifact restore datasets/raw:v2" in shown.stderr
    # the command it names works as written
    restored = cli(root, "artifact", "restore", "datasets/raw:v2")
    assert restored.returncode == 0, restored.stderr
    assert nb.get_artifact("datasets/raw:latest", dir=root).version == 2

