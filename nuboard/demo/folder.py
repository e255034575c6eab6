"""The demo folder: whether it is there, what may not be written over, and writing it."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

from .data import DATA_FOLDER, data_dir
from .errors import DemoConflictError
from .plan import DATASETS, PROJECTS, RUNS

MARKER = ".nuboard-demo.json"
MARKER_FORMAT = 1


class Demo(NamedTuple):
    """A demo folder: where it is, whether this call wrote it, and its runs' ids."""
    root: Path
    written: bool                  # False when the folder already held the demo
    runs: dict                     # 'project/name' -> run id
    seconds: float                 # how long writing took (0 when it was already there)


def read_demo(root: "str | os.PathLike[str]") -> Demo | None:
    """The demo in root, from its marker file; None when root holds no demo."""
    from nuboard.files.jsonfile import read_json
    path = Path(root) / MARKER
    if not path.is_file():
        return None
    try:
        doc = read_json(path)
        runs = dict(doc.get("runs") or {})
    except (OSError, ValueError, AttributeError, TypeError):
        runs = {}
    return Demo(Path(root), False, runs, 0.0)


def check_free(root: Path) -> None:
    """Raise DemoConflictError naming the first folder the demo would write into that exists."""
    if root.exists() and not root.is_dir():
        raise DemoConflictError(f"{str(root)!r} is a file, not a folder: give nuboard demo a "
                                "folder to write into.")
    for name in PROJECTS + (DATA_FOLDER,):
        path = root / name
        if os.path.lexists(path):
            raise DemoConflictError(
                f"{str(path)!r} already exists and {str(root)!r} holds no demo (no {MARKER}): "
                f"nuboard demo writes only where {', '.join(PROJECTS)} and "
                f"{DATA_FOLDER} are not; nothing was written. Choose another folder, "
                "such as 'nuboard demo /tmp/nuboard-demo'.")


def write_demo(root: "str | os.PathLike[str]", *, progress: Callable[[str], None] = print,
               parallel: int | None = None) -> Demo:
    """Write the demo projects (datasets, llm-pretrain, vit-ablations) into root.

    When root already holds the demo (its marker file), nothing is written. Runs are real
    child processes, `parallel` at a time (default: four per CPU, 6 to 16); they mostly
    sleep, to spread their steps over a second or so.

    Returns:
        The Demo: its runs' ids by 'project/name', and whether this call wrote it.
    Raises:
        DemoConflictError: a folder of the demo exists without the marker; nothing is written.
        DemoFailedError: a run ended other than as planned; what was written is removed.
    """
    root = Path(root)
    found = read_demo(root)
    if found is not None:
        progress(f"The demo is already in {root}; nothing was written.")
        return found
    check_free(root)
    began = time.monotonic()
    where = Path(os.path.abspath(root))
    made_root = not where.exists()
    where.mkdir(parents=True, exist_ok=True)
    try:
        data_dir(where).mkdir()                      # the claim: one writer per folder
    except FileExistsError:
        check_free(root)
        raise
    try:
        progress(f"Writing the NuBoard demo into {root} ({len(RUNS)} runs, as real processes)")
        _add_datasets_replayed(where)
        progress(f"  {DATASETS + '/fineweb-edu:v1, imagenet-100:v1':<40s} "
                 f"references to {data_dir(root)}")
        runs = _write_runs(where, progress, parallel)
        seconds = time.monotonic() - began
        _write_marker(where, runs, seconds)
    except BaseException:
        _remove(where, made_root)
        raise
    return Demo(root, True, runs, seconds)


def _add_datasets_replayed(root: Path) -> None:
    """add_datasets in a child on the replay clock: ten days before the demo's day, 16:00."""
    import subprocess
    import sys

    from .clock import CLOCK_VAR, clock_value
    from .errors import DemoFailedError
    from .job import DATASETS_KEY
    from .plan import DAY
    from .pool import REPLAY, child_env, midnight
    env = child_env(root)
    env[CLOCK_VAR] = clock_value(midnight() - 10 * DAY + 16 * 3600, 1.0)
    done = subprocess.run([sys.executable, str(REPLAY), DATASETS_KEY, "--dir", str(root)],
                          env=env, cwd=root, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    if done.returncode:
        lines = (done.stderr or done.stdout or "(it printed nothing)").strip().splitlines()
        raise DemoFailedError(f"the demo's datasets were not added: {lines[-1]}")


def _write_runs(root: Path, progress: Callable[[str], None], parallel: int | None) -> dict:
    from .pool import Pool, plan_tasks
    limit = parallel or min(16, max(6, 4 * (os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory(prefix="nuboard-demo-") as work:
        return Pool(root, Path(work), limit=limit, progress=progress).run(plan_tasks(RUNS))


def _write_marker(root: Path, runs: dict, seconds: float) -> None:
    from nuboard import __version__
    from nuboard.files.jsonfile import write_json_atomic
    doc = {"format": MARKER_FORMAT, "written_by": f"nuboard {__version__}",
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "seconds": round(seconds, 2), "projects": list(PROJECTS),
           "data": DATA_FOLDER, "runs": runs}
    write_json_atomic(root / MARKER, doc)


def _remove(root: Path, made_root: bool) -> None:
    """Take away what a failed write made (the folders did not exist before it began)."""
    for name in PROJECTS + (DATA_FOLDER,):
        shutil.rmtree(root / name, ignore_errors=True)
    if made_root:
        try:
            root.rmdir()
        except OSError:
            pass
