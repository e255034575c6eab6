"""Shared fixtures: a fresh root folder per test, and running Python children for real."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A fresh experiments root; $NUBOARD_DIR points at it and RANK variables are cleared."""
    path = tmp_path / "experiments"
    monkeypatch.setenv("NUBOARD_DIR", str(path))
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    return path


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


def make_tree(folder: Path, files: dict) -> Path:
    """Write files (path with '/' -> bytes) under a folder; return the folder."""
    for rel, data in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder


# -- Playwright (pytest-playwright's fixtures, pointed at Debian's Chromium) ---------------------

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args():
    """Debian's Chromium (never a browser Playwright downloads), headless, no network chatter."""
    return {"executable_path": CHROMIUM, "headless": True,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """Playwright's waits evaluate JavaScript, which the viewer's CSP forbids; the XSS test
    opens its own context with the CSP in force."""
    return {**browser_context_args, "bypass_csp": True, "viewport": {"width": 1400, "height": 900}}
