"""Shell completion (docs/cli.md, "Shell completion"): click's protocol run for real in a child
completes project names and run ids from the folders, and `nuboard completion bash` prints a
script bash accepts and that completes a run id when bash runs it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from helpers import QUIET, child_env

import nuboard as nb


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Runs in 'llm' (two) and 'team/vision' (one), one 'llm' run in the trash, an artifact."""
    root = tmp_path_factory.mktemp("comp") / "exp"
    ids = {}
    for project, name in (("llm", "a"), ("llm", "b"), ("team/vision", "c"), ("llm", "gone")):
        with nb.init(project, dir=root, run_name=name, **QUIET) as run:
            pass
        ids[name] = run.id
    trash = root / "llm" / "runs" / ".trash"
    trash.mkdir()
    (root / "llm" / "runs" / ids["gone"]).rename(trash / ids["gone"])
    (root / "llm" / "artifacts" / "best" / "v1").mkdir(parents=True)
    return root, ids


def complete(root, line: str, **env) -> list[str]:
    """What `nuboard` gives bash for the last word of `line` (click's bash_complete protocol):
    the values, in order."""
    words = line.split(" ")
    proc = subprocess.run([sys.executable, "-m", "nuboard.cli.main"], capture_output=True,
                          text=True, timeout=60,
                          env=child_env(NUBOARD_DIR=str(root), _NUBOARD_COMPLETE="bash_complete",
                                        COMP_WORDS=line, COMP_CWORD=str(len(words) - 1), **env))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return [row.split(",", 1)[1] for row in proc.stdout.splitlines() if row]


def test_project_names_complete(tree):
    root, _ = tree
    assert complete(root, "nuboard ls ") == ["llm", "team/vision"]
    assert complete(root, "nuboard export te") == ["team/vision"]
    assert complete(root, "nuboard import tensorboard ./runs --project l") == ["llm"]


def test_dir_option_names_the_folder(tree, tmp_path):
    root, _ = tree
    assert complete(tmp_path, f"nuboard ls --dir {root} ") == ["llm", "team/vision"]
    assert complete(tmp_path, "nuboard ls ") == []        # no experiments folder: nothing


def test_run_ids_complete(tree):
    root, ids = tree
    assert sorted(complete(root, "nuboard rm ")) == sorted([ids["a"], ids["b"], ids["c"]])
    assert sorted(complete(root, "nuboard rm -p llm ")) == sorted([ids["a"], ids["b"]])
    assert complete(root, f"nuboard rm -p llm {ids['a']} ") == [ids["b"]]     # not twice
    assert complete(root, "nuboard trash restore ") == [ids["gone"]]
    assert complete(root, "nuboard artifact show ll") == ["llm/best"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_completion_bash_prints_a_script_bash_runs(tree, tmp_path):
    root, ids = tree
    script = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "completion", "bash"],
                            capture_output=True, text=True, timeout=60, env=child_env())
    assert script.returncode == 0, script.stderr
    (tmp_path / "nuboard.bash").write_text(script.stdout)
    check = subprocess.run(["bash", "-n", str(tmp_path / "nuboard.bash")], capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr
    bin_dir = tmp_path / "bin"                       # `nuboard` on PATH, this checkout's
    bin_dir.mkdir()
    (bin_dir / "nuboard").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nuboard.cli.main "$@"\n')
    (bin_dir / "nuboard").chmod(0o755)
    proc = subprocess.run(
        ["bash", "--norc", "-c", f'source "{tmp_path}/nuboard.bash"; COMP_WORDS=(nuboard rm -p llm "");'
         ' COMP_CWORD=4; _nuboard_completion nuboard; printf "%s\\n" "${COMPREPLY[@]}"'],
        capture_output=True, text=True, timeout=60,
        env=child_env(NUBOARD_DIR=str(root), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == sorted([ids["a"], ids["b"]])


def test_completion_zsh_and_fish_name_the_protocol():
    for shell in ("zsh", "fish"):
        out = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "completion", shell],
                             capture_output=True, text=True, timeout=60, env=child_env())
        assert out.returncode == 0 and f"_NUBOARD_COMPLETE={shell}_complete" in out.stdout
