"""NuBoardLogger.log_image, log_text and log_table (WandbLogger's signatures) from a real Lightning
fit on the CPU, in a child process: every image's pixels and caption, every table's cells, at the
step of the curves; and WandbLogger's errors for a call it refuses."""
from __future__ import annotations

import importlib.util
import io
import json

import numpy as np
import pytest
from helpers import QUIET_ARGS, run_child

import nuboard as nb

pytestmark = pytest.mark.skipif(importlib.util.find_spec("lightning") is None,
                                reason="the lightning extra is not installed")
PIL = pytest.importorskip("PIL.Image")

FIT = f"""
import json, os, warnings, numpy as np, pandas as pd, torch, lightning.pytorch as pl
from torch.utils.data import DataLoader, TensorDataset
from nuboard.integrations.lightning import NuBoardLogger

class Spy(NuBoardLogger):
    steps = []
    def log_metrics(self, metrics, step=None):
        Spy.steps.append(step)
        super().log_metrics(metrics, step)

class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.media_steps = []
    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss
    def validation_step(self, batch, i):
        pass
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
    def on_validation_epoch_end(self):
        n = len(self.media_steps)
        chw = torch.full((3, 4, 5), 0.5) * (n + 1) / 3       # floats in [0, 1], CHW
        hwc = np.full((4, 5, 3), 40 * (n + 1), dtype=np.uint8)
        self.logger.log_image(key="samples", images=[chw, hwc], caption=[f"chw {{n}}", f"hwc {{n}}"])
        self.logger.log_text(key="generations", columns=["prompt", "answer"],
                             data=[["2+2", str(4 + n)], ["1+1", "2"]])
        self.logger.log_table(key="scores", dataframe=pd.DataFrame({{"epoch": [n], "acc": [0.5 + n]}}),
                              step=1000 + n)
        self.media_steps.append(Spy.steps[-1])               # the step of the latest metrics

root = os.environ["NUBOARD_DIR"]
torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
logger = Spy("lit", run_name="media", dir=root, {QUIET_ARGS})
model = Tiny()
trainer = pl.Trainer(max_steps=6, logger=logger, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, accelerator="cpu", log_every_n_steps=1,
                     val_check_interval=3, num_sanity_val_steps=0)
trainer.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=8))
refused = []
for call in (lambda: logger.log_image("one", np.zeros((2, 2), dtype=np.uint8)),         # not a list
             lambda: logger.log_image("two", [np.zeros((2, 2), dtype=np.uint8)], caption=["a", "b"]),
             lambda: logger.log_image("bad", [np.zeros((2, 2, 2, 2, 2))])):             # 5-D
    try:
        call()
    except (TypeError, ValueError) as exc:
        refused.append(("TypeError" if isinstance(exc, TypeError) else "ValueError") + ": " + str(exc))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    logger.log_image("masked", [np.zeros((2, 2), dtype=np.uint8)], step=7, masks=[None])
logger.finalize("success")
print(json.dumps(dict(path=str(logger.experiment.path), media_steps=model.media_steps,
                      refused=refused, warned=[str(w.message) for w in caught])))
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("lightning-media") / "experiments"
    done = run_child(FIT, timeout=180, NUBOARD_DIR=str(root), OMP_NUM_THREADS="1")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    media: dict[str, list] = {}
    for entry in nb.read_media(out["path"]):
        media.setdefault(entry.key, []).append(entry)
    return out, media


def pixels(path) -> np.ndarray:
    return np.asarray(PIL.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def test_log_image_logs_each_image_at_the_step_of_the_curves(fitted):
    out, media = fitted
    steps = out["media_steps"]
    assert len(steps) == 2 and steps[0] < steps[1]            # two validations, after a metric each
    samples = media["samples"]
    assert [(e.step, e.caption) for e in samples] == [
        (steps[0], "chw 0"), (steps[0], "hwc 0"), (steps[1], "chw 1"), (steps[1], "hwc 1")]
    assert (pixels(samples[0].path) == round(0.5 / 3 * 255)).all()        # float CHW, scaled
    assert (pixels(samples[1].path) == 40).all() and (pixels(samples[3].path) == 80).all()
    assert all((e.width, e.height) == (5, 4) for e in samples)
    scalars = nb.read_scalars(out["path"])
    assert set(steps) <= set(scalars["train_loss"].steps)


def test_log_text_and_log_table_are_tables(fitted):
    out, media = fitted
    generations = media["generations"]
    assert [e.step for e in generations] == out["media_steps"]
    assert generations[1].kind == "table" and generations[1].value["columns"] == ["prompt", "answer"]
    assert generations[1].value["rows"] == [["2+2", "5"], ["1+1", "2"]]
    scores = media["scores"]
    assert [e.step for e in scores] == [1000, 1001]
    assert scores[1].value["columns"] == ["epoch", "acc"] and scores[1].value["rows"] == [[1, 1.5]]


def test_wandb_loggers_errors_and_what_is_not_kept(fitted):
    out, media = fitted
    kinds = [line.split(":")[0] for line in out["refused"]]
    assert kinds == ["TypeError", "ValueError", "ValueError"], out["refused"]
    assert "expected 1 items for caption" in out["refused"][1]
    assert "5 axes" in out["refused"][2]
    assert "one" not in media and "two" not in media and "bad" not in media
    assert [e.step for e in media["masked"]] == [7]
    assert out["warned"] == ["NuBoardLogger.log_image: masks not kept (NuBoard keeps caption and "
                             "dataformats)."]
