"""GPUs from nvidia-smi, as the script sees them after CUDA_VISIBLE_DEVICES.

A GPU is a dict ``{"device": "cuda:i", "index": <index on the machine>, "uuid": "GPU-...",
"model": "NVIDIA H100 80GB HBM3", "memory_gb": 79.65}``; ``cuda:i`` numbers the GPUs in the
order CUDA_VISIBLE_DEVICES lists them, as PyTorch does, and ``index`` is nvidia-smi's.
GB means GiB (2**30 bytes), as in nuboard.recording.capture.system.

nvidia-smi runs in its own process group with a timeout; one that hangs is killed with what it
started. Every failure (missing, non-zero exit, hang, output that is not its CSV) gives None:
nothing here raises but check_devices, for a device the script named that cannot be tracked.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping

from nuboard.errors import InvalidArgumentError

GIB = 1 << 30
QUERY_GPUS = ("--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits")
QUERY_USE = ("--query-gpu=index,utilization.gpu,memory.used,memory.total,temperature.gpu,"
             "power.draw", "--format=csv,noheader,nounits")


def query_gpus(timeout: float = 1.5, env: Mapping[str, str] | None = None) -> list[dict] | None:
    """The GPUs visible to this process, in CUDA's order (cuda:0 first).

    Args:
        timeout: seconds nvidia-smi may take before it is killed.
        env: the environment to read PATH and CUDA_VISIBLE_DEVICES from (default os.environ).

    Returns:
        One dict per visible GPU (see the module docstring); [] when CUDA_VISIBLE_DEVICES
        hides them all; None when nvidia-smi is missing, fails, hangs or prints garbage.
    """
    env = os.environ if env is None else env
    text = run_nvidia_smi(QUERY_GPUS, timeout, env)
    if text is None:
        return None
    rows = _parse_gpu_rows(text)
    if rows is None:
        return None
    visible = visible_gpus(rows, env.get("CUDA_VISIBLE_DEVICES"))
    return [dict(row, device=f"cuda:{i}") for i, row in enumerate(visible)]


def sample_gpus(gpus: list[dict], timeout: float) -> dict[str, float] | None:
    """One nvidia-smi reading of the given GPUs (from query_gpus), named by their cuda index.

    Returns:
        ``gpu{i}/util``, ``gpu{i}/memory_gb``, ``gpu{i}/memory_percent``, ``gpu{i}/temp_c``
        and ``gpu{i}/power_w`` for each GPU, without the system prefix, leaving out the fields
        nvidia-smi reports as [N/A] or [Not Supported]; None when the call fails, hangs or
        prints garbage.
    """
    text = run_nvidia_smi(QUERY_USE, timeout, os.environ)
    if text is None:
        return None
    readings: dict[int, list[float | None]] = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 6 or not _is_index(fields[0]):
            continue
        readings[int(fields[0])] = [_number(f) for f in fields[1:]]
    if not readings and text.strip():
        return None
    out: dict[str, float] = {}
    for gpu in gpus:
        reading = readings.get(gpu["index"])
        if reading is None:
            continue
        util, used, total, temp, power = reading
        i = cuda_index(gpu["device"])
        if util is not None:
            out[f"gpu{i}/util"] = util
        if used is not None:
            out[f"gpu{i}/memory_gb"] = used * (1 << 20) / GIB
            if total:
                out[f"gpu{i}/memory_percent"] = 100.0 * used / total
        if temp is not None:
            out[f"gpu{i}/temp_c"] = temp
        if power is not None:
            out[f"gpu{i}/power_w"] = power
    return out


def _no_cuda_choices() -> str:
    """What system_devices may name on a machine without CUDA GPUs: 'mps' only on macOS."""
    return "'mps' or 'all'" if sys.platform == "darwin" else "'all'"


def check_devices(names: tuple[str, ...] | None, gpus: list[dict] | None) -> tuple[int, ...] | None:
    """The cuda indices to track for system_devices names (as options.check_system_devices gives).

    Args:
        names: normalised names ('cuda:i', 'mps'), or None for every visible GPU.
        gpus: what query_gpus returned (None: no nvidia-smi answered).

    Returns:
        None for every visible GPU, else the cuda indices named, in order ('mps' adds none).

    Raises:
        InvalidArgumentError (a ValueError): a cuda:i past the GPUs the process sees, or any
        cuda name when nvidia-smi gave no GPUs.
    """
    if names is None:
        return None
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = ("CUDA_VISIBLE_DEVICES is not set" if cvd is None
             else f"CUDA_VISIBLE_DEVICES={cvd!r}")
    picked: list[int] = []
    for name in names:
        if not name.startswith("cuda:"):
            continue
        i = cuda_index(name)
        if gpus is None:
            raise InvalidArgumentError(
                f"system_devices {name!r} cannot be tracked: nvidia-smi is not on the PATH or "
                f"did not answer, so NuBoard sees no GPUs ({where}). Leave system_devices unset "
                f"or pass {_no_cuda_choices()} on this machine.")
        if i >= len(gpus):
            seen = f"cuda:0 to cuda:{len(gpus) - 1}" if len(gpus) > 1 else (
                "cuda:0" if gpus else "none")
            raise InvalidArgumentError(
                f"system_devices {name!r} cannot be tracked: this process sees {len(gpus)} "
                f"GPU{'' if len(gpus) == 1 else 's'} ({seen}; {where}). Name a device the "
                "script can use, or change CUDA_VISIBLE_DEVICES.")
        if i not in picked:
            picked.append(i)
    return tuple(picked)


def cuda_index(device: str) -> int:
    """3 for 'cuda:3'."""
    return int(device.partition(":")[2] or 0)


def visible_gpus(rows: list[dict], cvd: str | None) -> list[dict]:
    """The rows (machine GPUs) that CUDA_VISIBLE_DEVICES lets the process see, in its order.

    Follows CUDA (as PyTorch's _parse_visible_devices mirrors it): indices or GPU- UUIDs
    (a unique prefix is enough); parsing stops at the first invalid entry, keeping those
    before it; an index past the machine's GPUs ends the list there; a GPU named twice hides
    all. "" and "-1" hide all. MIG- instances are not GPUs nvidia-smi lists here: none.
    """
    if cvd is None:
        return list(rows)
    entries = cvd.split(",")
    picked: list[dict] = []
    if cvd.lstrip().startswith(("GPU-", "MIG-")):
        if cvd.lstrip().startswith("MIG-"):
            return []
        for entry in entries:
            entry = entry.strip()
            matches = [r for r in rows if entry.startswith("GPU-") and r["uuid"].startswith(entry)]
            if len(matches) != 1:
                break
            if matches[0] in picked:
                return []
            picked.append(matches[0])
        return picked
    ordinals: list[int] = []
    for entry in entries:
        n = _leading_int(entry.strip())
        if n in ordinals:
            return []
        if n < 0:
            break
        ordinals.append(n)
    by_index = {r["index"]: r for r in rows}
    for n in ordinals:
        if n not in by_index:
            break
        picked.append(by_index[n])
    return picked


def run_nvidia_smi(args: tuple[str, ...], timeout: float, env: Mapping[str, str]) -> str | None:
    """nvidia-smi's stdout, or None when it is missing, exits non-zero or outlives `timeout`."""
    exe = shutil.which("nvidia-smi", path=env.get("PATH", os.defpath))
    if exe is None:
        return None
    try:
        proc = subprocess.Popen([exe, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=dict(env), close_fds=True,
                                start_new_session=True)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return None
    except BaseException:
        _kill(proc)
        raise
    if proc.returncode != 0:
        return None
    return out.decode("utf-8", "replace")


def _kill(proc: subprocess.Popen) -> None:
    """Kill nvidia-smi and whatever it started (its own process group), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (AttributeError, OSError):
        try:
            proc.kill()
        except OSError:
            pass
    for stream in (proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        pass


def _parse_gpu_rows(text: str) -> list[dict] | None:
    """Rows of `index, uuid, name, memory.total`; None when no line is one."""
    rows = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not _is_index(fields[0]) or not fields[1].startswith("GPU-"):
            continue             # a warning nvidia-smi printed on stdout, say
        memory = _number(fields[-1])
        rows.append({"index": int(fields[0]), "uuid": fields[1],
                     "model": ", ".join(fields[2:-1]),
                     "memory_gb": None if memory is None else round(memory * (1 << 20) / GIB, 2)})
    if not rows and text.strip():
        return None
    return rows


def _is_index(field: str) -> bool:
    return field.isascii() and field.isdigit()


def _number(field: str) -> float | None:
    """A CSV field as a finite float; None for [N/A], [Not Supported] and the like."""
    try:
        value = float(field)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _leading_int(text: str) -> int:
    """The integer `text` starts with, as strtoul reads it ('1gpu' is 1); -1 when none."""
    end = 0
    while end < len(text) and (text[end] in "0123456789" or (end == 0 and text[end] in "+-")):
        end += 1
    try:
        return int(text[:end])
    except ValueError:
        return -1
