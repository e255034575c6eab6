"""--read-only refuses every edit (issue 30, item 5): with --edit-artifacts it is a usage error.

`nuboard up --read-only --edit-artifacts` used to serve the artifact forms: New version and
Unlink showed, an add answered 201 and an unlink moved the version. The two flags contradict
each other, so they are refused together, by the command (exit 2) and by create_app.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env, make_tree
from helpers_http import RemoteViewer

import nuboard as nb
from nuboard.artifacts import list_versions


@pytest.fixture
def corpus(root, tmp_path) -> Path:
    """datasets/corpus:v1, a reference to a small folder; the folder."""
    data = make_tree(tmp_path / "data", {"a.bin": b"1"})
    nb.add_artifact("datasets", "corpus", str(data), reference=True, type="dataset")
    return data


def test_read_only_with_edit_artifacts_is_a_usage_error_and_serves_nothing(root, corpus):
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                             "--port", "0", "--read-only", "--edit-artifacts"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:           # it serves: the flags were taken together
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"nuboard up --read-only --edit-artifacts served: {out!r}")
    assert proc.returncode == 2
    assert "serving" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "--read-only refuses every edit" in lines[0] and "not both" in lines[0]


def test_create_app_refuses_both(root, corpus):
    from nuboard.web.app import create_app
    with pytest.raises(ValueError, match="read_only=True refuses every edit.*not both"):
        create_app(root, read_only=True, edit_artifacts=True)


def test_a_read_only_viewer_shows_and_accepts_no_artifact_edit(root, corpus):
    """Over real HTTP: no New version or Unlink, and every artifact edit route is absent."""
    with RemoteViewer(root, "--read-only", project="datasets") as v:
        for page in ("/p/datasets/.artifacts", "/p/datasets/.artifact/corpus/v1"):
            text = v.get(page).text
            assert "New version" not in text and "Unlink" not in text
        added = v.post("/api/p/datasets/.artifacts/add",
                       {"project": "datasets", "name": "corpus", "path": str(corpus),
                        "store": "reference", "type": "dataset", "description": "again"},
                       token=False)              # its pages carry no form, so no token
        assert added.status in (403, 404)
        assert v.post("/p/datasets/.artifact/corpus/v1/unlink", {}, token=False).status in (403, 404)
    with RemoteViewer(root, "--edit-artifacts", project="datasets") as v:   # the flag alone
        assert "Unlink version" in v.get("/p/datasets/.artifact/corpus/v1").text
    assert list_versions("datasets", "corpus", dir=root) == [1]
