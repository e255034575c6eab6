"""What the tests share besides fixtures: constants, makers of runs and trees, child processes,
the CLI in a child, and reads of a catalog. Fixtures live in conftest.py; the viewer served for
real and its raw client in helpers_http.py.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select, text

import nuboard as nb
from nuboard.catalog.tables import metadata
from nuboard.cli import main

REPO = Path(__file__).resolve().parent.parent

QUIET = dict(system_metrics=False, capture_console=False, capture_env=False)
"""init keywords that leave out the captures a test does not look at."""
QUIET_ARGS = "system_metrics=False, capture_console=False, capture_env=False"
"""QUIET as source text, for the nb.init(...) of a child's script."""


# -- runs and trees ------------------------------------------------------------------------------

def write_run(root: Path, project: str = "proj", points: dict | None = None, **kw) -> Path:
    """A finished run written by the API; points is {name: [(step, value), ...]}; its folder.

    kw goes to nb.init, over QUIET.
    """
    with nb.init(project, dir=root, **{**QUIET, **kw}) as run:
        for name, pairs in (points or {}).items():
            for step, value in pairs:
                run.add_scalar(name, value, step=step)
    return Path(run.path)


def sweep_runs(root: Path, xss: str, project: str = "llm") -> dict[str, str]:
    """Five finished runs for the sweep pages (Scatter, parallel coordinates): {name: run id}.
    Config width 1, 10, 100 (named `xss`), 0 and none, opt adam/sgd/adamw; train/acc's last is
    10 * width**2 (log-log: the line y = 2x + 1), with half of it at step 0."""
    runs = [("w1", {"width": 1, "opt": "adam"}, 10.0), ("w10", {"width": 10, "opt": "sgd"}, 1000.0),
            (xss, {"width": 100, "opt": "adam"}, 100000.0), ("w0", {"width": 0, "opt": "sgd"}, 5.0),
            ("nowidth", {"opt": "adamw"}, 7.0)]
    ids = {}
    for name, config, acc in runs:
        with nb.init(project, dir=root, run_name=name, config=config, **QUIET) as run:
            run.add_scalar("train/acc", acc / 2, step=0)
            run.add_scalar("train/acc", acc, step=1)
        ids[name] = run.id
    return ids


def loss_run(root: Path, project: str = "llm", name: str = "run", steps: int = 10, **kw) -> str:
    """A finished run named `name` with train/loss = 1/(i+1) at steps 0..steps-1; its id."""
    points = {"train/loss": [(i, 1.0 / (i + 1)) for i in range(steps)]}
    return write_run(root, project, points, run_name=name, **kw).name


def make_tree(folder: Path, files: dict) -> Path:
    """Write files (path with '/' -> bytes) under a folder; return the folder."""
    for rel, data in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder


# -- child processes -----------------------------------------------------------------------------

