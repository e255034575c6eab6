"""Deleting runs to the trash from the viewer (`nuboard up --edit-runs`) and the command line: the
confirmation names the versions the run made and used; the folder moves whole to
runs/.trash/ (every file byte-identical) and leaves the Runs page and `nuboard ls`; a restore
brings it back whole and indexed; a run whose files a version references, or that still runs
(a fresh heartbeat), is kept with a clear message; a restore over a run made again with its id
is refused; the POSTs are refused without the flag, the token or our Origin."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import QUIET, loss_run, run_cli, write_run
from helpers_http import AppViewer, visible_text

import nuboard as nb


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under a folder, by its path inside, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def ls_ids(root, *args) -> list[str]:
    done = run_cli(root, "ls", "llm", "--json", *args)
    assert done.returncode == 0, done.stderr
    return [r["id"] for r in json.loads(done.stdout)]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """llm: `victim` used a data version and made a model version (a copy); `pinned` has a
    file that a pinned-ckpt version references; `other` is plain. (root, {name: run id or
    the version's 'llm/name:vN'})."""
    root = tmp_path_factory.mktemp("trash") / "experiments"
    data = tmp_path_factory.mktemp("data") / "train.txt"
    data.write_text("tokens\n")
    used = nb.add_artifact("llm", "data", data, type="dataset", dir=root).spec
    with nb.init("llm", dir=root, run_name="victim", **QUIET) as run:
        run.use_artifact(used)
        for step in range(5):
            run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
        ckpt = Path(run.path) / "files" / "model.bin"
        ckpt.parent.mkdir(exist_ok=True)
        ckpt.write_bytes(os.urandom(2048))
        made = run.add_artifact("model", ckpt, type="model").spec
    ids = {"victim": run.id, "used": used, "made": made}
    with nb.init("llm", dir=root, run_name="pinned", **QUIET) as run:
        pinned = Path(run.path) / "files" / "best.ckpt"
        pinned.parent.mkdir(exist_ok=True)
        pinned.write_bytes(b"weights")
    ids["pin"] = nb.add_artifact("llm", "pinned-ckpt", pinned, reference=True, dir=root).spec
    ids["pinned"] = run.id
    ids["other"] = loss_run(root, name="other")
    return root, ids


def test_delete_confirm_trash_and_restore_whole(project):
    root, ids = project
    victim = ids["victim"]
    folder = root / "llm" / "runs" / victim
    before = snapshot(folder)
    with AppViewer(root, edit_runs=True) as viewer:
        page = viewer.get(f"/p/llm/.delete?runs={victim}")
        assert page.status == 200
        text = visible_text(page.text)
        assert ids["made"] in text and ids["used"] in text
        assert 'id="confirm-delete"' in page.text and "runs/.trash/" in text
        plan = viewer.get(f"/api/p/llm/.delete?runs={victim}").json()
        assert plan["allowed"] and plan["runs"][0]["made"][0]["name"] == "model"

        moved = viewer.post("/p/llm/.delete", {"runs": victim})
        assert moved.status == 303 and "/p/llm/.trash" in moved.headers["location"]
        trashed = root / "llm" / "runs" / ".trash" / victim
        assert not folder.exists() and snapshot(trashed) == before
        assert victim not in ls_ids(root) and victim not in viewer.get("/p/llm").text
        assert viewer.get(f"/p/llm/.run/{victim}").status == 404
        listing = viewer.get("/api/p/llm/.trash").json()
        assert [(r["id"], r["name"]) for r in listing["runs"]] == [(victim, "victim")]
        assert 'class="restore-run"' in viewer.get("/p/llm/.trash").text

        back = viewer.post("/p/llm/.trash/restore", {"run": victim})
        assert back.status == 303 and back.headers["location"].endswith(f"/.run/{victim}")
        assert snapshot(folder) == before and not trashed.exists()
        assert victim in ls_ids(root) and victim in viewer.get("/p/llm").text
        assert viewer.get(f"/api/p/llm/.run/{victim}").json()["name"] == "victim"
        again = viewer.post("/api/p/llm/.trash/restore", {"run": victim})
        assert again.status == 404 and "not in the trash" in again.json()["error"]


def test_a_referenced_or_running_run_is_kept(project):
    root, ids = project
    pinned = ids["pinned"]
    with AppViewer(root, edit_runs=True) as viewer:
        page = viewer.get(f"/p/llm/.delete?runs={pinned}")
        assert ids["pin"] in visible_text(page.text)
        assert 'id="confirm-delete"' not in page.text
        refused = viewer.post("/api/p/llm/.delete", {"runs": f"{ids['other']},{pinned}"})
        assert refused.status == 409 and ids["pin"] in refused.json()["error"]
        assert (root / "llm" / "runs" / pinned).is_dir()
        assert (root / "llm" / "runs" / ids["other"]).is_dir()        # none of them moved

        run = nb.init("llm", dir=root, run_name="live", **QUIET)
        try:
            page = viewer.get(f"/p/llm/.delete?runs={run.id}")
            assert "still running" in visible_text(page.text)
            refused = viewer.post("/p/llm/.delete", {"runs": run.id})
            assert refused.status == 409
            assert "still running (its heartbeat is fresh)" in visible_text(refused.text)
            assert Path(run.path).is_dir()
        finally:
            run.finish()


def test_restore_over_a_run_made_again_is_refused(tmp_path):
    root = tmp_path / "experiments"
    run_id = loss_run(root, name="first")
    with AppViewer(root, edit_runs=True) as viewer:
        assert viewer.post("/api/p/llm/.delete", {"runs": run_id}).json()["moved"] == [run_id]
        loss_run(root, name="second", run_id=run_id)
        refused = viewer.post("/api/p/llm/.trash/restore", {"run": run_id})
        assert refused.status == 409 and "exists again" in refused.json()["error"]
    assert (root / "llm" / "runs" / ".trash" / run_id).is_dir()
    assert [r["name"] for r in json.loads(run_cli(root, "ls", "--json").stdout)] == ["second"]


def test_edits_are_refused_without_the_flag_the_token_or_our_origin(project):
    root, ids = project
    other = ids["other"]
    with AppViewer(root) as plain:
        for reply in (plain.get(f"/p/llm/.delete?runs={other}"),
                      plain.post("/p/llm/.delete", {"runs": other}),
                      plain.post("/p/llm/.trash/restore", {"run": other})):
            assert reply.status == 403 and "--edit-runs" in visible_text(reply.text)
        trash = plain.get("/p/llm/.trash")
        assert trash.status == 200 and "restore-run" not in trash.text
    with AppViewer(root, edit_runs=True) as viewer:
        assert viewer.post("/p/llm/.delete", {"runs": other}, token=False).status == 403
        foreign = viewer.post("/p/llm/.delete", {"runs": other}, origin="http://evil.example")
        assert foreign.status == 403
    assert (root / "llm" / "runs" / other).is_dir()


def test_the_command_line_trash(tmp_path):
    root = tmp_path / "experiments"
    run_id = loss_run(root, name="cli")
    before = snapshot(root / "llm" / "runs" / run_id)
    done = run_cli(root, "rm", run_id, "--trash", "--yes")
    assert done.returncode == 0, done.stderr
    assert ls_ids(root) == [] and snapshot(root / "llm" / "runs" / ".trash" / run_id) == before
    listed = json.loads(run_cli(root, "trash", "ls", "--json").stdout)
    assert [(r["project"], r["id"], r["name"]) for r in listed] == [("llm", run_id, "cli")]
    assert run_cli(root, "reindex", "llm").stdout.startswith("llm: 0 runs indexed")
    done = run_cli(root, "trash", "restore", run_id)
    assert done.returncode == 0 and f"Restored llm/{run_id}" in done.stdout
    assert ls_ids(root) == [run_id] and snapshot(root / "llm" / "runs" / run_id) == before
    missing = run_cli(root, "trash", "restore", run_id)
    assert missing.returncode == 1 and "not in the trash" in missing.stderr


def test_a_run_folder_that_is_a_link_goes_to_the_trash_and_back_as_the_link(tmp_path):
    """A lab that keeps a run's folder on another disk links it into runs/: the link moves,
    never what it points to, and a restore makes the link again (a rename of a link cannot
    take the place of the empty folder that claims the id)."""
    from nuboard.files.run_trash import list_trash, move_to_trash, restore_from_trash
    root = tmp_path / "experiments"
    real = Path(write_run(root, "llm", {"train/loss": [(0, 1.0)]}, run_name="far"))
    elsewhere = tmp_path / "other-disk" / real.name
    elsewhere.parent.mkdir()
    real.rename(elsewhere)
    real.symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in elsewhere.iterdir())
    move_to_trash(root, "llm", real.name)
    trashed = root / "llm" / "runs" / ".trash" / real.name
    assert trashed.is_symlink() and not real.exists() and elsewhere.is_dir()
    assert [r["id"] for r in list_trash(root, "llm")] == [real.name]
    restore_from_trash(root, "llm", real.name)
    assert real.is_symlink() and real.resolve() == elsewhere.resolve()
    assert not trashed.exists() and sorted(p.name for p in real.iterdir()) == before
