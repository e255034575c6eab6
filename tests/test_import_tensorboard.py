"""`nuboard import tensorboard`: event files written by torch's and tensorboardX's SummaryWriter,
imported through the CLI and the Python API, every point compared with what TensorBoard's own
EventAccumulator reads; idempotency, a SIGKILL half way, errors, ls, the query language and
the viewer's pages on the imported runs."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import child_env, cli, one_line_error, run_child
from helpers_http import Viewer
from helpers_terminal import dialog

import nuboard as nb
from nuboard import importers
from nuboard.importers.source_runs import iso

pytest.importorskip("tensorboard")
pytest.importorskip("tensorboardX")
pytest.importorskip("torch")

WRITE_LOGS = """
    import sys, time
    from torch.utils.tensorboard import SummaryWriter
    import tensorboardX
    logdir = sys.argv[1] if len(sys.argv) > 1 else {logdir!r}
    w = SummaryWriter(logdir + "/torch_run")              # simple_value summaries
    for i in range(50):
        w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.add_scalar("weird//name/", i * 0.1, i)           # empty segments: renamed
        w.add_scalar("system/cpu", 50.0 + i, i)             # the default system prefix: kept
        w.add_scalar("eval/acc", i / 50, i * 10, new_style=True, double_precision=True)  # tensors
        w.add_scalar("eval/f32", i / 3, i * 10, new_style=True)
    w.add_scalars("multi", {{"a": 1.5, "b": 2.5}}, 7)      # two more folders
    w.add_hparams({{"lr": 0.1, "opt": "adam"}}, {{"hparam/acc": 0.9}}, run_name=".")  # this folder
    w.close()
    x = tensorboardX.SummaryWriter(logdir + "/tbx/run 1")
    for i in range(40):
        x.add_scalar("train/loss", 2.0 / (i + 1), i, walltime=1.7e9 + i)
    x.add_hparams({{"lr": 0.2, "batch": 16}}, {{"hparam/acc": 0.8}})   # a time-named subfolder
    x.close()
    from tensorboardX.event_file_writer import EventFileWriter     # as TF2 writes: tensors, with
    from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2   # metadata on the first only
    raw = EventFileWriter(logdir + "/tf2")
    for i in range(-1, 20):
        first = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
        value = summary_pb2.Summary.Value(tag="tf2/loss", tensor=tensor_pb2.TensorProto(
            dtype=1, float_val=[i * 0.5]), metadata=first if i == -1 else None)
        raw.add_event(event_pb2.Event(wall_time=1.7e9 + i, step=i, summary=summary_pb2.Summary(value=[value])))
    raw.close()
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tb") / "logs"
    run_child(WRITE_LOGS.format(logdir=str(folder)))
    return folder


