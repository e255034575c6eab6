"""NuBoardLogger with real Lightning training on the CPU: one process (a fit, a validate after it,
a fit that raises) and a two-rank DDP fit on gloo. Lightning runs in child processes, so its
import stays out of this one."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import QUIET, QUIET_ARGS, child_env, run_child

import nuboard as nb
from nuboard.integrations.common import MetricLog, scalar_name

needs_lightning = pytest.mark.skipif(importlib.util.find_spec("lightning") is None,
                                     reason="the lightning extra is not installed")

MODULE = """
import json, os, torch, lightning.pytorch as pl
from torch.utils.data import DataLoader, TensorDataset
from nuboard.integrations.lightning import NuBoardLogger

class Spy(NuBoardLogger):
    '''Keeps what Lightning hands the logger, to compare with what the run holds.'''
    calls = []
    def log_metrics(self, metrics, step=None):       # Lightning calls it on every rank
        Spy.calls.append((dict(metrics), step))
        super().log_metrics(metrics, step)

class Tiny(pl.LightningModule):
    def __init__(self, lr=0.1, hidden=4, fail_at=None):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(hidden, 1)
        self.steps, self.losses = [], []
    def training_step(self, batch, i):
        if self.global_step == self.hparams.fail_at:
            raise RuntimeError("diverged")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.steps.append(self.global_step)
        self.losses.append(loss.item())
        self.log("train_loss", loss)
        self.log("val/acc", 1.0 / (i + 1))
        self.log("system/temp", 40.0)           # under a prefix the run reserves
        self.logger.experiment.add_scalar("rank/seen", float(self.global_rank), step=self.global_step)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

root = os.environ["NUBOARD_DIR"]
torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))

def trainer(logger, **kw):
    return pl.Trainer(max_steps=6, logger=logger, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, accelerator="cpu", log_every_n_steps=1,
                      val_check_interval=3, **kw)
"""

FIT = MODULE + f"""
out = {{}}
logger = Spy("lit", run_name="tiny", config={{"data": "random"}}, dir=root, tags=["cpu"], {QUIET_ARGS})
model = Tiny()
fit = trainer(logger)
fit.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=8))
out["fit"] = dict(path=str(logger.experiment.path), calls=Spy.calls, steps=model.steps,
                  losses=model.losses, status_after_fit=logger.experiment.status)
Spy.calls = []
fit.validate(model, DataLoader(data, batch_size=8))
out["validate"] = dict(path=str(logger.experiment.path), calls=Spy.calls)

crash = NuBoardLogger("lit", run_name="crash", dir=root, {QUIET_ARGS})
bad = Tiny(fail_at=2)
try:
    trainer(crash).fit(bad, DataLoader(data, batch_size=4))
except RuntimeError as exc:
    out["crash"] = dict(path=str(crash.experiment.path), raised=str(exc), steps=bad.steps)
for bad in (dict(project="llm/runs"), dict(project="llm", system_metric=False)):
    try:
        NuBoardLogger(**bad)
    except (ValueError, TypeError) as exc:       # at construction, before any training
        out.setdefault("refused", []).append(type(exc).__name__)
