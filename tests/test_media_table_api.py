"""nb.media: the media entries of a project's runs as one Arrow table, on runs written by the API."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET

import nuboard as nb
from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.tables import ProjectNotFoundError

COLUMNS = ["run_id", "key", "step", "wall_time", "kind", "path", "value", "caption", "width",
           "height", "sample_rate"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """'vis': an older run (images, a histogram, text, a table with an image cell, audio,
    tagged 'base'), a newer one (images only), and a scalar-only run."""
    root = tmp_path_factory.mktemp("nbmedia") / "experiments"
    with nb.init("vis", dir=root, run_name="old", tags=["base"], **QUIET) as run:
        for step in (0, 4):
            run.log({"val/img": nb.Image(np.full((5, 7, 3), 40 * step, np.uint8), caption=f"s{step}"),
                     "loss": 0.1}, step=step)
        run.log({"w": nb.Histogram(np.linspace(0, 1, 100), bins=4), "note": "hi <b>"}, step=1)
        run.log({"tab": nb.Table(columns=["n", "pic"], data=[[1, nb.Image(np.zeros((3, 3), np.uint8))]]),
                 "sound": nb.Audio(np.zeros(800, np.float32), 8000)}, step=2)
        old = run.id
    with nb.init("vis", dir=root, run_name="new", **QUIET) as run:
        run.log({"val/img": nb.Image(np.zeros((2, 2), np.uint8))}, step=9)
        new = run.id
    with nb.init("vis", dir=root, run_name="plain", **QUIET) as run:
        run.add_scalar("loss", 1.0, step=0)
    return root, old, new


def test_every_entry_of_every_run_newest_first_with_run_id_first(project):
    root, old, new = project
    table = nb.media("vis", dir=root)
    assert table.column_names == COLUMNS
    rows = table.to_pylist()
    assert [(r["run_id"], r["key"], r["step"], r["kind"]) for r in rows] == [
        (new, "val/img", 9, "image"),
        (old, "note", 1, "text"), (old, "sound", 2, "audio"), (old, "tab", 2, "table"),
        (old, "val/img", 0, "image"), (old, "val/img", 4, "image"), (old, "w", 1, "histogram")]
    by = {(r["run_id"], r["key"], r["step"]): r for r in rows}
    read = {(e.key, e.step): e for e in nb.read_media(Path(root) / "vis/runs" / old)}
    image = by[(old, "val/img", 4)]
    assert (image["width"], image["height"], image["caption"], image["value"]) == (7, 5, "s4", None)
    assert Path(image["path"]).is_absolute() and Path(image["path"]) == read[("val/img", 4)].path
    assert Path(image["path"]).read_bytes().startswith(b"\x89PNG")
    assert image["wall_time"] == read[("val/img", 4)].wall_time
    assert by[(old, "note", 1)]["value"] == "hi <b>" and by[(old, "note", 1)]["path"] is None
    histogram = json.loads(by[(old, "w", 1)]["value"])
    assert histogram == read[("w", 1)].value and sum(histogram["counts"]) == 100
    cells = json.loads(by[(old, "tab", 2)]["value"])
    assert cells["columns"] == ["n", "pic"] and cells["rows"][0][0] == 1
    assert Path(cells["rows"][0][1]).is_file()                      # the image cell's PNG
    assert by[(old, "sound", 2)]["sample_rate"] == 8000
    assert Path(by[(old, "sound", 2)]["path"]).read_bytes()[:4] == b"RIFF"


def test_keys_and_query_narrow_the_entries(project):
    root, old, new = project
    only = nb.media("vis", keys="val/*", dir=root).to_pylist()
    assert [(r["run_id"], r["step"]) for r in only] == [(new, 9), (old, 0), (old, 4)]
    assert nb.media("vis", keys=["note", "w"], query="tag:base", dir=root).column("key").to_pylist() \
        == ["note", "w"]
    none = nb.media("vis", keys="nothing", dir=root)
    assert none.num_rows == 0 and none.column_names == COLUMNS
    assert nb.media("vis", rank=1, dir=root).num_rows == 0


def test_bad_arguments_are_one_clear_error(project):
    root, _, _ = project
    with pytest.raises(InvalidArgumentError, match="negative"):
        nb.media("vis", rank=-1, dir=root)
    with pytest.raises(InvalidTypeError, match="keys"):
        nb.media("vis", keys=5, dir=root)
    with pytest.raises(ProjectNotFoundError, match="'nope' not found"):
        nb.media("nope", dir=root)