def tensorboard_points(folder: Path) -> dict[str, list[tuple]]:
    """{tag: [(step, wall time, value)]} of one folder as TensorBoard's EventAccumulator reads it."""
    from tensorboard.backend.event_processing.event_accumulator import (
        SCALARS,
        TENSORS,
        EventAccumulator,
    )
    from tensorboard.util import tensor_util
    acc = EventAccumulator(str(folder), size_guidance={SCALARS: 0, TENSORS: 0})
    acc.Reload()
    out = {tag: [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()[SCALARS]}
    for tag in acc.Tags()[TENSORS]:
        if tag.startswith("_hparams_"):
            continue
        out[tag] = [(e.step, e.wall_time, tensor_util.make_ndarray(e.tensor_proto).item())
                    for e in acc.Tensors(tag)]
    return out


def imported_runs(root: Path, project: str) -> dict[str, tuple[Path, dict]]:
    """{source key: (run folder, run.json)} of a project's runs."""
    out = {}
    for folder in sorted((root / project / "runs").iterdir()):
        doc = json.loads((folder / "run.json").read_text())
        out[doc["source"]["key"]] = (folder, doc)
    return out


def check_every_point(logdir: Path, runs: dict) -> int:
    """Every point of every folder is in its run, as TensorBoard has it; the times and config."""
    total = 0
    folders = sorted({p.parent for p in logdir.rglob("events.out.tfevents.*")})
    assert sorted(runs) == sorted(f.relative_to(logdir).as_posix() for f in folders)
    for folder in folders:
        key = folder.relative_to(logdir).as_posix()
        run_dir, doc = runs[key]
        expected = {tag: [p for p in points if p[0] >= 0]      # a negative step: left out, said so
                    for tag, points in tensorboard_points(folder).items()}
        renamed = doc["source"].get("renamed", {})
        got = nb.read_scalars(run_dir)
        assert sorted(got) == sorted(renamed.get(tag, tag) for tag in expected)
        for tag, points in expected.items():
            scalar = got[renamed.get(tag, tag)]
            assert list(zip(scalar.steps, scalar.wall_times, scalar.values)) == points, (key, tag)
            total += len(points)
        walls = [w for points in expected.values() for _, w, _ in points]
        assert doc["start_time"] <= iso(min(walls)) and doc["end_time"] >= iso(max(walls))
        assert doc["status"] == "finished" and doc["name"] == key
        assert doc["source"]["tool"] == "tensorboard" and doc["source"]["uri"] == str(logdir)
    return total


def test_cli_imports_every_point_once(root, logdir):
    done = cli(root, "import", "tensorboard", str(logdir), "--project", "tb")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("nuboard import tensorboard: note: tf2: 1 point with a negative step "
                           "left out (NuBoard steps start at 0)\n")   # and no progress bar in a pipe
    assert len(done.stdout.splitlines()) == 1
    assert done.stdout.startswith("Imported 6 runs (")
    runs = imported_runs(root, "tb")
    total = check_every_point(logdir, runs)
    assert f"({total:,} points)" in done.stdout and total == 50 * 5 + 1 + 1 + 1 + 40 + 1 + 20
    torch_run = runs["torch_run"][1]
    assert torch_run["config"] == {"lr": 0.1, "opt": "adam"}
    assert torch_run["source"]["renamed"] == {"weird//name/": "weird/name"}
    assert torch_run["prefixes"]["system"] != "system"        # so 'system/cpu' was taken as it is
    hparams_run = next(doc for key, (_, doc) in runs.items() if key.startswith("tbx/run 1/"))
    assert hparams_run["config"] == {"lr": 0.2, "batch": 16.0}  # TensorBoard keeps numbers as doubles
    assert runs["tbx/run 1"][1]["start_time"] == iso(1.7e9)     # the earliest event: a given walltime

    again = cli(root, "import", "tensorboard", str(logdir), "--project", "tb", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["written"] == [] and sorted(report["skipped"]) == sorted(f.name for f, _ in runs.values())
    assert report["summary"].startswith("Nothing to import") and "6 runs are already imported" in report["summary"]
    assert len(list((root / "tb" / "runs").iterdir())) == 6

    listed = json.loads(cli(root, "ls", "--json").stdout)
    assert sorted(r["name"] for r in listed) == sorted(runs)
    assert {r["status"] for r in listed} == {"finished"}
    found = json.loads(cli(root, "ls", "tb", "--query", "lr>=0.15", "--json").stdout)
    assert [r["name"] for r in found] == [hparams_run["name"]]
    found = json.loads(cli(root, "ls", "tb", "--query", "opt=adam train/loss<0.03", "--json").stdout)
    assert [r["name"] for r in found] == ["torch_run"]

    torch_id = runs["torch_run"][0].name
    with Viewer(root) as v:
        assert "torch_run" in v.get("/p/tb").text
        page = v.get(f"/p/tb/.run/{torch_id}").text
        assert "weird/name" in page
        assert "Imported from</dt>" in page and f"TensorBoard <code>{logdir}</code> · <code>torch_run</code>" in page
        shown = v.get(f"/api/p/tb/.run/{torch_id}").json()
        assert shown["name"] == "torch_run"
        assert shown["source"] == {"tool": "TensorBoard", "uri": str(logdir), "key": "torch_run"}
        assert 'data-name="train/loss"' in v.get(f"/p/tb/.charts?runs={torch_id}").text
        chart = v.get(f"/api/p/tb/.chart?name=train/loss&runs={torch_id}").json()
        assert chart["series"][0]["total"] == 50
        assert v.get("/p/tb/.timeline").status == 200


def test_api_dry_run_then_import(root, logdir):
    planned = importers.tensorboard(logdir, "tb", dir=root, dry_run=True)
    assert planned.dry_run and planned.written == [] and len(planned.pending) == 6
    assert not (root / "tb").exists()
    seen = []
    result = importers.tensorboard(logdir, "tb", dir=root, progress=lambda d, t, k: seen.append((d, t, k)))
    assert sorted(result.pending) == sorted(planned.pending) and len(result.written) == 6
    assert seen[0] == (0, 6, result.pending[0]) and seen[-1][:2] == (6, 6)
    assert sorted(result.written) == sorted(p.name for p in (root / "tb" / "runs").iterdir())
    assert list((root / ".nuboard-import").iterdir()) == [root / ".nuboard-import" / "lock"]
    again = importers.tensorboard(str(logdir), "tb", dir=root)
    assert again.written == [] and sorted(again.skipped) == sorted(result.written)
    assert importers.tensorboard(logdir, "tb", dir=root, dry_run=True).pending == []


def test_sigkill_half_way_leaves_no_run(root, tmp_path):
    big = tmp_path / "big"
    run_child("""
        import sys, tensorboardX
        w = tensorboardX.SummaryWriter(sys.argv[1] if len(sys.argv) > 1 else %r)
        for i in range(30_000):
            w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.close()
    """ % str(big / "long"))
    child = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "import", "tensorboard",
                              str(big), "--project", "tb"], env=child_env(NUBOARD_DIR=str(root)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    staged = []
    while not staged and child.poll() is None and time.monotonic() < deadline:
        staged = list(root.glob(".nuboard-import/*/tb/runs/*/events.r0.s0.log"))
        time.sleep(0.005)
    assert staged, "the import ended before its run was staged"
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert json.loads(cli(root, "ls", "--json").stdout) == []
    assert not list(root.glob("tb/runs/*"))

    done = cli(root, "import", "tensorboard", str(big), "--project", "tb")
    assert done.returncode == 0 and "Imported 1 run (30,000 points)" in done.stdout, done.stderr
    assert [p.name for p in (root / ".nuboard-import").iterdir()] == ["lock"]   # the leftover is gone
    (run_dir, _), = imported_runs(root, "tb").values()
    loss = nb.read_scalars(run_dir)["train/loss"]
    assert list(loss.steps) == list(range(30_000)) and loss.values[-1] == pytest.approx(1 / 30_000)


def test_errors_are_one_line(root, tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "sub" / "notes.txt").write_text("no events here")
    for folder, words in ((tmp_path / "empty", "no TensorBoard event files"),
                          (tmp_path / "missing", "does not exist")):
        done = cli(root, "import", "tensorboard", str(folder), "--project", "tb")
        assert done.returncode == 1 and words in one_line_error(done)
        assert done.stdout == ""
    assert not (root / "tb").exists()
    bad = cli(root, "import", "tensorboard", str(tmp_path), "--project", "tb/runs")
    assert bad.returncode == 1 and "project" in one_line_error(bad)


def test_a_terminal_shows_a_progress_bar_then_the_summary(root, logdir):
    code, out = dialog(root, ["import", "tensorboard", str(logdir), "--project", "tb"], [],
                       timeout=120)
    assert code == 0, out
    assert "Importing" in out                             # the bar, on a terminal only
    assert "Imported 6 runs" in out and "into tb; 0 already imported." in out, out


@pytest.mark.parametrize("tool, source", [("tensorboard", "logs"), ("mlflow", "sqlite:///m.db")])
def test_a_missing_extra_is_one_line_naming_the_pip_install(root, tmp_path, tool, source):
    """Without the tool's package: one line naming `pip install 'nuboard[tool]'`, nothing written."""
    (tmp_path / "logs").mkdir()
    code = f"""
        import sys
        sys.modules[{tool!r}] = None          # as if the package were not installed
        sys.argv = ["nuboard", "import", {tool!r}, {source!r}, "--project", "p", "--dir", {str(root)!r}]
        from nuboard.cli.main import main
        main()
    """
    done = run_child(code, check=False)
    line = one_line_error(done)
    assert done.returncode == 1 and f"pip install 'nuboard[{tool}]'" in line, done.stderr
    assert not root.exists() or not any(root.iterdir())


WRITE_MEDIA = """
    import numpy as np
    from torch.utils.tensorboard import SummaryWriter
    w = SummaryWriter({folder!r})
    for i in range(4):
        w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.add_histogram("weights/a", np.arange(10.0) * i, i)
        w.add_histogram("weights/b", np.ones(5) * i, i)
    for i in range(3):
        w.add_image("samples", np.zeros((3, 8, 8)), i)
    w.add_text("notes", "hello", 0)
    w.add_audio("clip", np.zeros(800), 0, sample_rate=8000)
    w.close()
"""


def test_what_is_not_imported_yet_is_one_note_per_kind_with_counts(root, tmp_path):
    run_child(WRITE_MEDIA.format(folder=str(tmp_path / "media")))
    done = cli(root, "import", "tensorboard", str(tmp_path / "media"), "--project", "tb")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Imported 1 run (4 points, 12 media entries)")
    note = "nuboard import tensorboard: note: .: "     # images, histograms and text are kept
    assert done.stderr.splitlines() == [
        note + "1 audio clip in 1 tag (clip) left out: NuBoard does not import them yet"]