print(json.dumps(out))
"""

DDP = MODULE + f"""
logger = Spy("lit", run_name="ddp", dir=root, {QUIET_ARGS})
model = Tiny()
fit = trainer(logger, devices=2, strategy="ddp")
fit.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=8))
with open(f"{{root}}/rank{{fit.global_rank}}.json", "w") as fh:   # the ranks share stdout
    json.dump(dict(path=str(logger.experiment.path), steps=model.steps, calls=Spy.calls), fh)
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One child: a fit then a validate with one logger, and a fit whose training_step raises."""
    root = tmp_path_factory.mktemp("lightning") / "experiments"
    done = run_child(FIT, timeout=180, NUBOARD_DIR=str(root), OMP_NUM_THREADS="1")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def assert_logged(path: str, calls: list) -> None:
    """Every metric Lightning gave the logger is in the run at Lightning's step, under its
    NuBoard name."""
    scalars = nb.read_scalars(path)
    assert calls
    for metrics, step in calls:
        for key, value in metrics.items():
            s = scalars[scalar_name(key, frozenset({"system", "timing"}))]
            points = dict(zip(s.steps, s.values))
            assert step in points, (key, step, list(s.steps))
            assert points[step] == pytest.approx(value), (key, step)


@needs_lightning
def test_fit_records_config_metrics_and_status(fitted):
    out, stderr = fitted
    fit = out["fit"]
    run = json.loads((Path(fit["path"], "run.json")).read_text())
    assert run["status"] == "finished" and fit["status_after_fit"] == "finished"
    assert run["config"] == {"data": "random", "lr": 0.1, "hidden": 4, "fail_at": None}
    assert (run["name"], run["tags"]) == ("tiny", ["cpu"])
    assert_logged(fit["path"], fit["calls"])
    scalars = nb.read_scalars(fit["path"])
    # the trainer's own steps: training_step saw global_step 0..5 and logged its loss there
    assert fit["steps"] == list(range(6))
    assert list(scalars["train_loss"].steps) == fit["steps"]
    assert list(scalars["train_loss"].values) == pytest.approx(fit["losses"])
    assert list(scalars["val/acc"].values) == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6])
    assert list(scalars["val_loss"].steps)[:2] == [2, 5]      # validation every 3 steps (and validate: 6)
    assert list(scalars["rank/seen"].steps) == fit["steps"]
    # a name NuBoard refuses is mapped, not dropped, and the mapping is said once
    assert "system/temp" not in scalars and list(scalars["system_/temp"].values) == [40.0] * 6
    assert out["refused"] == ["InvalidNameError", "TypeError"]
    said = stderr.count("metric 'system/temp' is logged as 'system_/temp'")
    assert said in (1, 2), said                # once a logger (the fit's, the crash's), not each step


@needs_lightning
def test_validate_after_fit_continues_the_run(fitted):
    """The logger's run is finished at the end of fit; validate's metrics go to the same run, in a
    second session, which validate's end finishes again."""
    out, _ = fitted
    assert out["validate"]["path"] == out["fit"]["path"]
    run = json.loads((Path(out["fit"]["path"], "run.json")).read_text())
    assert [s["session"] for s in run["sessions"]] == [0, 1]
    assert run["status"] == "finished"
    (metrics, step), = out["validate"]["calls"]
    assert step == 6 and set(metrics) == {"val_loss", "epoch"}
    val = nb.read_scalars(out["fit"]["path"], "val_loss")["val_loss"]
    assert list(val.steps) == [2, 5, 6] and val.values[-1] == pytest.approx(metrics["val_loss"])
    assert len(nb.read_scalars(out["fit"]["path"], "train_loss")["train_loss"]) == 6


@needs_lightning
def test_exception_in_training_leaves_the_run_crashed(fitted):
    out, _ = fitted
    crash = out["crash"]
    assert crash["raised"] == "diverged" and crash["steps"] == [0, 1]
    run = json.loads((Path(crash["path"], "run.json")).read_text())
    assert run["status"] == "crashed"
    assert run["error"] == {"type": "RuntimeError", "message": "diverged"}
    assert list(nb.read_scalars(crash["path"], "train_loss")["train_loss"].steps) == [0, 1]


