"""System metrics: a daemon thread that samples CPU, memory and GPU use and logs them as scalars.

Names (under the run's system prefix, "system" unless changed):

    cpu/percent, cpu/process_percent            the machine (0-100), this process (100 = one core)
    memory/used_gb, memory/percent              the machine's RAM: MemTotal - MemAvailable
    memory/process_gb                           this process's resident memory (VmRSS)
    gpu{i}/util, memory_gb, memory_percent,     each tracked GPU cuda:i, from nvidia-smi
      temp_c, power_w
    torch/cuda_allocated_gb, cuda_peak_gb       PyTorch's CUDA allocator, once CUDA is initialized
    torch/mps_allocated_gb, mps_driver_gb       PyTorch's MPS allocator, on macOS

GB means GiB (2**30 bytes) throughout, as nvidia-smi's MiB and PyTorch's allocator count.

Sources: /proc on Linux; elsewhere psutil when it can be imported (never on Linux);
os.times() for the process's CPU time everywhere; nvidia-smi through nuboard.recording.capture.gpus. On Linux
this module imports nothing outside the standard library, and it never imports torch: the
torch scalars are read only when the script has imported torch, the CUDA ones only when the
script has initialized CUDA (torch.cuda.is_initialized()), so sampling never creates a CUDA
context. The CUDA allocator figures are those of the current device of the thread that logs
(torch.cuda.current_device() there, as note_cuda_device records it: CUDA's current device is
per thread, and this sampler has its own), when system_devices tracks it.

A source that fails once (raises, or nvidia-smi hangs past min(5, max(2, interval)) seconds) is dropped
for the rest of the run with one warning; the others go on. Nothing raises into the training
process.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Callable

from nuboard.errors import InvalidArgumentError
from nuboard.files.sigterm import block_signals, signals_unblocked, start_blocked

from .gpus import cuda_index, sample_gpus

GIB = 1 << 30
GROUPS = ("cpu", "memory", "gpu")
FIRST_SAMPLE_DELAY = 0.5     # seconds from start() to the first sample (CPU needs a delta)
MIN_WINDOW = 0.05            # seconds: a shorter window gives no CPU percentages yet
SMI_TIMEOUT = 5.0            # nvidia-smi may take min(SMI_TIMEOUT, max(SMI_MIN_TIMEOUT, interval)) s
SMI_MIN_TIMEOUT = 2.0        # a real nvidia-smi takes about 0.1 s; never cut it off sooner

Source = Callable[[], "dict[str, float]"]


class SystemSampler:
    """Samples the machine every `interval` seconds on a daemon thread and logs the values.

    Args:
        log: called from the sampler thread with each whole sample, {full name: value}.
        groups: which of "cpu", "memory", "gpu" to sample.
        gpus: the visible GPUs, from nuboard.recording.capture.gpus.query_gpus (None: no nvidia-smi).
        devices: cuda indices to track, from nuboard.recording.capture.gpus.check_devices (None: all visible).
        track_mps, track_cuda: whether MPS / CUDA scalars are wanted (nvidia-smi's are CUDA's).
        interval: seconds between samples.
        prefix: the first segment of every name, such as "system".
    """

    def __init__(self, log: Callable[[dict[str, float]], None], *, groups: tuple[str, ...],
                 gpus: list[dict] | None, devices: tuple[int, ...] | None, track_mps: bool,
                 track_cuda: bool, interval: float, prefix: str):
        unknown = [g for g in groups if g not in GROUPS]
        if unknown:
            raise InvalidArgumentError(
                f"system metrics group {unknown[0]!r} is not one of 'cpu', 'memory', 'gpu'.")
        self.interval = float(interval)
        self.prefix = prefix
        self.smi_timeout = min(SMI_TIMEOUT, max(SMI_MIN_TIMEOUT, self.interval))
        self.dropped: dict[str, str] = {}       # source name -> why it was dropped
        self._log = log
        self._warned_log = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sources: list[tuple[str, Source]] = []
        try:
            self._sources = _make_sources(groups, gpus, devices, track_mps, track_cuda,
                                          self.smi_timeout)
        except Exception as exc:                # a broken psutil, say: sample nothing
            self._drop("sources", exc)

    @property
    def sources(self) -> list[str]:
        """The names of the sources still sampled."""
        return [name for name, _ in self._sources]

    def start(self) -> None:
        """Start the daemon thread: a first sample half a second later, then every interval."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="nuboard-system", daemon=True)
        start_blocked(self._thread)

    def stop(self) -> None:
        """Stop the thread and wait for it (at most one nvidia-smi timeout); no log call after."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(self.smi_timeout + 2.0)

    def sample(self) -> dict[str, float]:
        """One reading of every live source, {f"{prefix}/cpu/percent": 12.5, ...}."""
        out: dict[str, float] = {}
        with self._lock:
            for name, read in list(self._sources):
                try:
                    values = read()
                except Exception as exc:
                    self._drop(name, exc)
                    continue
                for key, value in values.items():
                    out[f"{self.prefix}/{key}"] = float(value)
        return out

    def _loop(self) -> None:
        block_signals()                  # a SIGTERM must reach the main thread, to wake it
        delay = min(FIRST_SAMPLE_DELAY, self.interval)
        while not self._stop.wait(delay):
            began = time.monotonic()
            try:
                values = self.sample()
                if values and not self._stop.is_set():
                    self._log(values)
            except Exception as exc:
                if not self._warned_log:
                    self._warned_log = True
                    _warn(f"nuboard: could not log system metrics ({exc!r:.200}); "
                          "sampling goes on.")
            delay = max(0.0, self.interval - (time.monotonic() - began))

    def _drop(self, name: str, exc: BaseException) -> None:
        self._sources = [(n, s) for n, s in self._sources if n != name]
        reason = str(exc) if isinstance(exc, SourceFailed) else repr(exc)
        self.dropped[name] = reason
        _warn(f"nuboard: system metrics stopped reading {name}: {reason:.300}. "
              "The other sources go on.")


class SourceFailed(Exception):
    """A source gave no reading (nvidia-smi failed or hung); it is dropped."""


def _warn(message: str) -> None:
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    except Exception:               # warnings turned into errors: stay quiet rather than raise
        pass


def _make_sources(groups, gpus, devices, track_mps, track_cuda, smi_timeout
                  ) -> list[tuple[str, Source]]:
    linux = sys.platform.startswith("linux") and os.path.exists("/proc/stat")
    psutil = None if linux else _import_psutil()
    sources: list[tuple[str, Source]] = []
    if "cpu" in groups:
        if linux:
            sources.append(("/proc/stat", MachineCpu().read))
        elif psutil is not None:
            sources.append(("psutil cpu", PsutilCpu(psutil).read))
        sources.append(("os.times", ProcessCpu().read))
    if "memory" in groups:
        if linux:
            sources.append(("/proc/meminfo", read_proc_memory))
            sources.append(("/proc/self/status", read_proc_rss))
        elif psutil is not None:
            sources.append(("psutil memory", PsutilMemory(psutil).read))
    if "gpu" in groups:
        tracked = [g for g in (gpus or ())
                   if devices is None or cuda_index(g["device"]) in devices]
        if track_cuda and tracked:
            sources.append(("nvidia-smi", NvidiaSmi(tracked, smi_timeout).read))
        if track_cuda or track_mps:
            sources.append(("torch", TorchAllocator(devices, track_cuda, track_mps).read))
    return sources


def _import_psutil():
    """psutil where it is installed (only ever asked off Linux), else None."""
    try:
        import psutil
    except Exception:
        return None
    return psutil


# -- sources: each returns {name without the prefix: value} or raises ----------------------

class MachineCpu:
    """The whole machine's busy share from /proc/stat, between two readings."""

    def __init__(self):
        self.last = self._ticks()

    @staticmethod
    def _ticks() -> tuple[int, int, float]:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
        if fields[0] != b"cpu":
            raise SourceFailed(f"/proc/stat starts with {fields[:1]!r}, not the cpu line")
        ticks = [int(v) for v in fields[1:9]]    # user nice system idle iowait irq softirq steal
        total = sum(ticks)
        return total - ticks[3] - ticks[4], total, time.monotonic()

    def read(self) -> dict[str, float]:
        busy, total, now = self._ticks()
        last_busy, last_total, last_now = self.last
        if now - last_now < MIN_WINDOW or total <= last_total:
            return {}
        self.last = (busy, total, now)
        share = (busy - last_busy) / (total - last_total)
        return {"cpu/percent": min(100.0, max(0.0, 100.0 * share))}


