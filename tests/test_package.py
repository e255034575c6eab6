"""The package as users get it: a built wheel in a fresh venv, and the checkout (editable)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from nuboard.layout import resource_dir

REPO = Path(__file__).resolve().parent.parent


def test_packaged_folders_resolve_in_the_checkout():
    """In a checkout (and an editable install) templates/, static/, migrations/ sit at the top."""
    for name in ("templates", "static", "migrations"):
        assert resource_dir(name) == REPO / name and resource_dir(name).is_dir()


def test_wheel_installs_into_a_fresh_venv_and_works(tmp_path):
    """The built wheel carries the packaged folders, installs, logs a run and reads it back."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)],
                   cwd=REPO, check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("nuboard-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        import nuboard as nb
        from nuboard.layout import resource_dir
        assert sys.prefix in nb.__file__, nb.__file__
        for name in ("templates", "static", "migrations"):
            folder = resource_dir(name)
            assert folder.parent == Path(nb.__file__).parent, folder
            assert (folder / "README.md").is_file(), folder
        with nb.init("wheel", config={"lr": 0.1}) as run:
            for step in range(10):
                run.add_scalar("loss", 1.0 / (step + 1), step=step)
        print(json.dumps(nb.read_scalars(run.path)["loss"].steps.tolist()))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUBOARD_DIR"] = str(tmp_path / "exp")
    out = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(list(range(10)))
    version = subprocess.run([str(venv / "bin" / "nuboard"), "--version"], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and "nuboard, version" in version.stdout
    up = subprocess.Popen([str(venv / "bin" / "nuboard"), "up", str(tmp_path / "exp"), "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=tmp_path)
    try:
        url = up.stdout.readline().split(" at ")[1].split()[0]
        import urllib.request
        for path, needle in (("p/wheel", b"run"), ("static/nuboard.js", b"uPlot"),
                             ("static/htmx-2.0.11.min.js", b"htmx")):
            with urllib.request.urlopen(url + path, timeout=30) as reply:
                assert reply.status == 200 and needle in reply.read(), path
    finally:
        up.send_signal(signal.SIGINT)
        up.communicate(timeout=30)
    assert up.returncode == 0


def test_house_checks_hold():
    """../shared/tools/check_house.py (import stays light, faces on top, README and CI) is quiet."""
    tool = REPO.parent / "shared" / "tools" / "check_house.py"
    if not tool.is_file():
        import pytest
        pytest.skip(f"{tool} is not beside this checkout")
    out = subprocess.run([sys.executable, str(tool), str(REPO)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "house checks: all hold"


def test_example_script_logs_a_run_and_says_where(tmp_path):
    """The example training script logs a run and prints where it is."""
    env = dict(os.environ, NUBOARD_DIR=str(tmp_path / "exp"))
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "example_train.py"), "--steps", "300"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    where = out.stdout.strip().splitlines()[-1].removeprefix("the run is in ")
    assert (Path(where) / "run.json").is_file() and "logged 603 points" in out.stdout