def child_env(**extra: str) -> dict:
    """The environment of a child Python process that imports this checkout's nuboard."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_child(code: str, *, timeout: float = 120, check: bool = True, **env: str
              ) -> subprocess.CompletedProcess:
    """Run a Python snippet in a child process and wait for it."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env(**env),
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def start_child(code: str, **env: str) -> subprocess.Popen:
    """Start a Python snippet in a child process (stdout piped, line by line)."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=child_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def killed_run(root: Path, project: str = "llm", name: str = "vanished") -> str:
    """A run left 'running' by a child killed with SIGKILL after it logged train/loss=1.0 at
    step 0; its id. Its heartbeat is as fresh as the kill: age it with os.utime."""
    child = start_child(f"""
        import time, nuboard as nb
        run = nb.init({project!r}, run_name={name!r}, {QUIET_ARGS})
        run.add_scalar("train/loss", 1.0, step=0)
        run.flush()
        print(run.id, flush=True)
        time.sleep(600)
    """, NUBOARD_DIR=str(root))
    run_id = child.stdout.readline().strip()
    assert run_id, child.stderr.read()
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    child.stderr.close()
    return run_id


def make_runs(root: Path, project: str, specs: list[dict]) -> list[str]:
    """Finished runs written by the real API in one child; returns their ids in order."""
    code = f"""
        import json, time, nuboard as nb
        ids = []
        for spec in {specs!r}:
            run = nb.init({project!r}, {QUIET_ARGS}, **spec)
            run.add_scalar("train/loss", 0.5, step=1)
            run.finish()
            ids.append(run.id)
            time.sleep(0.01)
        print(json.dumps(ids))
    """
    return json.loads(run_child(code, NUBOARD_DIR=str(root)).stdout.strip().splitlines()[-1])


class Hung(BaseException):
    """Raised by time_limit(); a BaseException, so that no `except Exception` in the code under
    test can take it for one bad input."""


@contextlib.contextmanager
def time_limit(what: str, seconds: float):
    """Raise Hung if the block runs longer than `seconds` (an endless loop in a reader or an
    importer); SIGALRM, so the main thread only."""
    def expire(signum, frame):
        raise Hung(f"{what} still running after {seconds}s: it hung")
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def small_tmpfs(mnt: Path, size: str):
    """Mount an empty tmpfs of `size` (such as '64k') at mnt, for full-disk tests (root only).

    Skips the test when it cannot be mounted; always unmounts afterwards.
    """
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# -- the command line ----------------------------------------------------------------------------

def cli(root: Path, *args: str, env: dict | None = None, timeout: float = 60
        ) -> subprocess.CompletedProcess:
    """Run the CLI with stdin, stdout and stderr all off the terminal."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", *args],
                          env=child_env(NUBOARD_DIR=str(root), **(env or {})),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def invoke_cli(*args: str) -> Result:
    """Run the CLI in this process with click's CliRunner (stdout and stderr kept apart), for a
    test about what a command says rather than about the process; $NUBOARD_DIR as set now."""
    return CliRunner().invoke(main.cli, list(args), catch_exceptions=False)


class CliResult(NamedTuple):
    """What `run_cli` gives back: the fields of a CompletedProcess a test reads."""
    returncode: int
    stdout: str
    stderr: str


def run_cli(root: Path, *args: str, env: dict | None = None) -> CliResult:
    """Run the CLI in this process with click's CliRunner, as `cli` runs it in a child: stdin
    empty and off the terminal, $NUBOARD_DIR=root, stdout and stderr kept apart. For a test
    about what a command says and writes, not about the process."""
    result = CliRunner().invoke(main.cli, list(args), env={"NUBOARD_DIR": str(root), **(env or {})},
                                catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """The CLI's stderr, checked to be one line and no traceback."""
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


# -- reads of a catalog --------------------------------------------------------------------------

NATURAL_KEYS = {"projects": "name", "runs": "run_id", "artifacts": "name"}


def catalog_rows(catalog) -> dict[str, list[tuple]]:
    """Every table's rows, sorted, with surrogate keys left out and references by name."""
    out = {}
    with catalog.reader.connect() as conn:
        names = {t: dict(conn.execute(text(f"SELECT id, {col} FROM {t}")).all())
                 for t, col in NATURAL_KEYS.items()}
        for table in metadata.sorted_tables:
            refs = {fk.parent.name: fk.column.table.name for fk in table.foreign_keys}
            rows = []
            for row in conn.execute(select(table)).mappings():
                item = []
                for key, value in row.items():
                    if key == "id" and table.c.id.primary_key:
                        continue
                    if table.name == "projects" and key == "changes":   # a count of syncs, not of files
                        continue
                    if key in refs and refs[key] in names:
                        value = names[refs[key]].get(value, ("dangling", value))
                    item.append((key, value))
                rows.append(tuple(item))
            out[table.name] = sorted(rows, key=repr)
    return out


def drop_catalog(catalog) -> None:
    """Remove a project's catalog outright: its SQLite file's folder, or its schema on the server."""
    if catalog.on_server:
        with catalog.writer.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{catalog.schema}" CASCADE')
    else:
        catalog.close()
        shutil.rmtree(catalog.path.parent)


def count(catalog, table: str) -> int:
    """The number of rows in one table of a catalog."""
    with catalog.reader.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar()


def wait_for(check, what: str, timeout: float = 60.0, every: float = 0.05):
    """Poll check() until it returns something true, and return that; fail naming `what`
    after `timeout` seconds (a bound on waiting, never an assertion about speed)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(every)
