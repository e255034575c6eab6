"""No stray temporary file stays (issue 17, row 6 of reliability.md): a kill during finish()
leaves `.tmp-data.parquet.<pid>.<hex>` in the run folder, up to the size of the run's data; the
sync (any `nuboard ls`, the viewer) and `nuboard reindex` remove it once its process is gone,
and never a temp file another live process, or another host, may still be writing."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import child_env, cli
from helpers_http import Viewer

import nuboard as nb
from nuboard.catalog.sync import STALE_TEMP

FINISH_KILLED = """
import os, sys, nuboard as nb
run = nb.init("llm", run_id="killed", system_metrics=False, capture_console=False,
              capture_env=False)
for step in range(2_000_000):
    run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
    if step % 4 == 0:
        run.add_scalar("train/lr", 1e-3, step=step)
run.flush()
print("finishing", flush=True)
run.finish()                                    # killed while it writes data.parquet
print("finished", flush=True)
"""


def temps(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(".tmp-"))


def kill_inside_finish(root) -> Path:
    """A run whose process was SIGKILLed while finish() wrote data.parquet's temp file."""
    folder = root / "llm" / "runs" / "killed"
    for _attempt in range(5):
        shutil.rmtree(folder, ignore_errors=True)
        proc = subprocess.Popen([sys.executable, "-c", FINISH_KILLED], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=child_env(NUBOARD_DIR=str(root)))
        try:
            assert proc.stdout.readline().strip() == "finishing", proc.stderr.read()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if any(n.startswith(".tmp-data.parquet.") for n in os.listdir(folder)):
                    proc.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.001)
        finally:
            proc.kill()
            proc.wait()
        if temps(folder):
            return folder
    pytest.fail("could not kill the child inside finish() in 5 tries")


def test_a_kill_inside_finish_leaves_a_temp_file_that_the_sync_removes(root):
    folder = kill_inside_finish(root)
    left = temps(folder)
    assert len(left) == 1 and left[0].startswith(".tmp-data.parquet.")
    size = os.path.getsize(folder / left[0])
    with Viewer(root) as viewer:
        assert viewer.get("/p/llm").status == 200                # the viewer syncs the project
        listing = viewer.get("/api/p/llm/.run/killed/files/").json()
    assert temps(folder) == [], f"{size:,} bytes left in {left[0]}"
    assert left[0] not in {e["name"] for e in listing["entries"]}     # nor in the Files tab
    assert nb.read_scalars(folder, ["train/loss"])["train/loss"].steps[-1] == 1_999_999
    assert not (folder / "data.parquet").exists()


def test_reindex_and_ls_remove_it_too(root):
    folder = kill_inside_finish(root)
    assert temps(folder)
    proc = cli(root, "reindex", "llm")
    assert proc.returncode == 0, proc.stderr
    assert temps(folder) == []
    folder = kill_inside_finish(root)
    assert temps(folder)
    assert cli(root, "ls", "llm").returncode == 0
    assert temps(folder) == []


def test_a_temp_file_of_a_live_process_or_of_another_host_is_kept(root, make_run):
    folder = make_run("llm", points={"loss": [(0, 1.0)]})
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout.strip()
        live_temp = folder / f".tmp-run.json.{sleeper.pid}.abc123"
        other_host = folder / f".tmp-run.json.{dead}.def456"          # a dead pid here, but
        old_other = folder / f".tmp-data.parquet.{dead}.0a0b0c"        # maybe alive elsewhere
        for path in (live_temp, other_host, old_other):
            path.write_bytes(b"partial")
        aged = time.time() - STALE_TEMP - 60
        os.utime(old_other, (aged, aged))
        assert cli(root, "ls", "llm").returncode == 0
        assert temps(folder) == sorted([live_temp.name, other_host.name])
        os.utime(other_host, (aged, aged))                         # ten minutes without a change
        assert cli(root, "ls", "llm").returncode == 0
        assert temps(folder) == [live_temp.name]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert cli(root, "ls", "llm").returncode == 0                 # the writer is gone, but it was
    assert temps(folder) == [live_temp.name]                      # not the run's own: it ages
