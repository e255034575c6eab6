"""NuBoard in a real Jupyter kernel (issue 34, item 5): cells run one by one through nbclient on
ipykernel's python3 kernel, as a notebook user runs them, and the tests read what the notebook
shows (each cell's outputs) and what the runs hold. One kernel serves the module (a kernel
start takes seconds): a run shows itself as HTML, nb.runs as a table, nb.show as an IFrame of
a viewer that answers and stops with the kernel, and a Trainer's train() or a Lightning fit
that raised in one cell leaves a crashed run when the next cell trains again."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import QUIET_ARGS, REPO, child_env

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
run_sync = pytest.importorskip("jupyter_core.utils").run_sync      # nbclient's own dependency
if importlib.util.find_spec("ipykernel") is None:
    pytest.skip("ipykernel is not installed", allow_module_level=True)


def _missing(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in modules)


class Notebook:
    """A notebook being run cell by cell on one live kernel, and the experiments folder its
    NUBOARD_DIR names."""

    def __init__(self, client, root: Path):
        self.client, self.root = client, root

    def cell(self, source: str, *, raises: bool = False):
        """Append a code cell, run it, and return it with its outputs. A cell expected to raise
        carries Jupyter's 'raises-exception' tag: its error is an output, the notebook goes on."""
        tags = {"tags": ["raises-exception"]} if raises else {}
        cell = nbformat.v4.new_code_cell(textwrap.dedent(source).strip(), metadata=tags)
        self.client.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.client.nb.cells) - 1)
        return cell

    def html(self, source: str) -> str:
        """The text/html a cell ending in an expression shows."""
        outputs = self.cell(source).outputs
        shown = [o for o in outputs if o.output_type == "execute_result"]
        assert shown and "text/html" in shown[-1].data, self.cell_text(outputs)
        return shown[-1].data["text/html"]

    def printed(self, source: str) -> str:
        """What a cell prints on stdout."""
        return "".join(o.text for o in self.cell(source).outputs
                       if o.output_type == "stream" and o.name == "stdout")

    @staticmethod
    def cell_text(outputs) -> str:
        return json.dumps([dict(o) for o in outputs], default=str)[:2000]


def _client(folder: Path):
    """An empty notebook run on ipykernel's python3 kernel, started in `folder`."""
    return nbclient.NotebookClient(nbformat.v4.new_notebook(), kernel_name="python3", timeout=300,
                                   startup_timeout=180, resources={"metadata": {"path": str(folder)}})


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """One python3 kernel for the module, started from this interpreter with this checkout's
    nuboard on its path, in a folder of its own; shut down (as Jupyter does) at the end."""
    folder = tmp_path_factory.mktemp("notebook")
    root = folder / "experiments"
    client = _client(folder)
    env = child_env(NUBOARD_DIR=str(root), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1",
                    TOKENIZERS_PARALLELISM="false")
    with client.setup_kernel(env=env):
        book = Notebook(client, root)
        where = json.loads(book.printed("""
            import json, sys, nuboard as nb
            print(json.dumps([sys.executable, nb.__file__]))
        """))
        assert Path(where[0]).resolve() == Path(sys.executable).resolve(), (
            f"the python3 kernelspec runs {where[0]}, not {sys.executable}: "
            "`jupyter kernelspec list` shows which")
        assert Path(where[1]).resolve().is_relative_to(REPO)      # this checkout's nuboard
        yield book


def test_a_run_shows_itself_in_a_cell_with_its_name_status_and_last_value(notebook):
    shown = notebook.html(f"""
        run = nb.init("nbk", run_name="<i>first</i>", config={{"lr": 0.01}}, {QUIET_ARGS})
        run.add_scalar("train/loss", 0.5, step=0)
        run.add_scalar("train/loss", 0.25, step=1)
        run
    """)
    assert "&lt;i&gt;first&lt;/i&gt;" in shown and "<i>first</i>" not in shown
    assert "running" in shown and "<td>lr</td><td>0.01</td>" in shown
    assert "<td>train/loss</td><td>0.25</td>" in shown
    assert "finished" in notebook.html("run.finish()\nrun")


