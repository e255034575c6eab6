"""A run folder removed while the job logs (rm -rf, a cleanup job): one warning naming the
folder, every later point counted in run.dropped_points, and the script goes on and ends well.

Principle 5 of shared/DESIGN.md, on real files and a real child process.
"""
from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path

from helpers import QUIET, start_child

import nuboard as nb


def remove_folder(path: Path) -> None:
    """rm -rf the folder, again if a file appeared in it meanwhile (a heartbeat's temp file)."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
    raise AssertionError(f"{path} could not be removed")


def test_points_logged_after_the_folder_vanished_are_dropped_counted_and_warned_once(root):
    """70,000 points logged after rm -rf of the run folder: one warning, all 70,000 counted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = nb.init("p", dir=root, flush_interval=0.01, **QUIET)   # compact: data.parquet too
        for step in range(1000):
            run.add_scalar("loss", 1.0, step=step)
        run.flush()
        folder = run.folder
        shutil.rmtree(run.path)
        for step in range(1000, 36_000):
            run.add_scalar("loss", 1.0, step=step)                 # its own buffer
            if step % 2:
                run.log({"a": 1.0, "b": 2.0}, step=step)           # a dict shape's group
        run.finish()

    messages = [f"{w.category.__name__}: {w.message}" for w in caught]
    assert len(messages) == 1, messages
    assert caught[0].category is RuntimeWarning and str(folder) in messages[0], messages
    assert "dropped" in messages[0] and "Training goes on" in messages[0], messages
    assert run.dropped_points == 70_000
    assert run.status == "finished"
    assert not folder.exists(), "finishing must not re-create a removed run folder"


CHILD = """
import json, os, time, warnings, nuboard as nb
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    # the sampler and the console copy stay on: they must survive the folder's removal too
    run = nb.init("p", run_id="gone", flush_interval=0.05, system_interval=0.05)
    print("ready", flush=True)                 # the console copy's output.log is open now
    step = 0
    while not os.path.exists(os.environ["STOP"]):
        for _ in range(1000):
            run.log({"train/loss": 1.0 / (step + 1), "lr": 1e-3}, step=step)
            step += 1
        print("step", step, flush=True)
        time.sleep(0.01)
    run.finish()
print(json.dumps({"dropped": run.dropped_points, "steps": step, "status": run.status,
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
"""


def test_a_folder_removed_under_a_logging_process_gives_one_warning_and_a_count(root, tmp_path):
    """rm -rf of a run folder under a running job: it goes on, warns once, exits 0."""
    stop = tmp_path / "stop"
    proc = start_child(CHILD, NUBOARD_DIR=str(root), STOP=str(stop))
    folder = root / "p" / "runs" / "gone"
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        proc.stdout.readline()                   # it logs
        remove_folder(folder)
        for _ in range(5):                       # it logs on, for several flush intervals
            proc.stdout.readline()
        time.sleep(0.3)
        stop.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, f"{out}\n{err}"
    assert "Traceback" not in err and "Exception in thread" not in err, err
    report = json.loads(out.strip().splitlines()[-1])
    assert len(report["warnings"]) == 1, report["warnings"]
    message = report["warnings"][0]
    assert message.startswith("RuntimeWarning: ") and f"cannot write to {folder} (" in message, message
    assert report["dropped"] > 0 and report["status"] == "finished", report
    assert not folder.exists(), "the job must not re-create a removed run folder"


def test_a_first_print_after_the_folder_vanished_adds_no_second_warning(root):
    """The console copy opens output.log at the first output: when that comes after the run
    folder was removed, the writer's warning is the only one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = nb.init("p", dir=root, flush_interval=0.01, capture_console=True,
                      system_metrics=False, capture_env=False)
        run.add_scalar("loss", 1.0, step=0)
        run.flush()
        shutil.rmtree(run.path)
        run.add_scalar("loss", 2.0, step=1)
        print("the first line the console copy sees")
        run.finish()
    messages = [f"{w.category.__name__}: {w.message}" for w in caught]
    assert len(messages) == 1 and "cannot write to" in messages[0], messages
    assert run.dropped_points == 1
