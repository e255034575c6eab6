"""NuBoard in a notebook (issue 34, item 5): a run shows itself as HTML with its status, config
and last values, user text escaped; nb.show starts one viewer in the background and gives its
URL (an IFrame in IPython), and the run's HTML then links to its page there."""
from __future__ import annotations

import urllib.request

from helpers import QUIET

import nuboard as nb
from nuboard import notebook


def test_a_run_shows_its_status_config_and_last_values_escaped(root):
    run = nb.init("llm", dir=root, run_name="<b>bold</b>", config={"lr": 0.001, "model": {"w": 8}},
                  **QUIET)
    run.add_scalar("train/loss", 2.5, step=0)
    run.add_scalar("train/loss", 1.25, step=1)
    shown = run._repr_html_()
    assert "running" in shown and "&lt;b&gt;bold&lt;/b&gt;" in shown and "<b>bold</b>" not in shown
    assert "<td>lr</td><td>0.001</td>" in shown and "<td>model.w</td><td>8</td>" in shown
    assert "<td>train/loss</td><td>1.25</td>" in shown
    run.finish()
    assert "finished" in run._repr_html_()


def test_show_starts_one_viewer_and_runs_link_to_it(root):
    with nb.init("llm", dir=root, run_name="linked", **QUIET) as run:
        run.add_scalar("train/loss", 1.0, step=0)
    try:
        first = nb.show("llm", dir=root)
        url = first if isinstance(first, str) else first.src
        assert url.endswith("/p/llm")
        again = nb.show("llm", dir=root)
        assert (again if isinstance(again, str) else again.src) == url     # the same viewer
        with urllib.request.urlopen(url, timeout=60) as reply:
            assert reply.status == 200 and run.id in reply.read().decode()
        assert f'{url}/.run/{run.id}"' in run._repr_html_()
    finally:
        proc = notebook._viewer.get("process")
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        notebook._viewer.clear()


FAILED_THEN_AGAIN = """
import json, os, torch
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainerCallback,
                          TrainingArguments)
from nuboard.integrations.transformers import NuBoardCallback

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 16
    def __getitem__(self, i):
        return {"input_ids": torch.arange(8) % 50, "labels": torch.tensor(i % 2)}

class Boom(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 2:
            raise RuntimeError("diverged")

root = os.environ["NUBOARD_DIR"]
model = BertForSequenceClassification(BertConfig(
    vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16))
args = TrainingArguments(output_dir=root + "/../out", max_steps=4, report_to=[], use_cpu=True,
                         save_strategy="no", disable_tqdm=True, per_device_train_batch_size=4)
callback = NuBoardCallback("hf", dir=root, capture_env=False, system_metrics=False,
                           capture_console=False)
try:                                   # a notebook cell: the kernel lives on after the error
    Trainer(model=model, args=args, train_dataset=Data(), callbacks=[callback, Boom()]).train()
except RuntimeError:
    pass
first = callback.run
status_after_error = first.status
Trainer(model=model, args=args, train_dataset=Data(), callbacks=[callback]).train()
print(json.dumps(dict(first=first.id, left=status_after_error, second=callback.run.id)))
"""


def test_a_trainer_that_raised_is_crashed_when_the_next_train_begins(root):
    """In a kernel a failed train() reaches no callback: its run stays running until the next
    train() of the process begins, which finishes it as crashed, with the reason."""
    import importlib.util
    import json

    import pytest
    from helpers import run_child
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("accelerate") is None:
        pytest.skip("the transformers extra is not installed")
    done = run_child(FAILED_THEN_AGAIN, timeout=240, NUBOARD_DIR=str(root), HF_HUB_OFFLINE="1",
                     OMP_NUM_THREADS="1")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["left"] == "running" and out["second"] != out["first"]
    first = json.loads((root / "hf" / "runs" / out["first"] / "run.json").read_text())
    assert first["status"] == "crashed"
    assert first["error"]["type"].endswith("AbandonedTrainError")
    second = json.loads((root / "hf" / "runs" / out["second"] / "run.json").read_text())
    assert second["status"] == "finished"


def test_runs_and_a_record_show_themselves_as_html(root):
    for lr in (0.1, 0.2):
        with nb.init("llm", dir=root, run_name=f"lr-{lr}", config={"lr": lr}, **QUIET) as run:
            run.add_scalar("train/loss", lr * 10, step=0)
    runs = nb.runs("llm", dir=root)
    table = runs._repr_html_()
    assert "2 runs of llm" in table and "<th>train/loss</th>" in table
    assert "<td>lr-0.2</td>" in table and "<td>2.0</td>" in table
    one = runs[0]._repr_html_()
    assert "finished" in one and "<td>lr</td><td>0.2</td>" in one