class ProcessCpu:
    """This process's CPU time (all threads) per second of wall time: 100 is one full core."""

    def __init__(self):
        self.last = self._now()

    @staticmethod
    def _now() -> tuple[float, float]:
        t = os.times()
        return t.user + t.system, time.monotonic()

    def read(self) -> dict[str, float]:
        cpu, now = self._now()
        last_cpu, last_now = self.last
        if now - last_now < MIN_WINDOW:
            return {}
        self.last = (cpu, now)
        percent = 100.0 * (cpu - last_cpu) / (now - last_now)
        return {"cpu/process_percent": min(100.0 * (os.cpu_count() or 1), max(0.0, percent))}


def read_proc_memory() -> dict[str, float]:
    """The machine's RAM in use (MemTotal - MemAvailable) from /proc/meminfo."""
    info: dict[bytes, int] = {}
    with open("/proc/meminfo", "rb") as f:
        for line in f:
            key, _, rest = line.partition(b":")
            if key in (b"MemTotal", b"MemAvailable", b"MemFree", b"Buffers", b"Cached"):
                info[key] = int(rest.split()[0]) * 1024          # kB
    total = info[b"MemTotal"]
    available = info.get(b"MemAvailable")
    if available is None:                                      # kernels before 3.14
        available = info.get(b"MemFree", 0) + info.get(b"Buffers", 0) + info.get(b"Cached", 0)
    used = total - available
    return {"memory/used_gb": used / GIB, "memory/percent": 100.0 * used / total}


