"""A run's page lists every version made from it: those it added itself, those promoted from
its folder afterwards, in this project or another (the catalog's lineage, as the Timeline)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import QUIET, child_env
from helpers_http import Viewer, visible_text

import nuboard as nb
from nuboard.artifacts.api import promote_run_path

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


def test_versions_made_from_a_run_are_its_outputs(root):
    with nb.init("proj", dir=root, run_name="trainer", **QUIET) as run:
        run.add_scalar("train/loss", 1.0, step=0)
        ckpt = run.path / "files" / "ckpt"
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "weights.bin").write_bytes(b"w" * 64)
        run.add_artifact("own", str(ckpt / "weights.bin"), type="checkpoint")
    promote_run_path(run.path, "files/ckpt", "promoted")
    done = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "artifact", "add",
                           "proj/cli-made", str(ckpt), "--copy", "--type", "model",
                           "--description", "x", "--dir", str(root), "--no-input"],
                          capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    with Viewer(root) as viewer:
        data = viewer.get(f"/api/p/proj/.run/{run.id}").json()
        page = viewer.get(f"/p/proj/.run/{run.id}").text
    outputs = {(o["project"], o["name"], o["version"]) for o in data["outputs"]}
    assert outputs == {("proj", "own", 1), ("proj", "promoted", 1), ("proj", "cli-made", 1)}
    outs = visible_text(page.split("<h3>Outputs</h3>", 1)[1].split("</section>", 1)[0])
    for label in ("proj/own:v1", "proj/promoted:v1", "proj/cli-made:v1"):
        assert label in outs


def test_the_files_tab_answers_while_the_catalog_is_down(root, monkeypatch):
    """The Files tab reads only the run folder: with the catalog's server gone it still lists
    the files, without the colour box (which needs the catalog); the Overview answers 503."""
    run = nb.init("llm", dir=root, run_name="down", **QUIET)
    run.add_scalar("train/loss", 0.5, step=0)
    run.finish()
    monkeypatch.setenv("NUBOARD_CATALOG_URL", "postgresql+psycopg://nuboard@127.0.0.1:1/nuboard")
    with Viewer(root) as viewer:
        files = viewer.get(f"/p/llm/.run/{run.id}/files/")
        overview = viewer.get(f"/p/llm/.run/{run.id}")
    assert files.status == 200 and "run.json" in files.text
    assert 'class="run-colour"' not in files.text
    assert overview.status == 503
