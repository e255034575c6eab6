"""What a run records of its environment, timers, system scalars and ranks, through nb.init."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import run_child, start_child

import nuboard as nb

FAKE_SMI = r"""#!/usr/bin/env python3
import sys, time
args = " ".join(sys.argv[1:])
if "{mode}" == "hang":
    time.sleep(60)
if "{mode}" == "fail":
    print("NVIDIA-SMI has failed", file=sys.stderr); sys.exit(9)
if "index,uuid,name,memory.total" in args:
    print("0, GPU-11111111-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3, 81559")
    print("1, GPU-22222222-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3, 81559")
else:
    print("0, 37, 1024, 81559, 45, 120.50")
    print("1, 80, 40960, 81559, 60, 300.25")
"""


def fake_tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def doc_of(run) -> dict:
    return json.loads((Path(run.path) / "run.json").read_text())


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org"))


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "code"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "train.py").write_text("print('hi')\n")
    git(path, "add", "train.py")
    git(path, "commit", "-q", "-m", "first")
    git(path, "remote", "add", "origin", "https://alice:s3cret@example.org/team/code.git")
    return path


def test_git_state_and_patch_of_code_dir(root, repo):
    """commit, branch, remote (without its password), dirty flag, and git diff HEAD as git.patch."""
    (repo / "train.py").write_text("print('changed')\n")
    run = nb.init("p", code_dir=repo, system_metrics=False)
    run.finish()
    g = doc_of(run)["env"]["git"]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert (g["commit"], g["branch"], g["dirty"]) == (head, "main", True)
    assert g["remote"] == "https://example.org/team/code.git"
    patch = (Path(run.path) / "files" / "git.patch").read_text()
    assert "-print('hi')" in patch and "+print('changed')" in patch


def test_clean_repo_has_no_patch_and_outside_a_repo_no_git(root, repo, tmp_path):
    """A clean tree records dirty=False and no patch; outside a repository git is left out."""
    run = nb.init("p", code_dir=repo, system_metrics=False)
    run.finish()
    assert doc_of(run)["env"]["git"]["dirty"] is False
    assert not (Path(run.path) / "files" / "git.patch").exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    run = nb.init("p", code_dir=plain, system_metrics=False)
    run.finish()
    assert "git" not in doc_of(run)["env"]


def test_default_code_dir_is_the_scripts_folder(root, repo, tmp_path):
    """Without code_dir, the running script's repository is recorded, whatever the cwd."""
    (repo / "train.py").write_text("import nuboard as nb\nnb.init('p', system_metrics=False).finish()\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    from helpers import child_env
    subprocess.run([sys.executable, str(repo / "train.py"), "--lr", "0.1"], cwd=elsewhere,
                   env=child_env(NUBOARD_DIR=str(root)), check=True, timeout=60)
    folder = next((root / "p" / "runs").iterdir())
    doc = json.loads((folder / "run.json").read_text())
    assert doc["env"]["git"]["root"] == str(repo.resolve())
    command = (folder / "files" / "command.txt").read_text()
    assert "train.py --lr 0.1" in command
    requirements = (folder / "files" / "requirements.txt").read_text().splitlines()
    assert any(line.startswith("pytest==") for line in requirements)
    assert requirements == sorted(requirements, key=lambda line: line.split("==")[0].lower())


def test_capture_env_false_records_nothing(root, repo):
    """capture_env=False leaves out git, packages, command and GPUs."""
    run = nb.init("p", code_dir=repo, capture_env=False, system_metrics=False)
    run.finish()
    assert "git" not in doc_of(run)["env"]
    assert not (Path(run.path) / "files" / "requirements.txt").exists()


def test_a_resume_that_captures_nothing_keeps_what_the_run_recorded(root, repo):
    """Resuming with capture_env=False keeps the git state the first session recorded."""
    first = nb.init("p", code_dir=repo, system_metrics=False)
    first.finish()
    recorded = doc_of(first)["env"]["git"]
    again = nb.init("p", run_id=first.id, resume="must", capture_env=False, system_metrics=False)
    again.finish()
    assert doc_of(again)["env"]["git"] == recorded
    assert len(doc_of(again)["sessions"]) == 2


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_hanging_git_and_nvidia_smi_hold_init_about_two_seconds(root, repo, tmp_path, monkeypatch):
    """A git and an nvidia-smi that hang cannot hold nb.init for more than about two seconds."""
    bin_dir = fake_tool(tmp_path / "bin", "git", "#!/bin/sh\nsleep 60\n")
    fake_tool(bin_dir, "nvidia-smi", FAKE_SMI.replace("{mode}", "hang"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    run = nb.init("p", code_dir=repo, system_metrics=False)
    elapsed = time.monotonic() - start
    run.finish()
    assert elapsed < 3.0, f"nb.init took {elapsed:.1f} s"
    env = doc_of(run)["env"]
    assert "git" not in env and "gpus" not in env


def test_gpus_recorded_as_the_script_sees_them(root, tmp_path, monkeypatch):
    """env.gpus names each visible GPU cuda:i, with its machine index, uuid, model and memory."""
    bin_dir = fake_tool(tmp_path / "bin", "nvidia-smi", FAKE_SMI.replace("{mode}", "ok"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    run = nb.init("p", system_metrics=False)
    run.finish()
    gpus = doc_of(run)["env"]["gpus"]
    assert len(gpus) == 1 and gpus[0]["device"] == "cuda:0" and gpus[0]["index"] == 1
    assert gpus[0]["uuid"].startswith("GPU-2222") and "H100" in gpus[0]["model"]
    with pytest.raises(ValueError, match="cuda:1"):
        nb.init("p", system_devices="cuda:1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-22222222-aaaa-bbbb-cccc-000000000000,"
                       "GPU-11111111-aaaa-bbbb-cccc-000000000000")        # cuda:1 is the machine's 0
    run = nb.init("p", system_devices=["cuda:1"], system_interval=0.05)
    deadline = time.time() + 10
    while time.time() < deadline:
        run.flush()
        names = set(nb.read_scalars(run.path))
        if "system/gpu1/util" in names:
            break
        time.sleep(0.05)
    run.finish()
    assert "system/gpu1/util" in names and "system/gpu0/util" not in names
    assert nb.read_scalars(run.path)["system/gpu1/util"].values[0] == 37.0


def test_system_scalars_land_in_the_run(root):
    """With a short system_interval the cpu and memory scalars appear, at the latest step."""
    run = nb.init("p", system_interval=0.05)
    run.add_scalar("train/loss", 1.0, step=41)
    deadline = time.time() + 10
    while time.time() < deadline:
        run.flush()
        names = set(nb.read_scalars(run.path))
        if {"system/cpu/percent", "system/memory/used_gb"} <= names:
            break
        time.sleep(0.05)
    run.finish()
    scalars = nb.read_scalars(run.path)
    for name in ("system/cpu/percent", "system/cpu/process_percent", "system/memory/used_gb",
                 "system/memory/percent", "system/memory/process_gb"):
        assert name in scalars, name
    assert scalars["system/memory/used_gb"].steps[-1] == 41


def test_system_metrics_choices(root, monkeypatch):
    """system_metrics=False logs none, ['memory'] only memory, and LOCAL_RANK 1 never samples."""
    def sampled(**kw):
        run = nb.init("p", system_interval=0.05, **kw)
        time.sleep(0.5)
        run.finish()
        return {n for n in nb.read_scalars(run.path, rank=run.rank) if n.startswith("system/")}

    assert sampled(system_metrics=False) == set()
    assert sampled(system_metrics=["memory"]) == {"system/memory/used_gb", "system/memory/percent",
                                                  "system/memory/process_gb"}
    assert sampled(system_prefix="sys", system_metrics=["cpu"]) == set()   # named sys/... now
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert sampled(run_id="two-ranks", resume="auto") == set()


def test_system_prefix_names_the_scalars(root):
    """system_prefix='sys' logs sys/cpu/percent and frees 'system' for the user's scalars."""
    run = nb.init("p", system_prefix="sys", system_metrics=["cpu"], system_interval=0.05)
    run.add_scalar("system/mine", 1.0)
    time.sleep(0.5)
    run.finish()
    names = set(nb.read_scalars(run.path))
    assert "sys/cpu/percent" in names and "system/mine" in names
    assert doc_of(run)["prefixes"]["system"] == "sys"


def test_no_torch_or_psutil_imported_by_sampling(root):
    """After a run with system metrics, sys.modules holds no torch, psutil or numpy."""
    out = run_child("""
        import sys, time, nuboard as nb
        run = nb.init("p", system_interval=0.05, compact=False)   # parquet would bring pyarrow
        run.add_scalar("a", 1.0)
        time.sleep(0.8)
        run.finish()
        print(sorted(m for m in ("torch", "psutil", "numpy") if m in sys.modules))
    """, NUBOARD_DIR=str(root))
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_timers(root, monkeypatch):
    """run.timer logs seconds under the timing prefix at the current step, as block or decorator."""
    run = nb.init("p", timing_prefix="perf", system_metrics=False)
    run.add_scalar("loss", 1.0, step=7)
    with run.timer("data"):
        time.sleep(0.02)

    @run.timer("step/forward")
    def forward(x):
        return x * 2

    assert forward(2) == 4 and forward(3) == 6
    with pytest.raises(ValueError):
        run.timer("a//b")
    run.finish()
    s = nb.read_scalars(run.path)
    assert s["perf/data"].steps.tolist() == [7] and 0.015 < s["perf/data"].values[0] < 1.0
    assert s["perf/step/forward"].steps.tolist() == [7, 7]      # timed twice in one step: two points


def test_timers_on_other_ranks(root, monkeypatch):
    """Timers log from rank 0 only, unless all_ranks or timing_all_ranks says otherwise."""
    nb.init("p", run_id="r", system_metrics=False).finish()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    run = nb.init("p", run_id="r", resume="auto", system_metrics=False)
    with run.timer("quiet"):
        pass
    with run.timer("loud", all_ranks=True):
        pass
    run.finish()
    assert set(nb.read_scalars(run.path, rank=1)) == {"timing/loud"}
    run = nb.init("p", run_id="r", resume="auto", system_metrics=False, timing_all_ranks=True)
    with run.timer("now"):
        pass
    run.finish()
    assert "timing/now" in nb.read_scalars(run.path, rank=1)


RANK_SCRIPT = """
import os, nuboard as nb
run = nb.init("ddp", flush_interval=0.05, system_metrics=False)
for step in range(5):
    run.add_scalar("loss", float(run.rank * 100 + step), step=step)
run.finish()
print(run.id)
"""


def launch_env(rank: int, world: int, port: str) -> dict:
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "TORCHELASTIC_RUN_ID": "job-1"}


def test_ranks_of_one_launch_share_a_run_without_run_id(root):
    """Ranks started with torchrun's variables and no run_id land in one run, rank 1 first."""
    later = start_child(RANK_SCRIPT, NUBOARD_DIR=str(root), **launch_env(1, 2, "29511"))
    time.sleep(0.5)                       # rank 1 waits for rank 0
    first = run_child(RANK_SCRIPT, NUBOARD_DIR=str(root), **launch_env(0, 2, "29511"))
    out, err = later.communicate(timeout=60)
    assert later.returncode == 0, err
    run_id = first.stdout.strip().splitlines()[-1]
    assert out.strip().splitlines()[-1] == run_id
    folder = root / "ddp" / "runs" / run_id
    assert sorted(p.name for p in folder.glob("events.*")) == ["events.r0.s0.log", "events.r1.s0.log"]
    assert nb.read_scalars(folder, rank=1)["loss"].values.tolist() == [100.0 + s for s in range(5)]
    doc = json.loads((folder / "run.json").read_text())
    assert doc["world_size"] == 2 and doc["env"]["launcher"] == "torchrun"
    # A restart of the same launch's workers (the agent says so) resumes that run.
    again = run_child(RANK_SCRIPT, NUBOARD_DIR=str(root), TORCHELASTIC_RESTART_COUNT="1",
                      **launch_env(0, 2, "29511"))
    assert again.stdout.strip().splitlines()[-1] == run_id
    assert (folder / "events.r0.s1.log").is_file()


def test_ranks_without_a_launcher_identity_must_pass_run_id(root):
    """RANK and WORLD_SIZE without any launcher identity: a clear error asking for run_id."""
    proc = run_child(RANK_SCRIPT, check=False, NUBOARD_DIR=str(root), RANK="1", WORLD_SIZE="2")
    assert proc.returncode == 1 and "pass the same run_id" in proc.stderr


def test_console_copy_through_init(root):
    """Prints of the script go to files/output.log; a resume appends after a session line."""
    code = """
        import nuboard as nb
        run = nb.init("p", run_id="c", resume="auto", system_metrics=False)
        print("hello from session", run.session)
        run.finish()
        print("after finish is not copied")
    """
    first = run_child(code, NUBOARD_DIR=str(root))
    assert "hello from session 0" in first.stdout
    run_child(code, NUBOARD_DIR=str(root))
    log = (root / "p" / "runs" / "c" / "files" / "output.log").read_text()
    assert log.startswith("hello from session 0\n")
    assert "[nuboard: session 1, " in log and log.rstrip().endswith("hello from session 1")
    assert "after finish" not in log


def test_crash_traceback_lands_in_the_console_copy(root):
    """The traceback of a crash is in output.log, and the run is crashed."""
    proc = run_child("""
        import nuboard as nb
        run = nb.init("p", run_id="boom", system_metrics=False)
        print("step 1")
        raise ValueError("loss is nan")
    """, check=False, NUBOARD_DIR=str(root))
    assert proc.returncode == 1
    folder = root / "p" / "runs" / "boom"
    log = (folder / "files" / "output.log").read_text()
    assert "Traceback" in log and "ValueError: loss is nan" in log
    assert json.loads((folder / "run.json").read_text())["status"] == "crashed"


def test_only_rank_zero_copies_the_console(root):
    """A rank other than 0 prints as usual, but nothing of it reaches files/output.log."""
    code = """
        import nuboard as nb
        run = nb.init("p", run_id="ranks", resume="auto", system_metrics=False)
        print("from rank", run.rank)
        run.finish()
    """
    run_child(code, NUBOARD_DIR=str(root))
    out = run_child(code, NUBOARD_DIR=str(root), RANK="1", WORLD_SIZE="2")
    assert "from rank 1" in out.stdout
    assert (root / "p" / "runs" / "ranks" / "files" / "output.log").read_text() == "from rank 0\n"


def test_torch_device_picks_the_gpu_to_track(root, tmp_path, monkeypatch):
    """system_devices=torch.device('cuda', 1) tracks cuda:1; torch.device('cpu') is refused."""
    torch = pytest.importorskip("torch")
    bin_dir = fake_tool(tmp_path / "bin", "nvidia-smi", FAKE_SMI.replace("{mode}", "ok"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(ValueError, match="'cpu'"):
        nb.init("p", system_devices=torch.device("cpu"))
    with pytest.raises(ValueError, match="cuda:2"):
        nb.init("p", system_devices=torch.device("cuda", 2))
    run = nb.init("p", system_devices=torch.device("cuda", 1), system_metrics=["gpu"],
                  system_interval=0.05)
    deadline = time.time() + 10
    names: set = set()
    while time.time() < deadline and "system/gpu1/util" not in names:
        run.flush()
        names = set(nb.read_scalars(run.path))
        time.sleep(0.05)
    run.finish()
    assert {n for n in names if n.startswith("system/gpu")} == {
        f"system/gpu1/{k}" for k in ("util", "memory_gb", "memory_percent", "temp_c", "power_w")}
