"""The package as users get it: a built wheel in a fresh venv, and the checkout (editable)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nuboard.files.layout import resource_dir

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
    see_our_packages(python)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        import nuboard as nb
        from nuboard.files.layout import resource_dir
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
        for path, needle in (("p/wheel", b"run"), ("static/charts.js", b"uPlot"),
                             ("static/htmx-2.0.11.min.js", b"htmx")):
            with urllib.request.urlopen(url + path, timeout=30) as reply:
                assert reply.status == 200 and needle in reply.read(), path
    finally:
        up.send_signal(signal.SIGINT)
        up.communicate(timeout=30)
    assert up.returncode == 0


@pytest.mark.slow
def test_the_wheel_test_passes_when_the_suite_runs_in_a_venv(tmp_path):
    """The README's set-up in a fresh venv: the package and what the wheel test needs installed
    there, then the wheel test run by that venv's pytest.

    The venv is made from a Python that lacks the dependencies when this machine has one (such
    as Debian's /usr/bin/python3 beside a Python that has them), as on a new user's machine:
    then they live in the venv alone, and a venv made inside it cannot find them in its base.
    """
    outer = tmp_path / "outer"
    subprocess.run([bare_python(), "-m", "venv", str(outer)], check=True, timeout=300)
    python = outer / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{outer / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                              "--disable-pip-version-check", "-e", str(REPO), "pytest", "build",
                              "hatchling"], capture_output=True, text=True, env=env, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import flask, nuboard; print(flask.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert where.returncode == 0 and str(outer) in where.stdout, where.stdout + where.stderr
    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_package.py", "-k", "wheel_installs_into_a_fresh_venv"],
                         cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout


def bare_python() -> str:
    """A Python >= 3.10 with venv on this machine that cannot import flask, else this one."""
    import shutil
    probe = textwrap.dedent("""
        import sys, venv, ensurepip
        assert sys.version_info >= (3, 10)
        try:
            import flask
        except ImportError:
            sys.exit(0)
        sys.exit(1)
    """)
    for name in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")):
        if name and os.path.isfile(name):
            ok = subprocess.run([name, "-I", "-c", probe], capture_output=True, timeout=60)
            if ok.returncode == 0:
                return name
    return sys.executable


def see_our_packages(python: Path) -> None:
    """Let a new venv import the packages of the interpreter running the tests (the wheel's deps).

    `--system-site-packages` shows a venv its *base* interpreter's packages: when the tests run
    in a venv themselves, that is not where flask and the others are. A .pth file in the new
    venv names the running interpreter's site-packages (sysconfig's purelib and platlib); they
    come after the new venv's own, so the wheel installed there is the nuboard it imports.
    """
    import sysconfig
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    theirs = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (Path(theirs) / "_outer_site_packages.pth").write_text("".join(f"{p}\n" for p in ours))


@pytest.mark.serial          # times `import nuboard`: run alone, after the parallel part (docs/testing.md)
def test_house_checks_hold():
    """../shared/tools/check_house.py (import stays light, faces on top, README and CI) is quiet."""
    tool = REPO.parent / "shared" / "tools" / "check_house.py"
    if not tool.is_file():
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
