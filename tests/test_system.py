"""System metrics: GPUs as the script sees them, and the sampler thread, on this real machine.

nvidia-smi is a real executable on the PATH: small shell scripts written into tmp_path that
print what the real one prints for two H100s, or hang, or fail.
"""
from __future__ import annotations

import json
import os
import resource
import threading
import time
from pathlib import Path

import pytest
from helpers import run_child

from nuboard.errors import InvalidArgumentError
from nuboard.recording.capture.gpus import check_devices, query_gpus, sample_gpus
from nuboard.recording.capture.system import FIRST_SAMPLE_DELAY, SystemSampler

UUID0 = "GPU-3f1a6b2c-9d4e-4f5a-8b7c-1d2e3f4a5b6c"
UUID1 = "GPU-7c2e9a41-0b3d-4e6f-a1b2-c3d4e5f60718"
MODEL = "NVIDIA H100 80GB HBM3"

FAKE_OK = f"""#!/bin/sh
case "$1" in
  --query-gpu=index,uuid,name,memory.total)
    echo "0, {UUID0}, {MODEL}, 81559"
    echo "1, {UUID1}, {MODEL}, 81559" ;;
  --query-gpu=index,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw)
    echo "0, 37, 1024, 81559, 45, 120.50"
    echo "1, 99, 40960, 81559, [Not Supported], [N/A]" ;;
  *) echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 2 ;;
esac
"""
# what the real one does when it cannot talk to the driver
FAKE_FAIL = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
"""
FAKE_GARBAGE = """#!/bin/sh
echo "hello, this is not csv"
"""

SYSTEM_CPU_MEMORY = {"system/cpu/percent", "system/cpu/process_percent", "system/memory/used_gb",
                     "system/memory/percent", "system/memory/process_gb"}
GPU_FIELDS = ("util", "memory_gb", "memory_percent", "temp_c", "power_w")


def fake_smi(tmp_path: Path, name: str, script: str) -> Path:
    """A folder holding an executable nvidia-smi with this script."""
    folder = tmp_path / name
    folder.mkdir()
    exe = folder / "nvidia-smi"
    exe.write_text(script)
    exe.chmod(0o755)
    return folder


def use_path(monkeypatch, folder: Path | None) -> None:
    """PATH with `folder` first, and no real nvidia-smi after it."""
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p) / "nvidia-smi").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(([str(folder)] if folder else []) + rest))


@pytest.fixture
def smi(tmp_path, monkeypatch) -> Path:
    """A two-GPU nvidia-smi first on the PATH; CUDA_VISIBLE_DEVICES unset."""
    folder = fake_smi(tmp_path, "bin", FAKE_OK)
    use_path(monkeypatch, folder)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return folder


def hang_script(tmp_path: Path) -> str:
    """A nvidia-smi that starts a child, records its pid, and never answers."""
    return f"""#!/bin/sh
