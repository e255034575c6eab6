"""`import nuboard.wandb as wandb`: a W&B script of the 14 everyday lines runs unchanged, and
every value lands where NuBoard shows it (nb.history, run.json, the media files, the run page
over HTTP); mode="disabled" writes nothing; the rest of W&B says it is not supported; W&B's
and NuBoard's resume variables rejoin a run without a change of code."""
from __future__ import annotations

import json
import re
import textwrap
import warnings
from pathlib import Path

import pytest
from helpers import QUIET, QUIET_ARGS, run_child, write_run
from helpers_http import AppViewer, Viewer, visible_text

import nuboard as nb
import nuboard.wandb as wandb

# A W&B script as a lab has it; the test changes only its import line.
W_AND_B_SCRIPT = """
    import numpy as np
    import wandb

    run = wandb.init(project="llm", name="baseline", config={"lr": 3e-4, "epochs": 3},
                     tags=["base"], notes="first try", group="sweep-1")
    wandb.config.update({"batch": 64})
    print("lr", wandb.config["lr"], wandb.config.lr, flush=True)
    wandb.define_metric("epoch")
    wandb.define_metric("val/acc", step_metric="epoch")
    for i in range(10):
        wandb.log({"train/loss": 1.0 / (i + 1)})
    wandb.log({"grad/norm": 2.5}, commit=False)
    wandb.log({"lr/now": 3e-5})
    wandb.log({"val/acc": 0.5, "epoch": 1}, step=20)
    wandb.log({"val/acc": 0.75, "epoch": 2}, step=30)
    run.summary["best"] = 0.75
    wandb.log({"samples": wandb.Image(np.full((6, 8, 3), 0.5)),
               "weights": wandb.Histogram(np.arange(100.0), num_bins=10),
               "preds": wandb.Table(columns=["q", "a"], data=[["2+2", "4"], ["1+1", "3"]])})
    wandb.alert(title="Low accuracy", text="val/acc 0.75 is below 0.8", level=wandb.AlertLevel.WARN)
    print("run", run.id, run.name, run.project, flush=True)
    wandb.finish()
    print("after", wandb.run, flush=True)
"""
ONE_LINE = "import nuboard.wandb as wandb"


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
    """The W&B script run in a child with NUBOARD_DIR set: (root, run folder, its output)."""
    root = tmp_path_factory.mktemp("wandb")
    code = textwrap.dedent(W_AND_B_SCRIPT).replace("import wandb", ONE_LINE)
    proc = run_child(code, NUBOARD_DIR=str(root))
    run_id = re.search(r"^run (\S+) baseline llm$", proc.stdout, re.M).group(1)
    return root, root / "llm" / "runs" / run_id, proc


