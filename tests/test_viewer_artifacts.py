"""The Artifacts pages and their editing routes over real HTTP, on versions and runs written
by the real API: the list, a version, its files, and New version / Unlink / Restore with
--edit-artifacts (rows 15, 18 and 20 of reliability.md on every editing route)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from helpers import QUIET, child_env, make_tree
from helpers_http import Viewer, visible_text

import nuboard as nb
from nuboard.artifacts import list_versions, unlink_version

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def world(root, tmp_path):
    """datasets/corpus v1 (outside a run) and v2 (by a run of llm), used by two llm runs; a
    checkpoint copied by one of them; a version of 2,500 files."""
    data = make_tree(tmp_path / "data", {f"part-{i}.bin": bytes(10 + i) for i in range(3)})
    nb.add_artifact("datasets", "corpus", str(data), type="dataset", reference=True,
                    metadata={"rows": 3}, description="first cut", dir=root)
    make_tree(data, {"part-3.bin": b"more"})
    with nb.init("llm", dir=root, run_name="prepare", **QUIET) as prep:
        prep.add_artifact("datasets/corpus", str(data), type="dataset", reference=True,
                          description="second cut")
    users = []
    for i in range(2):
        with nb.init("llm", dir=root, run_name=f"train-{i}", **QUIET) as run:
            run.use_artifact("datasets/corpus:v2")
            run.add_scalar("train/loss", 1.0, step=0)
            if i == 0:
                ckpt = Path(run.path) / "files" / "ckpt.pt"
                ckpt.parent.mkdir(exist_ok=True)
                ckpt.write_bytes(b"weights" * 100)
                run.add_artifact("model", str(ckpt), type="checkpoint", metadata={"step": 10})
        users.append(run.id)
    many = make_tree(tmp_path / "many", {f"d{i % 7}/img-{i:05d}.png": b"x" for i in range(2500)})
    nb.add_artifact("datasets", "images", str(many), type="dataset", reference=True, dir=root)
    return {"data": data, "prepare": prep.id, "users": users, "many": many}


def test_the_list_newest_first_and_a_projects_view(root, world):
    with Viewer(root) as v:
        every = v.get("/api/artifacts").json()["artifacts"]
        assert [f"{a['project']}/{a['name']}" for a in every] == \
            ["datasets/images", "llm/model", "datasets/corpus"]
        corpus = every[2]
        assert corpus["latest"] == 2 and corpus["versions"] == 2 and corpus["type"] == "dataset"
        llm = v.get("/api/p/llm/.artifacts").json()["artifacts"]
        assert {(a["project"], a["name"], a["used_from"]) for a in llm} == \
            {("llm", "model", None), ("datasets", "corpus", "llm")}
        page = v.get("/p/llm/.artifacts")
        assert "datasets/corpus" in visible_text(page.text) and "ago" in page.text
        assert "New version" not in page.text


def test_a_version_page(root, world):
    with Viewer(root) as v:
        info = v.get("/api/p/datasets/.artifact/corpus/v2").json()
        assert info["storage"] == "reference" and info["files"] == 4 and info["used_count"] == 2
        assert info["producer"]["run_id"] == world["prepare"]
        assert {r["run_id"] for r in info["used_by"]} == set(world["users"])
        assert info["where"] == str(world["data"].resolve())
        page = v.get("/p/datasets/.artifact/corpus/v2").text
        assert 'run.use_artifact("datasets/corpus:v2")' in page
        assert "train-0" in page and "prepare" in page
        first = v.get("/p/datasets/.artifact/corpus/v1").text
        assert "Logged outside a run" in first and "rows" in first
        assert v.get("/p/datasets/.artifact/corpus/v9").status == 404
        assert v.get("/p/datasets/.artifact/..%2f..%2fetc/v1").status in (400, 404)
        assert v.get("/p/datasets/.artifact/corpus").status == 302


def test_files_a_thousand_at_a_time_with_a_filter(root, world):
    with Viewer(root) as v:
        base = "/p/datasets/.artifact/images/v1/files"
        first = v.get(f"/api{base}").json()
        assert len(first["files"]) == 1000 and first["next"] == 1000
        assert first["files"][0]["path"] == "d0/img-00000.png"
        rest = v.get(f"/api{base}?offset=2000").json()
        assert len(rest["files"]) == 500 and rest["next"] is None
        part = v.get(f"{base}?offset=1000", headers={"HX-Request": "true"}).text
        assert part.count('class="file-row"') == 1000 and 'id="files-more"' in part
        found = v.get(f"/api{base}?q=img-0123").json()
        assert sorted(f["path"] for f in found["files"]) == sorted(
            f"d{i % 7}/img-{i:05d}.png" for i in range(1230, 1240))
        page = v.get("/p/datasets/.artifact/images/v1").text
        assert page.count('class="file-row"') == 1000 and "Show more" in page


def test_an_unlinked_version_is_marked_where_it_was_used(root, world):
    unlink_version("datasets", "corpus", 2, dir=root)
    with Viewer(root) as v:
        assert v.get("/api/artifacts").json()["artifacts"][-1]["latest"] == 1
        gone = v.get("/api/artifacts?unlinked=1").json()["artifacts"]
        assert [(a["name"], a["numbers"]) for a in gone] == [("corpus", [2])]
        assert "(unlinked)" in v.get("/p/datasets/.artifact/corpus/v2").text
        run = v.get(f"/p/llm/.run/{world['users'][1]}").text
        assert "datasets/corpus:v2" in run and "(unlinked)" in run


def test_editing_routes_do_not_exist_without_the_flag(root, world):
    with Viewer(root) as v:
        assert "New version" not in v.get("/p/datasets/.artifact/corpus/v2").text
        assert "Unlink" not in v.get("/p/datasets/.artifact/corpus/v2").text
        run_files = v.get(f"/p/llm/.run/{world['users'][0]}/files/files/").text
        assert "New artifact version" not in run_files
        for path in ("/p/datasets/.artifacts/new", "/p/datasets/.artifact/corpus/v2/unlink"):
            assert v.get(path).status in (400, 404)
        for path in ("/p/datasets/.artifacts/add", "/p/datasets/.artifacts/check",
                     "/p/datasets/.artifact/corpus/v2/unlink",
                     "/p/datasets/.artifact/corpus/unlink-all",
                     "/p/datasets/.artifact/corpus/v2/restore"):
            assert v.post(path, {"name": "x"}).status in (400, 404, 405)
    assert list_versions("datasets", "corpus", dir=root) == [1, 2]


def _fields(**kw) -> dict:
    fields = {"project": "datasets", "name": "corpus", "path": "", "store": "reference",
              "type": "dataset", "description": "a new cut"}
    fields.update(kw)
    return fields


def test_new_version_checks_each_field_as_typed(root, world, tmp_path):
    (root / "shared").mkdir()
    fresh = make_tree(root / "shared" / "fresh", {"a.txt": b"a", "b/c.txt": b"cc"})
    with Viewer(root, edit_artifacts=True) as v:
        check = "/api/p/datasets/.artifacts/check"
        typo = v.post(check, _fields(path=str(fresh) + "x")).json()
        assert "does not exist" in typo["problems"]["path"]
        good = v.post(check, _fields(path="shared/fresh")).json()     # relative to the root
        assert good["ok"] and good["files"] == 2 and good["bytes"] == 3
        assert good["notes"]["name"] == "will be corpus:v3"
        home = v.post(check, _fields(path="~/" + os.path.relpath(fresh, Path.home()))).json() \
            if str(fresh).startswith(str(Path.home())) else good
        assert home["ok"]
        os.environ["NUBOARD_TEST_DATA"] = str(root / "shared")
        try:
            assert v.post(check, _fields(path="$NUBOARD_TEST_DATA/fresh")).json()["ok"]
        finally:
            del os.environ["NUBOARD_TEST_DATA"]
        url = v.post(check, _fields(path="http://169.254.169.254/latest")).json()
        assert "URL" in url["problems"]["path"]
        inside = v.post(check, _fields(path="datasets/artifacts")).json()
        assert "artifacts" in inside["problems"]["path"]
        around = v.post(check, _fields(path="datasets")).json()
        assert "artifacts" in around["problems"]["path"]
        same = v.post(check, _fields(path=str(world["data"]))).json()
        assert same["same_as"] == 2
        bad = v.post(check, _fields(name="", type="model-ish", description=" ",
                                    meta_key_0="rows", meta_kind_0="number",
                                    meta_value_0="many")).json()
        assert set(bad["problems"]) >= {"name", "type", "description", "metadata"}
        page = v.post("/p/datasets/.artifacts/check", _fields(path="shared/fresh"),
                      headers={"HX-Request": "true"}).text
        assert "✓ path: 2 files, 3 B" in page


def test_the_ten_thousand_file_warning(root, tmp_path):
    big = make_tree(tmp_path / "big", {f"f{i:05d}": b"" for i in range(10_000)})
    nb.add_artifact("datasets", "seed", str(big / "f00000"), dir=root)
    with Viewer(root, edit_artifacts=True) as v:
        found = v.post("/api/p/datasets/.artifacts/check",
                       _fields(name="big", path=str(big))).json()
        assert found["files"] == 10_000 and "10,000 files" in found["warnings"][0]


def test_add_a_reference_then_see_it_listed_and_in_the_cli(root, world, tmp_path):
    fresh = make_tree(tmp_path / "fresh", {"x.bin": b"123"})
    with Viewer(root, edit_artifacts=True) as v:
        review = v.post("/p/datasets/.artifacts/review", _fields(
            path=str(fresh), meta_key_0="rows", meta_kind_0="number", meta_value_0="1200000",
            meta_key_1="dedup", meta_kind_1="yes/no", meta_value_1="yes",
            meta_key_2="splits", meta_kind_2="json", meta_value_2='["train"]', checksum="1"))
        assert review.status == 200 and 'id="add-version"' in review.text
        assert "(new version v3)" in review.text
        added = v.post("/p/datasets/.artifacts/add", _fields(
            path=str(fresh), meta_key_0="rows", meta_kind_0="number", meta_value_0="1200000",
            meta_key_1="dedup", meta_kind_1="yes/no", meta_value_1="yes",
            meta_key_2="splits", meta_kind_2="json", meta_value_2='["train"]', checksum="1"))
        assert added.status == 303
        assert added.headers["location"].endswith("/p/datasets/.artifact/corpus/v3?added=1")
        info = v.get("/api/p/datasets/.artifact/corpus/v3").json()
        assert info["metadata"] == {"rows": 1200000, "dedup": True, "splits": ["train"]}
        assert info["storage"] == "reference" and info["producer"] is None
        manifest = json.loads((root / "datasets" / "artifacts" / "corpus" / "v3" /
                               "manifest.json").read_text())
        assert manifest["files"][0]["sha256"] == hashlib.sha256(b"123").hexdigest()
        assert v.get("/api/artifacts").json()["artifacts"][0]["name"] == "corpus"
    listed = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "artifact", "ls",
                             "datasets", "--json", "--dir", str(root)], capture_output=True,
                            text=True, env=child_env(), timeout=60)
    assert any(r["name"] == "corpus" and r["version"] == 3 for r in json.loads(listed.stdout))


def test_same_as_latest_needs_add_anyway(root, world):
    with Viewer(root, edit_artifacts=True) as v:
        review = v.post("/p/datasets/.artifacts/review", _fields(path=str(world["data"])))
        assert 'id="add-anyway"' in review.text and 'id="add-version"' not in review.text
        refused = v.post("/p/datasets/.artifacts/add", _fields(path=str(world["data"])))
        assert refused.status == 400 and "Add anyway" in refused.text
        assert list_versions("datasets", "corpus", dir=root) == [1, 2]
        added = v.post("/p/datasets/.artifacts/add", _fields(path=str(world["data"]), anyway="1"))
        assert added.status == 303
    assert list_versions("datasets", "corpus", dir=root) == [1, 2, 3]


def _tree_state(folder: Path) -> list:
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in folder.rglob("*"))


def test_a_version_from_a_runs_file_and_folder(root, world):
    run_id = world["users"][0]
    run_dir = root / "llm" / "runs" / run_id
    (run_dir / "files" / "eval").mkdir()
    (run_dir / "files" / "eval" / "scores.json").write_text('{"acc": 0.5}')
    before = _tree_state(run_dir)
    with Viewer(root, edit_artifacts=True) as v:
        files = v.get(f"/p/llm/.run/{run_id}/files/files/").text
        assert "New artifact version" in files and "◆ artifact" in files
        form = v.get(f"/p/llm/.artifacts/new?run={run_id}&path=files/ckpt.pt").text
        assert 'value="copy" checked' in form and "readonly" in form
        added = v.post("/p/llm/.artifacts/add", {"project": "datasets", "run": run_id,
                                                 "name": "best", "path": "files/ckpt.pt",
                                                 "store": "copy", "type": "checkpoint",
                                                 "description": "the best checkpoint"})
        assert added.status == 303 and "/p/llm/.artifact/best/v1" in added.headers["location"]
        info = v.get("/api/p/llm/.artifact/best/v1").json()
        assert info["storage"] == "copy" and info["producer"]["run_id"] == run_id
        folder = v.post("/p/llm/.artifacts/add", {"run": run_id, "name": "scores",
                                                  "path": "files/eval", "store": "reference",
                                                  "type": "report", "description": "eval"})
        assert folder.status == 303
        ref = v.get("/api/p/llm/.artifact/scores/v1").json()
        assert ref["base"] == "project" and ref["location"] == f"runs/{run_id}/files/eval"
        for evil in ("../../../datasets/artifacts", "..%2f..%2f..%2fetc", "/etc/passwd",
                     "files/../../other", "files\\..\\..\\x"):
            refused = v.post("/api/p/llm/.artifacts/add", {"run": run_id, "name": "evil",
                                                           "path": evil, "store": "copy",
                                                           "type": "other", "description": "x"})
            assert refused.status == 400, evil
    assert _tree_state(run_dir) == before
    assert list_versions("llm", "evil", dir=root) == []


def test_unlink_unlink_all_and_restore(root, world):
    with Viewer(root, edit_artifacts=True) as v:
        confirm = v.get("/p/datasets/.artifact/corpus/v2/unlink")
        assert confirm.status == 200 and "No file is deleted" in confirm.text
        assert v.post("/p/datasets/.artifact/corpus/v2/unlink", {}, token=False).status == 403
        assert v.post("/p/datasets/.artifact/corpus/v2/unlink", {},
                      origin="http://evil.example").status == 403
        assert list_versions("datasets", "corpus", dir=root) == [1, 2]
        done = v.post("/p/datasets/.artifact/corpus/v2/unlink", {})
        assert done.status == 303 and "unlinked=1" in done.headers["location"]
        assert list_versions("datasets", "corpus", dir=root) == [1]
        assert world["data"].is_dir() and len(list(world["data"].iterdir())) == 4
        assert v.post("/p/datasets/.artifact/corpus/v2/unlink", {}).status == 409
        assert v.post("/p/datasets/.artifact/corpus/v2/restore", {}).status == 303
        assert list_versions("datasets", "corpus", dir=root) == [1, 2]
        assert v.post("/p/datasets/.artifact/corpus/v2/restore", {}).status == 409
        assert "Unlink all" in v.get("/p/datasets/.artifact/corpus/v2").text
        assert v.post("/p/datasets/.artifact/corpus/unlink-all", {}).status == 303
        assert list_versions("datasets", "corpus", dir=root) == []
        assert list_versions("datasets", "corpus", unlinked=True, dir=root) == [1, 2]
        assert v.get("/api/artifacts?unlinked=1").json()["artifacts"][0]["numbers"] == [2, 1]


def test_concurrent_adds_get_distinct_numbers(root, world, tmp_path):
    sources = [make_tree(tmp_path / f"src{i}", {"f": bytes([i]) * (i + 1)}) for i in range(6)]
    with Viewer(root, edit_artifacts=True) as v:
        replies: list = []

        def add(src: Path) -> None:
            replies.append(v.post("/api/p/datasets/.artifacts/add",
                                  _fields(name="race", path=str(src))))

        threads = [threading.Thread(target=add, args=(s,)) for s in sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.status for r in replies) == [201] * 6
        assert sorted(r.json()["added"] for r in replies) == \
            [f"datasets/race:v{i}" for i in range(1, 7)]
    assert list_versions("datasets", "race", dir=root) == list(range(1, 7))


def test_names_and_paths_users_wrote_are_escaped(root, tmp_path):
    evil = '"><img src=x onerror=alert(1)>'
    data = make_tree(tmp_path / "d", {"<script>alert(2)</script>.txt": b"x"})
    nb.add_artifact("datasets", "safe-name", str(data), reference=True, description=evil,
                    metadata={evil: evil}, dir=root)
    with Viewer(root, edit_artifacts=True) as v:
        page = v.get("/p/datasets/.artifact/safe-name/v1").text
        assert "<img src=x" not in page and "<script>alert(2)" not in page
        assert "&lt;script&gt;alert(2)&lt;/script&gt;.txt" in page
        check = v.post("/p/datasets/.artifacts/check",
                       _fields(name=evil, path=str(data)), headers={"HX-Request": "true"}).text
        assert "<img src=x" not in check
        assert v.get("/p/datasets/.artifacts/new?name=" + quote(evil)).text.count("<img src=x") == 0


def test_a_copy_is_compared_by_hash_at_review_not_while_typing(root, world):
    run_id = world["users"][0]
    fields = {"run": run_id, "name": "model", "path": "files/ckpt.pt", "store": "copy",
              "type": "checkpoint", "description": "again"}
    with Viewer(root, edit_artifacts=True) as v:
        typing = v.post("/api/p/llm/.artifacts/check", fields).json()
        assert typing["ok"] and typing["same_as"] is None          # no file read per keystroke
        review = v.post("/p/llm/.artifacts/review", fields)
        assert 'id="add-anyway"' in review.text and "same as model:v1" in review.text


def test_a_bad_metadata_row_count_is_not_an_error(root, world):
    with Viewer(root, edit_artifacts=True) as v:
        for rows in ("many", "-1", "1000000000"):
            reply = v.post("/api/p/datasets/.artifacts/check",
                           _fields(path=str(world["data"]), meta_rows=rows))
            assert reply.status == 200 and reply.json()["ok"], rows
