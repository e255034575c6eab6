"""NuBoardCallback with a real Hugging Face Trainer on the CPU: a one-layer BERT built from a config
in code (no download) trained on an in-memory dataset, in a child process so that the import
of transformers stays out of this one."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from helpers import QUIET_ARGS, run_child

import nuboard as nb

needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("accelerate") is None,
    reason="the transformers extra is not installed")

TRAIN = f"""
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

def metrics(pred):   # a number and a text: the text is no scalar
    return {{"acc": float((pred.predictions.argmax(-1) == pred.label_ids).mean()), "note": "tiny"}}

torch.manual_seed(0)
root = os.environ["NUBOARD_DIR"]
model = BertForSequenceClassification(BertConfig(
    vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
    max_position_embeddings=16))
callback = NuBoardCallback("hf", dir=root, tags=["tiny"], config={{"data": "random"}}, {QUIET_ARGS})
args = TrainingArguments(output_dir=root + "/out", max_steps=6, logging_steps=2, eval_strategy="steps",
                         eval_steps=3, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
                         per_device_train_batch_size=4, learning_rate=1e-3)
trainer = Trainer(model=model, args=args, train_dataset=Data(32, 0), eval_dataset=Data(8, 1),
                  compute_metrics=metrics, callbacks=[callback])
trainer.train()
after_train = callback.run.status
history = list(trainer.state.log_history)
final = trainer.evaluate()
print(json.dumps(dict(path=str(callback.run.path), history=history, after_train=after_train,
                      final=final, steps=trainer.state.global_step)))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("transformers") / "experiments"
    done = run_child(TRAIN, timeout=180, NUBOARD_DIR=str(root), HF_HUB_OFFLINE="1",
                     TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@needs_transformers
def test_trainer_logs_train_and_eval_at_global_steps(trained):
    out, stderr = trained
    scalars = nb.read_scalars(out["path"])
    history = out["history"]
    train = [h for h in history if "loss" in h]
    evals = [h for h in history if "eval_loss" in h]
    assert [h["step"] for h in train] == [2, 4, 6] and [h["step"] for h in evals] == [3, 6]
    for name, key, rows in (("train/loss", "loss", train), ("train/learning_rate", "learning_rate", train),
                            ("train/grad_norm", "grad_norm", train), ("eval/loss", "eval_loss", evals[:1]),
                            ("eval/acc", "eval_acc", evals[:1])):
        s = scalars[name]
        points = dict(zip(s.steps, s.values))
        for row in rows:
            assert points[row["step"]] == pytest.approx(row[key]), (name, row["step"])
    assert list(scalars["train/loss"].steps) == [2, 4, 6]
    assert list(scalars["eval/loss"].steps) == [3, 6]
    # the end-of-training summary is logged under train/ too, at the last step
    assert list(scalars["train/train_runtime"].steps) == [6] and "train/total_flos" in scalars
    # a value that is no number is left out, and said so
    assert not any(name.endswith("note") for name in scalars)
    assert "metric 'eval/note' is not logged" in stderr


@needs_transformers
def test_run_has_args_and_model_config_and_finishes(trained):
    out, _ = trained
    run = json.loads(Path(out["path"], "run.json").read_text())
    assert out["after_train"] == "finished" and run["status"] == "finished"
    assert set(run["config"]) == {"data", "args", "model"} and run["config"]["data"] == "random"
    args, model = run["config"]["args"], run["config"]["model"]
    assert (args["max_steps"], args["logging_steps"], args["eval_steps"], args["learning_rate"]) == (6, 2, 3, 1e-3)
    assert (model["hidden_size"], model["num_hidden_layers"], model["vocab_size"]) == (16, 1, 50)
    assert run["tags"] == ["tiny"]


@needs_transformers
def test_evaluate_after_train_continues_the_run(trained):
    """trainer.evaluate() after train() logs into the same run, in a second session at the final
    global step, and leaves it finished."""
    out, _ = trained
    run = json.loads(Path(out["path"], "run.json").read_text())
    assert [s["session"] for s in run["sessions"]] == [0, 1] and run["status"] == "finished"
    loss = nb.read_scalars(out["path"], "eval/loss")["eval/loss"]
    assert loss.steps[-1] == out["steps"] == 6
    assert loss.values[-1] == pytest.approx(out["final"]["eval_loss"])


def test_missing_transformers_is_one_line():
    done = run_child("""
        import sys
        import nuboard
        sys.modules["transformers"] = None          # as if it were not installed
        try:
            import nuboard.integrations.transformers
        except nuboard.errors.MissingExtraError as exc:
            print(exc)
    """)
    line = done.stdout.strip()
    assert len(line.splitlines()) == 1
    assert "pip install 'nuboard[transformers]'" in line and "nuboard.integrations.transformers" in line
