"""`nuboard import tensorboard` keeps images, histograms and text: a log written by torch's
SummaryWriter (add_image of uint8 CHW and float HWC arrays, add_histogram, add_text) and one in
the tensor form of TF2 and the plugins, each entry compared with what TensorBoard's own
EventAccumulator reads; what is still left out is one note per kind with counts."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import cli, run_child

import nuboard as nb

pytest.importorskip("tensorboard")
pytest.importorskip("torch")
PIL = pytest.importorskip("PIL.Image")

WRITE = """
    import io, sys
    import numpy as np
    from PIL import Image
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter
    logdir = sys.argv[1] if len(sys.argv) > 1 else {logdir!r}
    w = SummaryWriter(logdir + "/torch")
    rng = np.random.default_rng(7)
    for i in range(3):
        w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.add_image("samples/chw", rng.integers(0, 256, (3, 6, 5), dtype=np.uint8), i)
        w.add_image("samples/hwc", rng.random((4, 7, 3)), i, dataformats="HWC")
        w.add_image("weird//grey/", rng.integers(0, 256, (1, 3, 3), dtype=np.uint8), i)
        w.add_histogram("weights", rng.normal(size=1000) * (i + 1), i)
        w.add_histogram("ones", np.ones(5) * i, i)
        w.add_text("notes", f"step {{i}}: <b>not bold</b> \\u00e9", i)
    w.add_audio("clip", np.zeros(800), 0, sample_rate=8000)
    w.add_pr_curve("pr", np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.6, 0.4]), 0)
    w.close()

    def value(tag, plugin, dtype, shape, **fields):
        meta = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin))
        dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in shape]
        tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims),
                                        **fields)
        return summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor)

    def png(colour):
        out = io.BytesIO()
        Image.new("RGB", (5, 4), colour).save(out, format="PNG")
        return out.getvalue()

    t = SummaryWriter(logdir + "/tf2")                     # the tensor form: TF2 and the plugins
    writer = t._get_file_writer()
    for i in range(2):
        hist = tensor_util.make_tensor_proto(np.array([[0.0, 1.0, 3], [1.0, 2.5, 5 + i], [2.5, 4.0, 0]]))
        values = [
            summary_pb2.Summary.Value(tag="hist", tensor=hist, metadata=summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms"))),
            value("gallery", "images", 7, [4], string_val=[b"5", b"4", png("red"), png("blue")]),
            value("table", "text", 7, [2, 2], string_val=[b"a", b"b", b"c", "d\\u00e9".encode()]),
            value("loss", "images", 7, [3], string_val=[b"5", b"4", png("green")]),
            summary_pb2.Summary.Value(tag="bad", image=summary_pb2.Summary.Image(
                encoded_image_string=b"GIF89a not an image", height=1, width=1)),
            summary_pb2.Summary.Value(tag="loss", simple_value=0.5 + i),
        ]
        writer.add_summary(summary_pb2.Summary(value=values), i, 1.7e9 + i)
    t.close()
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The log dir, the experiments root, the CLI's output, and {folder: run folder}."""
    base = tmp_path_factory.mktemp("tbmedia")
    logdir, root = base / "logs", base / "experiments"
    run_child(WRITE.format(logdir=str(logdir)))
    done = cli(root, "import", "tensorboard", str(logdir), "--project", "tb")
    assert done.returncode == 0, done.stderr
    runs = {}
    for folder in (root / "tb" / "runs").iterdir():
        doc = json.loads((folder / "run.json").read_text())
        runs[doc["source"]["key"]] = (folder, doc)
    return logdir, root, done, runs


def accumulator(folder: Path):
    from tensorboard.backend.event_processing.event_accumulator import (
        HISTOGRAMS,
        IMAGES,
        TENSORS,
        EventAccumulator,
    )
    acc = EventAccumulator(str(folder), size_guidance={IMAGES: 0, HISTOGRAMS: 0, TENSORS: 0})
    acc.Reload()
    return acc


def by_key(entries) -> dict[str, list]:
    out: dict[str, list] = {}
    for entry in entries:
        out.setdefault(entry.key, []).append(entry)
    return out


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(PIL.open(io.BytesIO(data)).convert("RGB"))


def test_the_summary_and_one_note_per_kind_still_left_out(imported):
    _, _, done, runs = imported
    # torch: 3 steps x (3 images, 2 histograms, 1 text); tf2: 2 x (1 histogram, 2 + 1 images, 1 text)
    assert done.stdout.startswith("Imported 2 runs (5 points, 28 media entries) from TensorBoard")
    note = "nuboard import tensorboard: note: "
    assert done.stderr.splitlines() == [
        note + "tf2: 2 images in 1 tag (bad) left out: NuBoard cannot keep them (the first: "
               "nb.Image: the bytes given start with b'GIF89a not an im' (GIF), not PNG's or "
               "JPEG's signature: NuBoard keeps PNG and JPEG files as they are and never stores "
               "SVG or HTML; give PNG or JPEG, or the pixels as an array or a PIL image)",
        note + "torch: 1 audio clip in 1 tag (clip) left out: NuBoard does not import them yet",
        note + "torch: 1 pr_curves plugin value in 1 tag (pr) left out: NuBoard does not import "
               "them yet"]
    assert set(runs) == {"torch", "tf2"}


def test_images_are_the_bytes_tensorboard_stored(imported):
    logdir, _, _, runs = imported
    folder, doc = runs["torch"]
    acc = accumulator(logdir / "torch")
    media = by_key(nb.read_media(folder))
    assert doc["source"]["renamed_media"] == {"weird//grey/": "weird/grey"}
    for tag, key in (("samples/chw", "samples/chw"), ("samples/hwc", "samples/hwc"),
                     ("weird//grey/", "weird/grey")):
        events, entries = acc.Images(tag), media[key]
        assert [(e.step, e.wall_time) for e in entries] == [(e.step, e.wall_time) for e in events]
        for event, entry in zip(events, entries):
            assert entry.kind == "image" and entry.path.read_bytes() == event.encoded_image_string
            assert (entry.width, entry.height) == (event.width, event.height)


def test_image_pixels_are_those_logged(imported):
    _, _, _, runs = imported
    rng = np.random.default_rng(7)                  # the writer's draws, in its order
    media = by_key(nb.read_media(runs["torch"][0]))
    for i in range(3):
        chw = rng.integers(0, 256, (3, 6, 5), dtype=np.uint8)
        hwc = rng.random((4, 7, 3))
        grey = rng.integers(0, 256, (1, 3, 3), dtype=np.uint8)
        rng.normal(size=1000)
        assert (pixels(media["samples/chw"][i].path.read_bytes()) == chw.transpose(1, 2, 0)).all()
        expected = np.clip(hwc * 255, 0, 255).astype(np.uint8)     # torch scales floats by 255
        assert (pixels(media["samples/hwc"][i].path.read_bytes()) == expected).all()
        assert (pixels(media["weird/grey"][i].path.read_bytes())[..., 0] == grey[0]).all()


def test_histograms_have_tensorboards_buckets(imported):
    logdir, _, _, runs = imported
    acc = accumulator(logdir / "torch")
    media = by_key(nb.read_media(runs["torch"][0]))
    events = acc.Histograms("weights")
    assert [(e.step, e.wall_time) for e in media["weights"]] == [(e.step, e.wall_time) for e in events]
    for event, entry in zip(events, media["weights"]):
        h, got = event.histogram_value, entry.value
        # TensorBoard draws bucket i from limit[i-1] to limit[i], the first from min, the last
        # to max; torch writes an empty bucket left of the first value, of no width: not drawn
        buckets = list(zip([h.min, *h.bucket_limit[:-1]], [*h.bucket_limit[:-1], h.max], h.bucket))
        drawn = [b for b in buckets if b[1] > b[0]]
        assert sum(c for _, _, c in drawn) == 1000
        assert got["counts"] == [c for _, _, c in drawn]
        assert got["edges"] == [drawn[0][0], *(r for _, r, _ in drawn)]
        assert got["count"] == h.num == 1000
        assert (got["min"], got["max"], got["sum"]) == (h.min, h.max, h.sum)
    for event, entry in zip(acc.Histograms("ones"), media["ones"]):     # every value the same
        v = float(event.step)
        edges = entry.value["edges"]
        assert entry.value["counts"] == [5] and edges[0] <= v <= edges[1]
        assert entry.value["min"] == entry.value["max"] == v


def test_text_is_the_string_logged(imported):
    logdir, _, _, runs = imported
    acc = accumulator(logdir / "torch")
    entries = by_key(nb.read_media(runs["torch"][0]))["notes/text_summary"]
    events = acc.Tensors("notes/text_summary")
    assert [(e.step, e.wall_time) for e in entries] == [(e.step, e.wall_time) for e in events]
    assert [e.value for e in entries] == [f"step {i}: <b>not bold</b> \u00e9" for i in range(3)]
    assert all(e.kind == "text" for e in entries)


def test_the_tensor_form_of_the_plugins(imported):
    _, _, _, runs = imported
    folder, doc = runs["tf2"]
    media = by_key(nb.read_media(folder))
    assert sorted(media) == ["gallery", "hist", "loss~2", "table"]
    assert doc["source"]["renamed_media"] == {"loss": "loss~2"}       # 'loss' is a scalar too
    assert nb.read_scalars(folder)["loss"].values.tolist() == [0.5, 1.5]
    assert [(e.step, e.wall_time) for e in media["hist"]] == [(0, 1.7e9), (1, 1.7e9 + 1)]
    assert [e.value["counts"] for e in media["hist"]] == [[3, 5, 0], [3, 6, 0]]
    assert media["hist"][0].value["edges"] == [0, 1, 2.5, 4]
    gallery = media["gallery"]                       # two images at one step: two entries, in order
    assert [e.step for e in gallery] == [0, 0, 1, 1]
    colours = [tuple(pixels(e.path.read_bytes())[0, 0]) for e in gallery]
    assert colours == [(255, 0, 0), (0, 0, 255)] * 2
    assert [e.value for e in media["table"]] == ["a | b\nc | d\u00e9"] * 2
    assert tuple(pixels(media["loss~2"][1].path.read_bytes())[0, 0]) == (0, 128, 0)


def test_a_second_import_writes_nothing_more(imported):
    logdir, root, _, runs = imported
    again = cli(root, "import", "tensorboard", str(logdir), "--project", "tb")
    assert again.returncode == 0 and "already imported" in again.stdout
    assert len(nb.read_media(runs["torch"][0])) == 18