@needs_lightning
def test_ddp_ranks_share_one_run(tmp_path):
    """Lightning's own DDP launcher (two processes, gloo) sets no RANK; the logger gives nb.init
    torch.distributed's ranks, so both land in one run: rank 0 logs the metrics, and what code
    on rank 1 logs through logger.experiment is in rank 1's log of the same run."""
    root = tmp_path / "experiments"
    root.mkdir()
    script = tmp_path / "ddp_fit.py"
    script.write_text(DDP)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path, env=child_env(NUBOARD_DIR=str(root), OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((root / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["path"] == ranks[1]["path"]
    folder = Path(ranks[0]["path"])
    assert [p.name for p in folder.parent.iterdir() if not p.name.startswith(".")] == [folder.name]
    assert sorted(p.name for p in folder.glob("events.*")) == ["events.r0.s0.log", "events.r1.s0.log"]
    run = json.loads((folder / "run.json").read_text())
    assert (run["status"], run["world_size"], run["name"]) == ("finished", 2, "ddp")
    assert run["config"]["lr"] == 0.1
    assert_logged(ranks[0]["path"], ranks[0]["calls"])
    for rank in (0, 1):
        seen = nb.read_scalars(folder, "rank/seen", rank=rank)["rank/seen"]
        assert list(seen.steps) == ranks[rank]["steps"] == list(range(6))
        assert set(seen.values) == {float(rank)}
    assert "train_loss" not in nb.read_scalars(folder, rank=1)


def test_scalar_names_map_what_nuboard_refuses():
    reserved = frozenset({"system", "timing"})
    for kept in ("train_loss", "val/acc", "eval_loss", "learning_rate", "grad_norm", "a b/c-d.e"):
        assert scalar_name(kept, reserved) == kept
    assert scalar_name("/a//b/", reserved) == "a/b"
    assert scalar_name("", reserved) == scalar_name("//", reserved) == "_"
    assert scalar_name("loss\n\x7f\udcff", reserved) == "loss___"
    assert scalar_name("system/cpu", reserved) == "system_/cpu"
    assert scalar_name("timing", reserved) == "timing_"
    assert scalar_name("system/cpu", frozenset()) == "system/cpu"
    assert scalar_name(3, reserved) == "3"
    long = "x" * 300
    assert scalar_name(long) == scalar_name(long) != scalar_name("x" * 301)
    assert len(scalar_name(long)) == 249 and scalar_name(long).startswith("x" * 240 + "~")


def test_metric_log_maps_skips_and_never_merges(root):
    """Two keys never share a scalar: the later one gets '~2'; a value that is no number is left
    out; each change is said once, in a warning."""
    with nb.init("llm", dir=root, **QUIET) as run:
        log = MetricLog(run, "Test")
        with pytest.warns(RuntimeWarning) as said:
            log.log({"a//b": 1.0, "a/b": 2.0, "system/x": 3, "note": "text", "n": 4}, step=5)
            log.log({"a//b": 1.5, "a/b": 2.5, "note": "again"}, step=6)
    messages = [str(w.message) for w in said]
    assert messages == ["Test: metric 'a//b' is logged as 'a/b', a name NuBoard takes (see docs/integrations.md).",
                        "Test: metric 'a/b' is logged as 'a/b~2', a name NuBoard takes (see docs/integrations.md).",
                        "Test: metric 'system/x' is logged as 'system_/x', a name NuBoard takes "
                        "(see docs/integrations.md).",
                        "Test: metric 'note' is not logged: its value 'text' is not a number."]
    got = {name: (list(s.steps), list(s.values)) for name, s in nb.read_scalars(run.path).items()}
    assert got == {"a/b": ([5, 6], [1.0, 1.5]), "a/b~2": ([5, 6], [2.0, 2.5]), "system_/x": ([5], [3.0]),
                   "n": ([5], [4.0])}


def test_missing_lightning_is_one_line():
    """Without lightning, importing the logger says which extra to install; import nuboard and
    nuboard.integrations import no trainer library."""
    done = run_child("""
        import sys
        import nuboard, nuboard.integrations
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("lightning", "transformers", "torch"))
        assert not heavy, heavy
        sys.modules["lightning"] = None             # as if it were not installed
        try:
            import nuboard.integrations.lightning
        except nuboard.errors.MissingExtraError as exc:
            print(exc)
    """)
    line = done.stdout.strip()
    assert len(line.splitlines()) == 1
    assert "pip install 'nuboard[lightning]'" in line and "nuboard.integrations.lightning" in line
