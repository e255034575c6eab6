"""`nuboard import mlflow` keeps what mlflow.log_image, log_table and log_text logged: an mlruns
folder written by the real mlflow, imported with and without --artifacts; each image's pixels,
step and time, each table's cells (image cells too) and each text compared with what was logged."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import cli, run_child

import nuboard as nb

pytest.importorskip("mlflow")
PIL = pytest.importorskip("PIL.Image")

WRITE = """
    import mlflow, numpy as np
    from PIL import Image
    mlflow.set_tracking_uri({uri!r})
    mlflow.set_experiment("vision")
    rng = np.random.default_rng(3)
    with mlflow.start_run(run_name="media") as run:
        for step in range(3):
            mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
            mlflow.log_image(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8), key="samples/val",
                             step=step, timestamp=1_700_000_000_000 + step * 1000)
        mlflow.log_image(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8), key="samples/val",
                         step=2, timestamp=1_700_000_009_000)          # again at step 2: the latest
        mlflow.log_image(Image.new("L", (4, 3), 200), key="grid", step=5)
        mlflow.log_table({{"prompt": ["2+2", "1+1"], "answer": ["4", "3"], "score": [1.0, 0.0]}},
                         artifact_file="eval/generations.json")
        mlflow.log_table({{"picture": [Image.new("RGB", (2, 2), (255, 0, 0)),
                                       Image.new("RGB", (2, 2), (0, 0, 255))], "label": ["red", "blue"]}},
                         artifact_file="gallery.json")
        mlflow.log_text("hello\\nworld \\u00e9", "notes/summary.txt")
        mlflow.log_text("# Title", "README.md")
        mlflow.log_text("flavors: {{}}", "model/MLmodel")              # a logged model's folder:
        mlflow.log_text("torch==2", "model/requirements.txt")         # not the run's text
    print(run.info.run_id)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, str]:
    """An mlruns folder with one run that logged images, tables and text; (folder, run id)."""
    folder = tmp_path_factory.mktemp("mlmedia")
    mlruns = folder / "mlruns"
    done = run_child(WRITE.format(uri=str(mlruns)), MLFLOW_ALLOW_FILE_STORE="true")
    run_id = done.stdout.strip().splitlines()[-1]
    secret = folder / "secret.txt"
    secret.write_text("not the run's")
    artifacts = next(mlruns.glob(f"*/{run_id}/artifacts"))
    (artifacts / "leak.txt").symlink_to(secret)             # a link out of the artifacts: not read
    return mlruns, run_id


@pytest.fixture(scope="module")
def imported(store, tmp_path_factory):
    """The store imported by the CLI, without and with --artifacts: {flag: (output, run folder)}."""
    mlruns, _ = store
    root = tmp_path_factory.mktemp("mlroot")
    out = {}
    for project, extra in (("plain", ()), ("with", ("--artifacts",))):
        done = cli(root, "import", "mlflow", str(mlruns), "--project", project, *extra)
        assert done.returncode == 0, done.stderr
        out[project] = (done, next((root / project / "runs").iterdir()))
    return out


def by_key(entries) -> dict[str, list]:
    out: dict[str, list] = {}
    for entry in entries:
        out.setdefault(entry.key, []).append(entry)
    return out


def pixels(path) -> np.ndarray:
    return np.asarray(PIL.open(io.BytesIO(Path(path).read_bytes())))


@pytest.mark.parametrize("project", ["plain", "with"])
def test_the_summary_and_the_note_on_images_logged_twice(imported, store, project):
    done, _ = imported[project]
    extra = ", 1 artifact version" if project == "with" else ""
    assert done.stdout.startswith(f"Imported 1 run (3 points, 8 media entries{extra}) from MLflow")
    assert done.stderr.splitlines() == [
        f"nuboard import mlflow: note: {store[1]}: 1 image logged again at a key and step left "
        "out (the latest of each is kept)"]


@pytest.mark.parametrize("project", ["plain", "with"])
def test_every_media_key_with_or_without_artifacts(imported, project):
    _, folder = imported[project]
    media = by_key(nb.read_media(folder))
    assert {k: [e.kind for e in v] for k, v in media.items()} == {
        "samples/val": ["image"] * 3, "grid": ["image"], "eval/generations": ["table"],
        "gallery": ["table"], "notes/summary": ["text"], "README": ["text"]}


def test_log_image_one_entry_per_key_and_step(imported):
    _, folder = imported["plain"]
    media = by_key(nb.read_media(folder))
    rng = np.random.default_rng(3)                  # the writer's draws, in its order
    logged = [rng.integers(0, 256, (6, 5, 3), dtype=np.uint8) for _ in range(4)]
    samples = media["samples/val"]
    assert [(e.step, e.wall_time) for e in samples] == [(0, 1.7e9), (1, 1.7e9 + 1), (2, 1.7e9 + 9)]
    for entry, expected in zip(samples, [logged[0], logged[1], logged[3]]):
        assert entry.path.suffix == ".png" and (pixels(entry.path) == expected).all()
        assert (entry.width, entry.height) == (5, 6)
    grid = media["grid"][0]
    assert grid.step == 5 and (pixels(grid.path) == 200).all() and pixels(grid.path).shape == (3, 4)


def test_log_table_rows_and_image_cells(imported):
    _, folder = imported["plain"]
    media = by_key(nb.read_media(folder))
    table = media["eval/generations"][0]
    assert table.step == 0
    assert table.value["columns"] == ["prompt", "answer", "score"]
    assert table.value["rows"] == [["2+2", "4", 1.0], ["1+1", "3", 0.0]]
    gallery = media["gallery"][0].value
    assert gallery["columns"] == ["picture", "label"]
    assert [row[1] for row in gallery["rows"]] == ["red", "blue"]
    colours = [tuple(pixels(row[0])[0, 0][:3]) for row in gallery["rows"]]
    assert colours == [(255, 0, 0), (0, 0, 255)]
    assert all(str(row[0]).startswith(str(folder)) for row in gallery["rows"])   # copies in the run


def test_log_text_and_what_is_not_the_runs_text(imported, store):
    _, folder = imported["plain"]
    media = by_key(nb.read_media(folder))
    assert media["notes/summary"][0].value == "hello\nworld \u00e9"
    assert media["README"][0].value == "# Title" and media["README"][0].step == 0
    assert not any(key.startswith("model") for key in media)       # a logged model's files
    assert "leak" not in media


def test_a_second_import_adds_nothing(imported, store):
    mlruns, run_id = store
    _, folder = imported["plain"]
    root = folder.parents[2]
    again = cli(root, "import", "mlflow", str(mlruns), "--project", "plain")
    assert again.returncode == 0 and "already imported" in again.stdout
    assert len(nb.read_media(folder)) == 8
    doc = json.loads((folder / "run.json").read_text())
    assert doc["source"]["key"] == run_id