def read_proc_rss() -> dict[str, float]:
    """This process's resident memory (VmRSS) from /proc/self/status."""
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmRSS:"):
                return {"memory/process_gb": int(line.split()[1]) * 1024 / GIB}
    raise SourceFailed("/proc/self/status has no VmRSS line")


class PsutilCpu:
    def __init__(self, psutil):
        self.psutil = psutil
        self.last = time.monotonic()
        psutil.cpu_percent(interval=None)          # the first call only sets the baseline

    def read(self) -> dict[str, float]:
        now = time.monotonic()
        if now - self.last < MIN_WINDOW:
            return {}
        self.last = now
        return {"cpu/percent": float(self.psutil.cpu_percent(interval=None))}


class PsutilMemory:
    def __init__(self, psutil):
        self.psutil = psutil
        self.process = psutil.Process()

    def read(self) -> dict[str, float]:
        vm = self.psutil.virtual_memory()
        used = vm.total - vm.available
        return {"memory/used_gb": used / GIB, "memory/percent": 100.0 * used / vm.total,
                "memory/process_gb": self.process.memory_info().rss / GIB}


class NvidiaSmi:
    """Per-GPU use of the tracked GPUs; one failed or hung call drops it."""

    def __init__(self, gpus: list[dict], timeout: float):
        self.gpus = gpus
        self.timeout = timeout

    def read(self) -> dict[str, float]:
        with signals_unblocked():        # nvidia-smi inherits this thread's signal mask
            values = sample_gpus(self.gpus, self.timeout)
        if values is None:
            raise SourceFailed(f"nvidia-smi failed or did not answer within {self.timeout:g} s")
        return values


class TorchAllocator:
    """PyTorch's allocators, read only from a torch the script imported, never initializing CUDA."""

    def __init__(self, devices: tuple[int, ...] | None, track_cuda: bool, track_mps: bool):
        self.devices = devices
        self.track_cuda = track_cuda
        self.track_mps = track_mps and sys.platform == "darwin"

    def read(self) -> dict[str, float]:
        torch = sys.modules.get("torch")
        if torch is None or _importing(torch):
            return {}
        out: dict[str, float] = {}
        cuda = sys.modules.get("torch.cuda")
        if self.track_cuda and cuda is not None and not _importing(cuda) and cuda.is_initialized():
            device = _logging_device
            if device is None:          # not seen yet: the process's default device
                device = cuda.current_device()
            if self.devices is None or device in self.devices:
                out["torch/cuda_allocated_gb"] = cuda.memory_allocated(device) / GIB
                out["torch/cuda_peak_gb"] = cuda.max_memory_allocated(device) / GIB
        if self.track_mps:
            backend = sys.modules.get("torch.backends.mps")
            mps = sys.modules.get("torch.mps")
            if backend is not None and mps is not None and backend.is_available():
                out["torch/mps_allocated_gb"] = mps.current_allocated_memory() / GIB
                out["torch/mps_driver_gb"] = mps.driver_allocated_memory() / GIB
        return out


_logging_device: "int | None" = None    # the CUDA device of the thread that logs, once known


def note_cuda_device() -> None:
    """Record the CUDA device current on the calling thread (the one that logs), once the
    script has initialized CUDA; never raises, never initializes CUDA."""
    global _logging_device
    cuda = sys.modules.get("torch.cuda")
    if cuda is None or _importing(cuda):
        return
    try:
        if cuda.is_initialized():
            _logging_device = int(cuda.current_device())
    except Exception:           # a torch that cannot say: the sampler asks on its own thread
        pass


def _importing(module) -> bool:
    """True while the module is still being imported (on the training thread, say)."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))