sleep 60 &
echo $! > {tmp_path}/child.pid
wait
"""


def sampler(groups=("cpu", "memory", "gpu"), gpus=None, devices=None, interval=30.0,
            prefix="system", log=None, track_cuda=True, track_mps=False) -> SystemSampler:
    return SystemSampler(log or (lambda values: None), groups=tuple(groups), gpus=gpus,
                         devices=devices, track_mps=track_mps, track_cuda=track_cuda,
                         interval=interval, prefix=prefix)


def burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


# -- query_gpus ------------------------------------------------------------------------------

def test_query_gpus_lists_every_gpu_without_cuda_visible_devices(smi):
    gpus = query_gpus()
    assert gpus == [
        {"device": "cuda:0", "index": 0, "uuid": UUID0, "model": MODEL, "memory_gb": 79.65},
        {"device": "cuda:1", "index": 1, "uuid": UUID1, "model": MODEL, "memory_gb": 79.65},
    ]


@pytest.mark.parametrize("cvd, expected", [
    ("1", [1]),
    ("1,0", [1, 0]),
    (" 0 , 1 ", [0, 1]),
    (UUID1, [1]),
    (f"{UUID1},{UUID0}", [1, 0]),
    ("GPU-7c2e", [1]),                  # a unique prefix, as CUDA accepts
    ("GPU-3f1a,GPU-7c", [0, 1]),
    ("GPU-", []),                       # a prefix of both: invalid, so nothing before it
    ("", []),
    ("-1", []),
    ("1,bogus,0", [1]),                 # CUDA stops at the first invalid entry
    ("0,-1,1", [0]),
    ("1,7,0", [1]),                     # past the machine's GPUs: the list ends there
    (f"{UUID0},GPU-ffff,{UUID1}", [0]),
    (f"{UUID1},0", [1]),                # an index in a UUID list is invalid
    ("1,1", []),                        # a GPU named twice hides all, as CUDA does
])
def test_query_gpus_follows_cuda_visible_devices(smi, monkeypatch, cvd, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", cvd)
    gpus = query_gpus()
    assert [g["index"] for g in gpus] == expected
    assert [g["device"] for g in gpus] == [f"cuda:{i}" for i in range(len(expected))]
    assert [g["uuid"] for g in gpus] == [(UUID0, UUID1)[i] for i in expected]


def test_query_gpus_reads_the_environment_it_is_given(smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="1")
    assert [g["uuid"] for g in query_gpus(env=env)] == [UUID1]
    assert query_gpus(env=dict(env, PATH="/nonexistent")) is None


def test_cuda_visible_devices_one_logs_the_second_gpu_as_gpu0(smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpus = query_gpus()
    assert gpus[0]["device"] == "cuda:0" and gpus[0]["index"] == 1
    values = sample_gpus(gpus, timeout=5)
    # the machine's GPU 1 is the one at 99% with 40960 MiB used
    assert values == {"gpu0/util": 99.0, "gpu0/memory_gb": 40.0,
                      "gpu0/memory_percent": pytest.approx(100 * 40960 / 81559)}


def test_sample_gpus_names_by_cuda_index_and_skips_missing_fields(smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    values = sample_gpus(query_gpus(), timeout=5)
    assert values == {
        "gpu0/util": 99.0, "gpu0/memory_gb": 40.0,
        "gpu0/memory_percent": pytest.approx(100 * 40960 / 81559),
        "gpu1/util": 37.0, "gpu1/memory_gb": 1.0,
        "gpu1/memory_percent": pytest.approx(100 * 1024 / 81559),
        "gpu1/temp_c": 45.0, "gpu1/power_w": 120.5,
    }


def test_missing_failing_or_garbage_nvidia_smi_gives_none(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    use_path(monkeypatch, None)
    assert query_gpus() is None
    use_path(monkeypatch, fake_smi(tmp_path, "fail", FAKE_FAIL))
    assert query_gpus() is None
    gpus = [{"device": "cuda:0", "index": 0, "uuid": UUID0, "model": MODEL, "memory_gb": 79.65}]
    assert sample_gpus(gpus, timeout=5) is None
    use_path(monkeypatch, fake_smi(tmp_path, "garbage", FAKE_GARBAGE))
    assert query_gpus() is None
    assert sample_gpus(gpus, timeout=5) is None


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_a_hanging_nvidia_smi_is_killed_at_the_timeout(tmp_path, monkeypatch):
    use_path(monkeypatch, fake_smi(tmp_path, "hang", hang_script(tmp_path)))
    began = time.monotonic()
    assert query_gpus(timeout=0.5) is None
    elapsed = time.monotonic() - began
    assert 0.4 < elapsed < 2.0
    # what the hanging nvidia-smi started is killed with it
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


# -- check_devices ---------------------------------------------------------------------------

def test_check_devices_accepts_visible_gpus(smi):
    gpus = query_gpus()
    assert check_devices(("cuda:1",), gpus) == (1,)
    assert check_devices(("cuda:1", "cuda:0"), gpus) == (1, 0)
    assert check_devices(None, gpus) is None
    assert check_devices(None, None) is None
    assert check_devices(("mps",), None) == ()


def test_check_devices_rejects_a_gpu_past_the_visible_ones(smi, monkeypatch):
    with pytest.raises(ValueError) as err:
        check_devices(("cuda:0", "cuda:2"), query_gpus())
    assert isinstance(err.value, InvalidArgumentError)
    message = str(err.value)
    assert "'cuda:2'" in message and "sees 2 GPUs" in message
    assert "CUDA_VISIBLE_DEVICES" in message
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with pytest.raises(ValueError, match=r"'cuda:1'.*sees 1 GPU .*CUDA_VISIBLE_DEVICES='1'"):
        check_devices(("cuda:1",), query_gpus())


def test_check_devices_rejects_cuda_without_nvidia_smi():
    with pytest.raises(ValueError, match=r"'cuda:0'.*nvidia-smi"):
        check_devices(("mps", "cuda:0"), None)


# -- SystemSampler ---------------------------------------------------------------------------

def meminfo_gib(key: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024 / 2**30
    raise KeyError(key)


def test_cpu_and_memory_scalars_on_this_machine():
    s = sampler(groups=("cpu", "memory"))
    burn(0.4)
    values = s.sample()
    assert set(values) == SYSTEM_CPU_MEMORY
    ncpu = os.cpu_count()
    assert 0 <= values["system/cpu/percent"] <= 100
    # this process burned the CPU for most of the window
    assert 20 <= values["system/cpu/process_percent"] <= 100 * ncpu
    total = meminfo_gib("MemTotal")
    assert 0 < values["system/memory/used_gb"] <= total
    assert values["system/memory/percent"] == pytest.approx(
        100 * values["system/memory/used_gb"] / total)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30
    assert 0.005 < values["system/memory/process_gb"] <= peak_gib * 1.01
    time.sleep(0.3)
    idle = s.sample()
    assert set(idle) == SYSTEM_CPU_MEMORY
    assert idle["system/cpu/process_percent"] < values["system/cpu/process_percent"]


def test_groups_and_prefix_pick_the_names(smi):
    gpus = query_gpus()
    cpu = sampler(groups=("cpu",), prefix="sys2")
    assert cpu.sample() == {}           # no CPU window yet: the thread waits before its first
    time.sleep(0.1)
    assert set(cpu.sample()) == {"sys2/cpu/percent", "sys2/cpu/process_percent"}
    assert set(sampler(groups=("memory",)).sample()) == {
        "system/memory/used_gb", "system/memory/percent", "system/memory/process_gb"}
    values = sampler(groups=("gpu",), gpus=gpus).sample()
    assert set(values) == ({f"system/gpu0/{f}" for f in GPU_FIELDS}
                           | {"system/gpu1/util", "system/gpu1/memory_gb",
                              "system/gpu1/memory_percent"})
    assert values["system/gpu0/util"] == 37.0 and values["system/gpu1/util"] == 99.0
    assert sampler(groups=(), gpus=gpus).sample() == {}
    with pytest.raises(ValueError, match="'disk'"):
        sampler(groups=("disk",))


def test_only_the_tracked_gpus_are_sampled(smi):
    gpus = query_gpus()
    values = sampler(groups=("gpu",), gpus=gpus, devices=(1,)).sample()
    assert set(values) == {"system/gpu1/util", "system/gpu1/memory_gb",
                           "system/gpu1/memory_percent"}
    # only "mps" chosen: no CUDA device tracked, and no nvidia-smi scalars
    assert sampler(groups=("gpu",), gpus=gpus, devices=(), track_cuda=False,
                   track_mps=True).sample() == {}
    assert sampler(groups=("gpu",), gpus=gpus, devices=None, track_cuda=False).sample() == {}
    # no nvidia-smi at all: the gpu group is skipped quietly
    s = sampler(groups=("gpu",), gpus=None)
    assert s.sample() == {} and s.dropped == {}


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_a_hanging_nvidia_smi_is_dropped_after_the_first_timeout(smi, tmp_path, monkeypatch):
    gpus = query_gpus()
    use_path(monkeypatch, fake_smi(tmp_path, "hang", hang_script(tmp_path)))
    s = sampler(gpus=gpus, interval=1.0)            # nvidia-smi may take min(5, 1) s
    time.sleep(0.1)
    began = time.monotonic()
    with pytest.warns(RuntimeWarning, match="nvidia-smi"):
        first = s.sample()
    first_took = time.monotonic() - began
    assert 0.9 < first_took < 3.0
    assert set(first) == SYSTEM_CPU_MEMORY
    assert "nvidia-smi" in s.dropped and "nvidia-smi" not in s.sources
    time.sleep(0.1)
    began = time.monotonic()
    second = s.sample()
    assert time.monotonic() - began < 0.5
    assert set(second) == SYSTEM_CPU_MEMORY


def test_a_failing_nvidia_smi_is_dropped_and_the_rest_go_on(smi, tmp_path, monkeypatch):
    gpus = query_gpus()
    s = sampler(gpus=gpus)
    time.sleep(0.1)
    assert "system/gpu0/util" in s.sample()
    use_path(monkeypatch, fake_smi(tmp_path, "fail", FAKE_FAIL))
    time.sleep(0.1)
    with pytest.warns(RuntimeWarning, match="nvidia-smi"):
        assert set(s.sample()) == SYSTEM_CPU_MEMORY
    use_path(monkeypatch, smi)              # even once it works again: dropped for the run
    time.sleep(0.1)
    assert set(s.sample()) == SYSTEM_CPU_MEMORY


def test_the_thread_logs_soon_then_every_interval_and_stops_promptly(smi):
    """Samples start an interval apart (never sooner; later only by what the previous sample
    took), from the sampler's own thread, and nothing is logged after stop().

    The schedule is read at the start of each sample: the time a sample takes (a fake
    nvidia-smi is a process to start, slow on a loaded 2-core machine) is not the sampler's
    to keep, and gaps between *logs* shrink after a slow sample by design."""
    got: list[tuple[float, str, dict]] = []
    starts: list[tuple[float, float]] = []          # (start, end) of each sample
    s = sampler(gpus=query_gpus(), interval=0.25,
                log=lambda v: got.append((time.monotonic(), threading.current_thread().name, v)))
    sample = s.sample

    def timed_sample():
        began = time.monotonic()
        try:
            return sample()
        finally:
            starts.append((began, time.monotonic()))

    s.sample = timed_sample
    began = time.monotonic()
    s.start()
    deadline = began + 30
    while len(got) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    s.stop()
    assert len(got) >= 4
    assert starts[0][0] - began < FIRST_SAMPLE_DELAY + 2.0     # soon: the first delay, then at once
    assert all(name == "nuboard-system" for _, name, _ in got)
    assert all({"system/cpu/percent", "system/gpu1/util"} <= set(v) for _, _, v in got)
    for (a, a_end), (b, _) in zip(starts, starts[1:]):
        assert b - a >= 0.25 - 0.01                             # never sooner than the interval
        assert b - a < max(0.25, a_end - a) + 2.0               # and not skipped
    count = len(got)
    time.sleep(0.6)
    assert len(got) == count                # nothing logged after stop()


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_stop_is_prompt_with_a_long_interval_and_log_errors_do_not_escape():
    calls: list[dict] = []

    def log(values):
        calls.append(values)
        raise OSError("disk full")

    hook_calls = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: hook_calls.append(args)
    try:
        s = sampler(groups=("cpu", "memory"), interval=3600, log=log)
        before = set(threading.enumerate())          # other tests' runs may still sample
        with pytest.warns(RuntimeWarning, match="could not log system metrics.*disk full"):
            s.start()
            deadline = time.monotonic() + 3
            while not calls and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.05)
        assert len(calls) == 1 and set(calls[0]) == SYSTEM_CPU_MEMORY
        began = time.monotonic()
        s.stop()
        assert time.monotonic() - began < 0.5
        assert "nuboard-system" not in [t.name for t in set(threading.enumerate()) - before]
    finally:
        threading.excepthook = old_hook
    assert hook_calls == []


def test_sampling_imports_nothing_the_script_did_not(smi):
    code = """
        import json, sys, time
        from nuboard.recording.capture.gpus import check_devices, query_gpus
        from nuboard.recording.capture.system import SystemSampler
        got = []
        gpus = query_gpus()
        s = SystemSampler(got.append, groups=("cpu", "memory", "gpu"), gpus=gpus,
                          devices=check_devices(None, gpus), track_mps=True, track_cuda=True,
                          interval=0.1, prefix="system")
        s.start()
        deadline = time.monotonic() + 10
        while len(got) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        s.stop()
        print(json.dumps([len(got), sorted(got[-1]),
                          [m for m in ("psutil", "torch", "numpy") if m in sys.modules]]))
    """
    out = run_child(code, PATH=os.environ["PATH"])
    count, names, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert count >= 4
    assert "system/gpu0/util" in names and "system/cpu/percent" in names
    assert heavy == []


def test_torch_imported_without_cuda_gives_no_torch_scalars():
    pytest.importorskip("torch")
    code = """
        import json, sys, time
        import torch
        from nuboard.recording.capture.system import SystemSampler
        x = torch.ones(1000) * 2          # the script uses torch, on the CPU
        got = []
        s = SystemSampler(got.append, groups=("cpu", "memory", "gpu"), gpus=None, devices=None,
                          track_mps=True, track_cuda=True, interval=0.1, prefix="system")
        s.start()
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        s.stop()
        names = sorted({n for v in got for n in v})
        print(json.dumps([len(got), names, torch.cuda.is_initialized(), s.dropped]))
    """
    out = run_child(code)
    count, names, initialized, dropped = json.loads(out.stdout.strip().splitlines()[-1])
    assert count >= 3
    assert "system/cpu/percent" in names
    assert [n for n in names if "torch" in n] == []
    assert initialized is False
    assert dropped == {}