def doc_of(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


def test_the_script_runs_and_its_run_is_recorded(script_run):
    root, folder, proc = script_run
    assert "lr 0.0003 0.0003" in proc.stdout           # config["lr"] and config.lr
    assert "after None" in proc.stdout                  # wandb.run after finish
    assert "Low accuracy" in proc.stderr and "AlertWarning" in proc.stderr
    doc = doc_of(folder)
    assert doc["status"] == "finished"
    assert (doc["name"], doc["tags"], doc["notes"], doc["group"]) == ("baseline", ["base"], "first try", "sweep-1")
    assert doc["config"] == {"lr": 3e-4, "epochs": 3, "batch": 64}
    [row] = nb.runs("llm", dir=root)
    assert row.config == {"lr": 3e-4, "epochs": 3, "batch": 64}


def test_log_steps_follow_w_and_b(script_run):
    root, folder, _ = script_run
    points = {}
    for r in nb.history("llm", dir=root).to_pylist():
        points.setdefault(r["key"], []).append((r["step"], r["value"]))
    assert points["train/loss"] == [(i, 1.0 / (i + 1)) for i in range(10)]   # one step a log
    assert points["grad/norm"] == [(10, 2.5)] and points["lr/now"] == [(10, 3e-5)]  # commit=False
    assert points["val/acc"] == [(20, 0.5), (30, 0.75)]                      # log(step=)
    assert points["epoch"] == [(20, 1.0), (30, 2.0)]     # the step metric, a scalar at those steps


def test_summary_metrics_and_alerts_are_in_run_json(script_run):
    _, folder, _ = script_run
    doc = doc_of(folder)
    assert doc["summary"] == {"train/loss": 0.1, "grad/norm": 2.5, "lr/now": 3e-5, "val/acc": 0.75,
                              "epoch": 2, "best": 0.75}
    assert doc["metrics"] == {"epoch": {}, "val/acc": {"step_metric": "epoch"}}
    [alert] = doc["alerts"]
    assert (alert["level"], alert["title"], alert["text"]) == ("WARN", "Low accuracy",
                                                                "val/acc 0.75 is below 0.8")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", alert["time"])


def test_media_land_as_nuboard_media(script_run):
    _, folder, _ = script_run
    entries = {e.key: e for e in nb.read_media(folder)}
    assert set(entries) == {"samples", "weights", "preds"}
    assert {e.step for e in entries.values()} == {30}
    image = entries["samples"]
    assert (image.kind, image.width, image.height) == ("image", 8, 6)
    assert Path(image.path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert entries["weights"].value["counts"] == [10] * 10
    assert entries["preds"].value["rows"] == [["2+2", "4"], ["1+1", "3"]]


def test_the_run_page_shows_summary_and_alerts(script_run):
    root, folder, _ = script_run
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.run/{folder.name}")
        twin = v.get(f"/api/p/llm/.run/{folder.name}").json()
    assert page.status == 200
    summary = visible_text(page.text.split('id="run-summary"')[1].split("</section>")[0])
    assert re.search(r"best\s+0\.75", summary) and re.search(r"lr/now\s+3e-5", summary)
    alerts = visible_text(page.text.split('id="run-alerts-card"')[1].split("</section>")[0])
    assert "WARN" in alerts and "Low accuracy" in alerts and "val/acc 0.75 is below 0.8" in alerts
    assert "x=scalar:epoch" in page.text                  # val/acc charted against epoch
    assert {"key": "best", "value": 0.75} in twin["summary"]
    assert [(a["level"], a["title"]) for a in twin["alerts"]] == [("WARN", "Low accuracy")]


def test_disabled_mode_writes_nothing(tmp_path):
    run = wandb.init(project="llm", config={"lr": 1}, dir=tmp_path, mode="disabled")
    assert wandb.run is run and run.config.lr == 1
    wandb.config.update({"batch": 2})
    wandb.log({"loss": 1.0, "img": wandb.Histogram([1, 2, 3])})
    run.summary["best"] = 1.0
    wandb.define_metric("loss", summary="min")
    with pytest.warns(UserWarning, match="nothing"):
        wandb.alert(title="nothing", text="is written")
    wandb.finish()
    assert wandb.run is None and list(tmp_path.iterdir()) == []


def test_other_w_and_b_calls_name_themselves(tmp_path):
    with pytest.raises(NotImplementedError, match=r"^wandb\.watch is not supported by nuboard\.wandb"):
        wandb.watch(object())
    assert not hasattr(wandb, "Artifact")
    run = wandb.init(project="llm", dir=tmp_path, entity="team", **QUIET)
    try:
        with pytest.raises(NotImplementedError, match=r"^run\.log_artifact is not supported"):
            run.log_artifact("model.pt")
        with pytest.raises(NotImplementedError, match=r"sync_tensorboard"):
            wandb.init(project="llm", dir=tmp_path, sync_tensorboard=True)
    finally:
        wandb.finish(exit_code=1)
    assert doc_of(Path(run.url))["status"] == "crashed"        # finish(exit_code=1)


RESTARTED = """
    import nuboard.wandb as wandb
    run = wandb.init(project="llm", config={"lr": 0.1})
    for i in range(3):
        wandb.log({"loss": float(i)})
    print("run", run.id, run.resumed, flush=True)
"""


def test_wandb_run_id_and_resume_allow_rejoin(tmp_path):
    env = dict(NUBOARD_DIR=str(tmp_path), WANDB_RUN_ID="job-7", WANDB_RESUME="allow")
    first = run_child(RESTARTED, **env)
    second = run_child(RESTARTED, **env)
    assert "run job-7 False" in first.stdout and "run job-7 True" in second.stdout
    assert [p.name for p in (tmp_path / "llm" / "runs").iterdir()] == ["job-7"]
    steps = [(r["step"], r["value"]) for r in nb.history("llm", dir=tmp_path).to_pylist()]
    assert steps == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 0.0), (4, 1.0), (5, 2.0)]
    assert len(doc_of(tmp_path / "llm" / "runs" / "job-7")["sessions"]) == 2


PLAIN_NB = f"""
    import nuboard as nb
    with nb.init("llm", {QUIET_ARGS}) as run:
        run.add_scalar("loss", 1.0)
    print("run", run.id, run.session, flush=True)
"""


