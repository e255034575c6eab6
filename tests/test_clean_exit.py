"""A script that reads a finished run exits cleanly (issue 30, item 4).

With torch imported, `nb.read_scalars` of a run with a data.parquet aborted at interpreter
exit ("terminate called without an active exception", SIGABRT) in 2 to 6 of 20 runs: Arrow's
thread pool decoded the file's columns from buffers over Python bytes, and a pool thread still
held one while the interpreter finalized. Each script here is a fresh process, as a user's is.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import child_env

import nuboard as nb
from nuboard.files import layout

pytest.importorskip("torch")

RUNS = 30            # before the fix, 30 clean exits in a row had a chance of about 1 in 1,000
AT_ONCE = 3          # fresh processes at a time: torch's import costs 1-2 s of CPU each
POINTS = 20_000      # of each of two scalars: decoding them keeps Arrow's pool busy at exit

SCRIPT = """
import sys
import torch  # noqa: F401  (its threads and atexit hooks are what made the abort likely)
import nuboard as nb

assert list(nb.read_scalars(sys.argv[1], keys="loss")["loss"].steps) == list(range(POINTS))
nb.read_scalars(sys.argv[1])        # the last line: the interpreter finalizes right after it
""".replace("POINTS", str(POINTS))


def finished_run(root: Path) -> Path:
    """A finished run of the real API with a data.parquet (two scalars of POINTS points)."""
    with nb.init("p", dir=root, system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        for step in range(POINTS):
            run.add_scalar("loss", 1.0 / (step + 1), step=step)
            run.add_scalar("acc", step / POINTS, step=step)
    folder = Path(run.path)
    assert (folder / layout.PARQUET).is_file()
    return folder


def test_reading_a_run_then_exiting_never_aborts(root, tmp_path):
    """30 fresh processes import torch, read a finished run's scalars (from its data.parquet)
    and exit: each exits with 0, and none prints the C++ runtime's abort message."""
    folder = finished_run(root)
    script = tmp_path / "read_run.py"
    script.write_text(SCRIPT)
    started = time.monotonic()
    done = 0
    while done < RUNS:
        batch = [subprocess.Popen([sys.executable, str(script), str(folder)], env=child_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL)
                 for _ in range(min(AT_ONCE, RUNS - done))]
        for proc in batch:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (
                f"run {done + 1} of {RUNS} exited with {proc.returncode} (-6: SIGABRT): "
                f"{err[-2000:]}")
            assert "terminate called" not in err, err[-2000:]
            done += 1
    assert time.monotonic() - started < 600
