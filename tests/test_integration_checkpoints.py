"""Checkpoints as artifacts (issue 34, item 3): NuBoardLogger(log_model=True) records the best
and the last checkpoint as versions of the run's `model` artifact referencing the files once the
fit has ended; log_model="all" copies each checkpoint as it is saved; Lightning's checkpoints
and Trainer.log_dir are in the run folder. Real Lightning fits on the CPU in a child process."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import QUIET_ARGS, run_child, run_cli
from test_integration_lightning import MODULE, needs_lightning

from nuboard.errors import InvalidArgumentError

pytestmark = needs_lightning

FITS = MODULE + f"""
from lightning.pytorch.callbacks import ModelCheckpoint
out = {{}}
for mode in (True, "all"):
    logger = NuBoardLogger("lit", run_name=f"ckpt-{{mode}}", dir=root, log_model=mode, {QUIET_ARGS})
    if mode is True:
        ckpt = ModelCheckpoint(monitor="train_loss", save_top_k=1, save_last=True, every_n_train_steps=2)
    else:
        ckpt = ModelCheckpoint(save_top_k=-1, every_n_train_steps=2)
    fit = pl.Trainer(max_steps=6, logger=logger, callbacks=[ckpt], enable_progress_bar=False,
                     enable_model_summary=False, accelerator="cpu", log_every_n_steps=1)
    fit.fit(Tiny(), DataLoader(data, batch_size=4))
    out[str(mode)] = dict(run=logger.experiment.id, folder=str(logger.experiment.folder),
                          log_dir=fit.log_dir, dirpath=ckpt.dirpath, best=ckpt.best_model_path,
                          last=ckpt.last_model_path, score=ckpt.best_model_score and float(ckpt.best_model_score),
                          files=sorted(os.listdir(ckpt.dirpath)))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints") / "experiments"
    done = run_child(FITS, timeout=240, NUBOARD_DIR=str(root), OMP_NUM_THREADS="1")
    return root, json.loads(done.stdout.strip().splitlines()[-1])


def made_by(root: Path, run_id: str) -> list[dict]:
    """The versions of lit/model the run made, as `nuboard artifact ls --json` lists them."""
    done = run_cli(root, "artifact", "ls", "lit", "--json")
    assert done.returncode == 0, done.stderr
    return [v for v in json.loads(done.stdout) if v["producer"] == f"lit/{run_id}"]


def test_checkpoints_and_log_dir_are_in_the_run_folder(fitted):
    _, out = fitted
    for fit in out.values():
        assert fit["log_dir"] == fit["folder"]
        assert Path(fit["dirpath"]).resolve() == Path(fit["folder"]).resolve() / fit["run"] / "checkpoints"


def test_log_model_true_references_the_best_and_the_last_once_the_fit_ended(fitted):
    root, out = fitted
    fit = out["True"]
    made = made_by(root, fit["run"])
    assert sorted(v["metadata"]["file"] for v in made) == sorted(
        {Path(fit["best"]).name, Path(fit["last"]).name})
    assert {v["storage"] for v in made} == {"reference"} and {v["type"] for v in made} == {"model"}
    (best,) = [v for v in made if v["metadata"]["best"]]
    assert best["metadata"]["score"] == pytest.approx(fit["score"])
    assert best["metadata"]["monitor"] == "train_loss"
    assert best["metadata"]["step"] in (2, 4, 6)


def test_log_model_all_copies_every_checkpoint_as_it_is_saved(fitted):
    root, out = fitted
    fit = out["all"]
    made = made_by(root, fit["run"])
    assert len(fit["files"]) == 3                                     # steps 2, 4 and 6
    assert sorted(v["metadata"]["step"] for v in made) == [2, 4, 6]
    assert {v["storage"] for v in made} == {"copy"}


def test_a_bad_log_model_is_refused_before_training():
    from nuboard.integrations.lightning import NuBoardLogger
    with pytest.raises(InvalidArgumentError, match="log_model='best'"):
        NuBoardLogger("lit", log_model="best")


TRAINER = f"""
import json, os, torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from nuboard.integrations.transformers import NuBoardCallback

class Data(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 50, (n, 8), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)
    def __len__(self):
        return len(self.labels)
    def __getitem__(self, i):
        return {{"input_ids": self.ids[i], "labels": self.labels[i]}}

root = os.environ["NUBOARD_DIR"]
out = {{}}
for mode in (True, "all"):
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16))
    callback = NuBoardCallback("hf", dir=root, run_name=f"ckpt-{{mode}}", log_model=mode, {QUIET_ARGS})
    args = TrainingArguments(output_dir=f"{{root}}/../out-{{mode}}", max_steps=6, eval_strategy="steps",
                             eval_steps=3, save_strategy="steps", save_steps=3,
                             load_best_model_at_end=True, metric_for_best_model="loss",
                             report_to=[], use_cpu=True, disable_tqdm=True,
                             per_device_train_batch_size=4, learning_rate=1e-3)
    trainer = Trainer(model=model, args=args, train_dataset=Data(32, 0), eval_dataset=Data(8, 1),
                      callbacks=[callback])
    trainer.train()
    out[str(mode)] = dict(run=callback.run.id, best=trainer.state.best_model_checkpoint)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    root = tmp_path_factory.mktemp("hf-checkpoints") / "experiments"
    done = run_child(TRAINER, timeout=240, NUBOARD_DIR=str(root), HF_HUB_OFFLINE="1",
                     OMP_NUM_THREADS="1")
    return root, json.loads(done.stdout.strip().splitlines()[-1])


def test_trainer_checkpoints_become_model_versions(trained):
    """log_model=True: the best and the last checkpoint folders referenced once training ended;
    'all': each folder copied as the Trainer saved it (steps 3 and 6)."""
    root, out = trained
    done = run_cli(root, "artifact", "ls", "hf", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    best = [v for v in listed if v["producer"] == f"hf/{out['True']['run']}"]
    assert {v["storage"] for v in best} == {"reference"}
    assert sorted(v["metadata"]["step"] for v in best) == sorted(
        {int(out["True"]["best"].rsplit("-", 1)[1]), 6})
    assert [v["metadata"]["monitor"] for v in best if v["metadata"]["best"]] == ["loss"]
    every = [v for v in listed if v["producer"] == f"hf/{out['all']['run']}"]
    assert sorted(v["metadata"]["step"] for v in every) == [3, 6]
    assert {v["storage"] for v in every} == {"copy"}
