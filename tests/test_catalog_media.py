"""The catalog's media keys (media_keys, migration 0006), `nuboard ls --json`'s "media", and the
sync's removal of media files that no record names, on runs written by the real API."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET, QUIET_ARGS, run_cli, start_child

import nuboard as nb
from nuboard.catalog.media_reads import media_keys, run_media_keys
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import STALE_TEMP, sync

OLD = time.time() - 2 * STALE_TEMP           # an mtime past the stale age


def _image(shade: int) -> nb.Image:
    return nb.Image(np.full((6, 8, 3), shade, np.uint8))


def _vision_run(root: Path) -> str:
    """Images at steps 0, 5, 10, a histogram at 0..3, text at 2 and 4, one table with an image
    cell at step 7, and train/loss."""
    with nb.init("vis", dir=root, run_name="vision", **QUIET) as run:
        for step in (0, 5, 10):
            run.log({"val/samples": _image(step), "train/loss": 1.0 / (step + 1)}, step=step)
        for step in range(4):
            run.log({"weights": nb.Histogram(np.arange(50.0) * step)}, step=step)
        run.log({"notes": "two"}, step=2)
        run.add_text("notes", "four", global_step=4)
        run.log({"preds": nb.Table(columns=["i", "img"], data=[[1, _image(9)], [2, _image(99)]])},
                step=7)
        return run.id


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """'vis': the vision run; a scalar-only run; a run with rank 1 media; a resumed run whose
    second session logged images again from step 2 (hiding the first's steps 2 and 3)."""
    root = tmp_path_factory.mktemp("media") / "experiments"
    ids = {"vision": _vision_run(root)}
    with nb.init("vis", dir=root, run_name="scalars", **QUIET) as run:
        run.add_scalar("train/loss", 0.5, step=1)
        ids["scalars"] = run.id
    with pytest.MonkeyPatch.context() as mp:
        for rank in (0, 1):
            mp.setenv("RANK", str(rank))
            mp.setenv("WORLD_SIZE", "2")
            with nb.init("vis", dir=root, run_id="two-ranks", resume="auto" if rank else None,
                         **QUIET) as run:
                run.log({f"rank{rank}/img": _image(rank), "loss": 1.0}, step=3)
    ids["ranks"] = "two-ranks"
    with nb.init("vis", dir=root, run_id="resumed", **QUIET) as run:
        for step in range(4):
            run.log({"img": _image(step)}, step=step)
    with nb.init("vis", dir=root, run_id="resumed", resume="must", **QUIET) as run:
        for step in (2, 3, 4):
            run.log({"img": _image(100 + step)}, step=step)
    ids["resumed"] = "resumed"
    return root, ids


def test_the_sync_indexes_each_runs_media_keys_per_rank(project, backend):
    root, ids = project
    with Catalog(root, "vis") as catalog:
        sync(catalog, full=True)
        found = media_keys(catalog, [ids["vision"], ids["scalars"], ids["resumed"], "not-a-run"])
        assert found[ids["vision"]] == {
            "notes": {"kind": "text", "count": 2, "first_step": 2, "last_step": 4},
            "preds": {"kind": "table", "count": 1, "first_step": 7, "last_step": 7},
            "val/samples": {"kind": "image", "count": 3, "first_step": 0, "last_step": 10},
            "weights": {"kind": "histogram", "count": 4, "first_step": 0, "last_step": 3},
        }
        assert list(found[ids["vision"]]) == ["notes", "preds", "val/samples", "weights"]
        assert found[ids["scalars"]] == {} and found["not-a-run"] == {}
        # the resume rule: steps 0, 1 of the first session, 2, 3, 4 of the second
        assert found[ids["resumed"]] == {"img": {"kind": "image", "count": 5, "first_step": 0,
                                                 "last_step": 4}}
        assert run_media_keys(catalog, "two-ranks") == {
            "rank0/img": {"kind": "image", "count": 1, "first_step": 3, "last_step": 3}}
        assert list(run_media_keys(catalog, "two-ranks", rank=1)) == ["rank1/img"]


def test_a_live_runs_new_entries_reach_the_catalog_at_the_next_sync(root, backend):
    run = nb.init("live", dir=root, **QUIET)
    try:
        run.log({"img": _image(1)}, step=0)
        run.flush()
        with Catalog(root, "live") as catalog:
            sync(catalog)
            assert run_media_keys(catalog, run.id)["img"]["count"] == 1
            run.log({"img": _image(2), "txt": "hello"}, step=8)
            run.flush()
            sync(catalog)
            assert run_media_keys(catalog, run.id) == {
                "img": {"kind": "image", "count": 2, "first_step": 0, "last_step": 8},
                "txt": {"kind": "text", "count": 1, "first_step": 8, "last_step": 8}}
    finally:
        run.finish()


def test_ls_json_gives_each_runs_entries_per_media_key(project, backend):
    root, ids = project
    out = run_cli(root, "ls", "vis", "--json")
    assert out.returncode == 0, out.stderr
    by_id = {r["id"]: r for r in json.loads(out.stdout)}
    assert by_id[ids["vision"]]["media"] == {"notes": 2, "preds": 1, "val/samples": 3, "weights": 4}
    assert by_id[ids["scalars"]]["media"] == {}
    assert by_id["two-ranks"]["media"] == {"rank0/img": 1}          # rank 0's, as nb.media's default
    assert by_id["resumed"]["media"] == {"img": 5}


# -- media files no record names ------------------------------------------------------------------

def _files(run_dir: Path) -> set[str]:
    return {p.relative_to(run_dir).as_posix() for p in (run_dir / "media").rglob("*") if p.is_file()}


def _age(paths) -> None:
    for p in paths:
        os.utime(p, (OLD, OLD))


def test_an_old_file_no_record_names_is_removed_and_every_recorded_one_stays(root):
    """Recorded: every file a record names, a table's image cells, and the files of entries a
    resume hides (steps 2 and 3 of the first session). An old file without a record goes; one
    younger than STALE_TEMP stays until it is old."""
    with nb.init("orphans", dir=root, run_id="r", **QUIET) as run:
        for step in range(4):
            run.log({"x": _image(step)}, step=step)
        run.log({"t": nb.Table(columns=["img"], data=[[_image(5)]])}, step=1)
    with nb.init("orphans", dir=root, run_id="r", resume="must", **QUIET) as run:
        run.log({"x": _image(50)}, step=2)
    folder = Path(run.path)
    recorded = _files(folder)
    assert len(recorded) == 4 + 2 + 1 and any("cell" in f for f in recorded)
    assert len(nb.read_media(folder, keys="x")) == 3                  # 0, 1, then step 2 again
    stray, young = folder / "media/x/5-0.png", folder / "media/x/6-0.png"
    stray.write_bytes(b"\x89PNG half")
    young.write_bytes(b"\x89PNG half")
    tmp = folder / "media/t/.tmp-2.parquet.999999.abcdef"             # a killed writer's temp file
    tmp.write_bytes(b"PAR1")
    _age([*(folder / r for r in recorded), stray, tmp])
    with Catalog(root, "orphans") as catalog:
        sync(catalog)
        assert _files(folder) == recorded | {"media/x/6-0.png"}
        assert not tmp.exists()
    _age([young])
    with Catalog(root, "orphans") as catalog:                         # ten minutes later, say
        sync(catalog)
        assert _files(folder) == recorded
        assert len(run_media_keys(catalog, "r")) == 2


def test_a_live_writers_files_stay_and_go_once_it_has_finished(root):
    run = nb.init("alive", dir=root, **QUIET)
    run.log({"x": _image(1)}, step=0)
    run.flush()
    folder = Path(run.path)
    stray = folder / "media/x/9-0.png"
    stray.write_bytes(b"\x89PNG")
    _age([stray])
    with Catalog(root, "alive") as catalog:
        sync(catalog)
        assert stray.exists()                                         # its writer may yet name it
        run.finish()
        sync(catalog)
        assert not stray.exists()
        assert _files(folder) == {"media/x/0-0.png"}


def test_reindex_removes_an_old_file_no_record_names(root):
    _vision_run(root)
    (folder,) = (root / "vis" / "runs").iterdir()
    kept = _files(folder)
    stray = folder / "media/val/samples/5-1.png"
    stray.write_bytes(b"\x89PNG")
    _age([stray])
    out = run_cli(root, "reindex", "vis")
    assert out.returncode == 0, out.stderr
    assert _files(folder) == kept


def test_a_killed_writers_file_without_a_record_goes_once_the_writer_is_dead(root):
    """A child logs images and is killed with SIGKILL; a file it wrote without a record (one
    made here, as a kill between the file and its record leaves it) stays while it lives."""
    child = start_child(f"""
        import time, numpy as np, nuboard as nb
        run = nb.init("killed", {QUIET_ARGS})
        for step in range(3):
            run.log({{"x": nb.Image(np.zeros((4, 4), np.uint8))}}, step=step)
        run.flush()
        print(run.path, flush=True)
        time.sleep(600)
    """, NUBOARD_DIR=str(root))
    folder = Path(child.stdout.readline().strip())
    try:
        recorded = _files(folder)
        assert recorded == {f"media/x/{step}-0.png" for step in range(3)}
        stray = folder / "media/x/3-0.png"
        stray.write_bytes(b"\x89PNG")
        _age([stray, *(folder / r for r in recorded)])
        with Catalog(root, "killed") as catalog:
            sync(catalog)
            assert stray.exists()                                     # its writer is alive
            child.send_signal(signal.SIGKILL)
            child.wait()
        with Catalog(root, "killed") as catalog:
            sync(catalog)
            assert _files(folder) == recorded
            assert run_media_keys(catalog, folder.name)["x"]["count"] == 3
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()