def test_runs_and_a_record_show_as_html_tables(notebook):
    notebook.cell(f"""
        for lr in (0.1, 0.2):
            with nb.init("nbt", run_name=f"lr-{{lr}}", config={{"lr": lr}}, {QUIET_ARGS}) as r:
                r.add_scalar("train/loss", lr * 10, step=0)
    """)
    table = notebook.html('nb.runs("nbt")')
    assert "<table>" in table and "2 runs of nbt" in table and "<th>train/loss</th>" in table
    assert "<td>lr-0.2</td>" in table and "<td>lr-0.1</td>" in table
    record = notebook.html('nb.runs("nbt")[0]')
    assert "lr-0.2" in record and "finished" in record and "<td>lr</td><td>0.2</td>" in record
    assert "<td>train/loss</td><td>2.0</td>" in record


def test_show_gives_an_iframe_of_a_viewer_that_answers_and_stops_with_the_kernel(tmp_path_factory):
    """Its own kernel: the test shuts it down, as a user closing the notebook does, and the
    viewer nb.show started must not outlive it."""
    folder = tmp_path_factory.mktemp("show")
    client = _client(folder)
    with client.setup_kernel(env=child_env(NUBOARD_DIR=str(folder / "experiments"))):
        book = Notebook(client, folder / "experiments")
        run_id = book.printed(f"""
            import nuboard as nb
            with nb.init("nbs", run_name="shown", {QUIET_ARGS}) as run:
                run.add_scalar("train/loss", 1.0, step=0)
            print(run.id)
        """).strip()
        frame = book.html('nb.show("nbs")')
        found = re.search(r'<iframe[^>]*src="(http://127\.0\.0\.1:\d+/p/nbs)"', frame)
        assert found, frame
        url = found.group(1)
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert reply.status == 200 and run_id in reply.read().decode()
        assert book.html('nb.show("nbs")') == frame             # one viewer per kernel
        assert f'{url}/.run/{run_id}"' in book.html("run")      # the run links to its page there
        pid = int(book.printed("from nuboard import notebook\nprint(notebook._viewer['process'].pid)"))
    try:
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(url, timeout=30).close()
    finally:
        _stop(pid)


def test_show_works_before_the_first_run_and_the_viewer_survives_an_interrupt(notebook):
    """A user shows the viewer first, then trains; Jupyter's Interrupt (the stop button, sent
    to the kernel's whole process group) stops a cell, not the viewer the IFrames show."""
    try:
        frame = notebook.html('nb.show("early", dir="fresh")')   # no experiments folder yet
        url = re.search(r'src="(http://127\.0\.0\.1:\d+/p/early)"', frame).group(1)
        run_id = notebook.printed(f"""
            with nb.init("early", dir="fresh", {QUIET_ARGS}) as run:
                run.add_scalar("train/loss", 1.0, step=0)
            print(run.id)
        """).strip()
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert reply.status == 200 and run_id in reply.read().decode()
        run_sync(notebook.client.km.interrupt_kernel)()
        assert notebook.printed("print(1)") == "1\n"          # the kernel is back to idle
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert reply.status == 200 and run_id in reply.read().decode()
    finally:
        pid = notebook.printed("from nuboard import notebook as nbk\n"
                               "p = nbk._viewer.get('process')\nprint(p.pid if p else '')").strip()
        if pid:
            _stop(int(pid))


def _stop(pid: int) -> None:
    """End the viewer if the kernel left it serving (so a failure leaves no process behind):
    that pid, only while it is still a `nuboard up`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read().split(b"\0")
        if b"up" in command and any(b"nuboard" in part for part in command):
            os.kill(pid, signal.SIGTERM)
    except (FileNotFoundError, ProcessLookupError):
        pass


TRAINER = """
import torch
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

torch.manual_seed(0)
model = BertForSequenceClassification(BertConfig(
    vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16))
args = TrainingArguments(output_dir="hf-out", max_steps=4, report_to=[], use_cpu=True,
                         save_strategy="no", disable_tqdm=True, per_device_train_batch_size=4)