def test_nuboard_run_id_and_resume_rejoin_without_code(tmp_path, monkeypatch):
    env = dict(NUBOARD_DIR=str(tmp_path), NUBOARD_RUN_ID="job-8", NUBOARD_RESUME="auto")
    assert "run job-8 0" in run_child(PLAIN_NB, **env).stdout
    assert "run job-8 1" in run_child(PLAIN_NB, **env).stdout
    monkeypatch.setenv("NUBOARD_RUN_ID", "job-8")
    monkeypatch.setenv("NUBOARD_RESUME", "must")
    with nb.init("llm", dir=tmp_path, run_id="mine", resume="auto", **QUIET) as run:
        pass
    assert run.id == "mine"                                # the arguments win


@pytest.mark.parametrize("var, value", [("NUBOARD_RESUME", "maybe"), ("NUBOARD_RUN_ID", "a/b")])
def test_a_bad_variable_is_named(tmp_path, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        nb.init("llm", dir=tmp_path, **QUIET)
    assert not (tmp_path / "llm").exists()


def test_no_warning_leaks_from_a_quiet_script(tmp_path):
    """A script that logs only numbers gives no warning (the alert is the one warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with wandb.init(project="llm", dir=tmp_path, name="quiet", **QUIET) as run:
            wandb.log({"x": 1})
    assert doc_of(Path(run.url))["summary"] == {"x": 1}


HOSTILE = [
    {"summary": [1, 2], "alerts": {"title": "x"}, "metrics": "epoch"},
    {"summary": "best", "alerts": ["x", None, {"title": 5, "text": ["t"]}, {"level": 3, "title": "t"}],
     "metrics": {"a": "x", "b": {"step_metric": 5}, "c": {"step_metric": ""}}},
    {"summary": {"a": {"b": [1, {"c": "nan"}]}, "": None, "x" * 5000: "y" * 100_000},
     "alerts": [{"time": 5, "level": "<b>", "title": "<script>", "text": "z" * 100_000}] * 150},
    {"summary": {f"k{i}": i for i in range(6000)}},
]


@pytest.mark.parametrize("extra", HOSTILE, ids=["wrong-types", "wrong-items", "odd-values", "many"])
def test_a_hostile_summary_or_alerts_never_break_the_page_or_the_index(tmp_path, extra):
    """summary, alerts and metrics of any JSON shape, written by another tool: the run is still
    indexed and its page still opens, showing what is well formed."""
    folder = Path(write_run(tmp_path, "llm", {"x": [(0, 1.0)]}))
    doc = doc_of(folder)
    (folder / "run.json").write_text(json.dumps({**doc, **extra}))
    assert [r.id for r in nb.runs("llm", dir=tmp_path)] == [folder.name]
    with AppViewer(tmp_path) as v:
        page = v.get(f"/p/llm/.run/{folder.name}")
        twin = v.get(f"/api/p/llm/.run/{folder.name}")
    assert page.status == 200 and twin.status == 200
    assert "<script>" not in page.text.split('class="overview"')[1]
    if isinstance(extra.get("alerts"), list) and len(extra["alerts"]) == 150:
        assert len(twin.json()["alerts"]) == 100 and twin.json()["alerts_more"] == 50
    if len(extra.get("summary") or "") == 6000:
        assert len(twin.json()["summary"]) == 5000 and twin.json()["summary_more"] == 1000


def test_many_numbers_are_a_histogram_and_an_odd_value_is_a_warning(tmp_path):
    """As W&B does: a list or array of numbers logs as a histogram; a value NuBoard cannot
    log (a datetime) is one warning, and the rest of the row is logged."""
    import datetime as dt

    import numpy as np
    run = wandb.init(project="llm", dir=tmp_path, name="odd", capture_env=False,
                     system_metrics=False, capture_console=False)
    with pytest.warns(RuntimeWarning, match="'when' \\(datetime\\) is not logged"):
        wandb.log({"grads": np.arange(50.0), "ids": [1, 2, 3], "when": dt.datetime.now(),
                   "loss": 0.5})
    wandb.finish()
    kinds = {m["key"]: m["kind"] for m in nb.media("llm", dir=tmp_path).to_pylist()}
    assert kinds == {"grads": "histogram", "ids": "histogram"}
    assert [(p["key"], p["value"]) for p in nb.history("llm", dir=tmp_path).to_pylist()] == [
        ("loss", 0.5)]
    assert run.id