callback = NuBoardCallback("hf", QUIET)
"""


@pytest.mark.skipif(_missing("transformers", "accelerate", "torch"),
                    reason="the transformers extra is not installed")
def test_a_trainer_that_raised_in_a_cell_is_crashed_when_the_next_cell_trains(notebook):
    notebook.cell(TRAINER.replace("QUIET", QUIET_ARGS))
    failed = notebook.cell("Trainer(model=model, args=args, train_dataset=Data(), "
                           "callbacks=[callback, Boom()]).train()", raises=True)
    errors = [o for o in failed.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "RuntimeError" and errors[0].evalue == "diverged"
    first = notebook.printed("first = callback.run\nprint(first.id, first.status)").split()
    assert first[1] == "running"             # no callback hears of the error: the run is open
    second = notebook.printed("""
        Trainer(model=model, args=args, train_dataset=Data(), callbacks=[callback]).train()
        print(callback.run.id)
    """).split()[-1]
    assert second != first[0]
    crashed = json.loads((notebook.root / "hf" / "runs" / first[0] / "run.json").read_text())
    assert crashed["status"] == "crashed"
    assert crashed["error"]["type"].endswith("AbandonedTrainError")
    finished = json.loads((notebook.root / "hf" / "runs" / second / "run.json").read_text())
    assert finished["status"] == "finished"
    assert "crashed" in notebook.html("first")               # the cell shows it as it is now


LIGHTNING = """
import torch, lightning.pytorch as pl
from torch.utils.data import DataLoader, TensorDataset
from nuboard.integrations.lightning import NuBoardLogger

class Tiny(pl.LightningModule):
    def __init__(self, fail_at=None):
        super().__init__()
        self.fail_at = fail_at
        self.layer = torch.nn.Linear(4, 1)
    def training_step(self, batch, i):
        if self.global_step == self.fail_at:
            raise RuntimeError("diverged")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)

def fit(logger, model):
    pl.Trainer(max_steps=4, logger=logger, enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False, accelerator="cpu", log_every_n_steps=1).fit(model, data)
    return logger.experiment.id
"""


@pytest.mark.skipif(_missing("lightning", "torch"), reason="the lightning extra is not installed")
def test_a_lightning_fit_that_raised_in_a_cell_is_crashed_and_the_next_fit_finishes(notebook):
    notebook.cell(LIGHTNING)
    failed = notebook.cell(f"""
        crash = NuBoardLogger("lit", run_name="crash", {QUIET_ARGS})
        fit(crash, Tiny(fail_at=2))
    """, raises=True)
    errors = [o for o in failed.outputs if o.output_type == "error"]
    assert errors and errors[0].evalue == "diverged"
    first = notebook.printed("print(crash.experiment.id, crash.experiment.status)").split()
    assert first[1] == "crashed"             # Lightning's finalize('failed')
    second = notebook.printed(f"""
        print(fit(NuBoardLogger("lit", run_name="again", {QUIET_ARGS}), Tiny()))
    """).split()[-1]
    assert second != first[0]
    crashed = json.loads((notebook.root / "lit" / "runs" / first[0] / "run.json").read_text())
    assert crashed["status"] == "crashed" and crashed["error"]["message"] == "diverged"
    finished = json.loads((notebook.root / "lit" / "runs" / second / "run.json").read_text())
    assert finished["status"] == "finished"


@pytest.mark.skipif(_missing("lightning", "torch"), reason="the lightning extra is not installed")
def test_a_lightning_logger_reused_after_a_failed_fit_keeps_the_crash(notebook):
    """The logger made in an earlier cell, its fit run again after it raised (as the Trainer's
    callback is): the crashed run stays crashed, with its error, and the new fit is a new run."""
    notebook.cell(LIGHTNING)
    notebook.cell(f"""
        again = NuBoardLogger("lit", run_name="reused", {QUIET_ARGS})
        fit(again, Tiny(fail_at=2))
    """, raises=True)
    first = notebook.printed("print(again.experiment.id)").strip()
    second = notebook.printed("print(fit(again, Tiny()))").strip()
    crashed = json.loads((notebook.root / "lit" / "runs" / first / "run.json").read_text())
    assert crashed["status"] == "crashed" and crashed["error"]["message"] == "diverged"
    assert second != first
