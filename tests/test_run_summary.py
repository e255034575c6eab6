"""The run page summarises a run over real HTTP: its Results (last, min and max with their
steps), a crashed run's exception line (run.json's `error`, or the console's last traceback for
a run written before it was recorded) and a lost run's last sign of life."""
from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest
from helpers import QUIET, killed_run, run_child
from helpers_http import Viewer, visible_text

import nuboard as nb
from nuboard.files import runjson
from nuboard.files.records import format_local_time
from nuboard.web import run_results

CRASH_WITH = """
    import nuboard as nb
    with nb.init("llm", run_name="diverged", system_metrics=False, capture_env=False) as run:
        print("run", run.id, flush=True)
        run.add_scalar("train/loss", 2.5, step=0)
        raise ValueError("lr must be positive")
"""
CRASH_AT_EXIT = """
    import nuboard as nb
    run = nb.init("llm", run_name="diverged", system_metrics=False, capture_env=False)
    print("run", run.id, flush=True)
    run.add_scalar("train/loss", 2.5, step=0)
    try:
        {}["lr"]
    except KeyError:
        raise ValueError("lr must be positive")
"""


def crashed_child(root: Path, code: str) -> Path:
    """Run a script that crashes in a child process; the folder of its run."""
    proc = run_child(code, check=False, NUBOARD_DIR=str(root))
    assert proc.returncode == 1 and "ValueError: lr must be positive" in proc.stderr
    run_id = re.search(r"^run (\S+)$", proc.stdout, re.M).group(1)
    return root / "llm" / "runs" / run_id


def header(page: str) -> str:
    """The visible text of the run page's header (above the Overview)."""
    return visible_text(page.split('<div class="overview">')[0].split('class="run-head"')[1])


@pytest.mark.parametrize("code", [CRASH_WITH, CRASH_AT_EXIT], ids=["with-block", "at-exit"])
def test_a_crash_records_its_exception_and_the_page_shows_it(root, code):
    folder = crashed_child(root, code)
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "crashed"
    assert doc["error"] == {"type": "ValueError", "message": "lr must be positive"}
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.run/{folder.name}")
        run = v.get(f"/api/p/llm/.run/{folder.name}").json()
    assert page.status == 200
    top = header(page.text)
    assert "Crashed with ValueError: lr must be positive" in " ".join(top.split())
    assert "last traceback in the console" not in top
    assert run["error"]["line"] == "ValueError: lr must be positive"
    assert run["error"]["source"] == "run.json"


def test_an_older_run_without_the_field_shows_the_consoles_last_traceback(root):
    folder = crashed_child(root, CRASH_AT_EXIT)          # two tracebacks: KeyError, then ValueError
    runjson.update_run(folder, lambda doc: doc.pop("error"))   # as a run before `error` was recorded
    log = (folder / "files" / "output.log").read_text()
    assert log.count("Traceback (most recent call last):") == 2 and "KeyError: 'lr'" in log
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.run/{folder.name}").text
        run = v.get(f"/api/p/llm/.run/{folder.name}").json()
        console = v.get(f"/p/llm/.run/{folder.name}?tab=console").text
    top = " ".join(header(page).split())
    assert "Crashed with ValueError: lr must be positive (the last traceback in the console)" in top
    assert "KeyError" not in top
    assert run["error"] == {"type": "ValueError", "message": "lr must be positive",
                            "line": "ValueError: lr must be positive", "source": "console"}
    assert "ValueError: lr must be positive" in " ".join(header(console).split())


def test_a_run_without_a_traceback_or_not_crashed_shows_no_crash_line(root):
    with pytest.raises(RuntimeError):
        with nb.init("llm", dir=root, run_name="quiet-crash", **QUIET) as crashed:
            raise RuntimeError("no console captured")
    runjson.update_run(crashed.path, lambda doc: doc.pop("error"))
    with nb.init("llm", dir=root, run_name="fine", capture_console=True, system_metrics=False,
                 capture_env=False) as fine:
        print("Traceback (most recent call last):\nValueError: only printed")
    with Viewer(root) as v:
        for run_id in (crashed.id, fine.id):
            page = v.get(f"/p/llm/.run/{run_id}").text
            assert "crash-line" not in page and "Crashed with" not in visible_text(page)
            assert v.get(f"/api/p/llm/.run/{run_id}").json()["error"] is None


def test_a_resumed_crashed_run_that_finishes_drops_the_error(root):
    folder = crashed_child(root, CRASH_WITH)
    again = nb.init("llm", dir=root, run_id=folder.name, resume="must", **QUIET)
    again.add_scalar("train/loss", 1.0, step=1)
    again.finish()
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "finished" and "error" not in doc
    with Viewer(root) as v:
        assert "Crashed with" not in visible_text(v.get(f"/p/llm/.run/{folder.name}").text)


def test_a_lost_run_says_when_it_was_last_seen(root):
    run_id = killed_run(root)
    folder = root / "llm" / "runs" / run_id
    seen = int(time.time()) - 180                  # its last heartbeat, three minutes ago,
    start = seen - 220                              # 3m 40s after it started
    start_iso = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start))
    runjson.update_run(folder, lambda doc: doc.update(start_time=start_iso))
    os.utime(folder / "heartbeat", (seen, seen))
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.run/{run_id}").text
        run = v.get(f"/api/p/llm/.run/{run_id}").json()
    assert run["status"] == "lost"
    seen_iso = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(seen))
    assert run["last_seen"]["time"] == seen_iso and 180 <= run["last_seen"]["ago_s"] < 240
    assert run["duration_s"] == 220 and run["duration"] == "3m 40s"
    top = " ".join(header(page).split())
    assert re.search(rf"lost last seen {re.escape(format_local_time(seen_iso))} \(3m \d\ds ago\)",
                     top), top
    facts = " ".join(visible_text(page.split('<dl class="facts">')[1].split("</dl>")[0]).split())
    assert "Duration 3m 40s (until last seen" in facts and "Duration 0s" not in facts


def summary_run(root: Path) -> nb.Run:
    """A run with known points under the user's prefixes, a timer and system scalars."""
    with nb.init("llm", dir=root, run_name="known", system_metrics=["memory"],
                 system_interval=0.05, capture_console=False, capture_env=False) as run:
        for step, value in [(0, 3.0), (10, 0.123456), (20, 0.5), (30, 0.75)]:
            run.add_scalar("train/loss", value, step=step)
        for step, value in [(5, 0.25), (15, 0.875), (25, 0.625)]:
            run.add_scalar("eval/acc", value, step=step)
        for step, value in [(1, 1.0), (2, float("nan")), (3, 4.0), (4, float("nan"))]:
            run.add_scalar("train/grad_norm", value, step=step)
        with run.timer("step"):
            time.sleep(0.3)                         # long enough for the memory sampler too
    return run


def test_results_table_has_last_min_max_and_their_steps(root):
    run = summary_run(root)
    with Viewer(root) as v:
        results = v.get(f"/api/p/llm/.run/{run.id}").json()["results"]
        page = v.get(f"/p/llm/.run/{run.id}").text
    by_name = {r["name"]: r for r in results["rows"]}
    assert results["steps"] is True and results["more"] == 0
    loss = by_name["train/loss"]
    assert (loss["last"], loss["last_step"]) == (0.75, 30)
    assert (loss["min"], loss["min_step"], loss["max"], loss["max_step"]) == (0.123456, 10, 3.0, 0)
    acc = by_name["eval/acc"]
    assert (acc["min"], acc["min_step"], acc["max"], acc["max_step"]) == (0.25, 5, 0.875, 15)
    grad = by_name["train/grad_norm"]                # NaN is last, but never a min or a max
    assert grad["last"] is None and grad["last_text"] == "NaN" and grad["last_step"] == 4
    assert (grad["min"], grad["min_step"], grad["max"], grad["max_step"]) == (1.0, 1, 4.0, 3)
    names = [r["name"] for r in results["rows"]]
    kinds = [n.split("/")[0] for n in names]
    assert names[:3] == ["train/loss", "train/grad_norm", "eval/acc"]   # as first logged
    assert kinds[3] == "timing"
    assert set(kinds[4:]) == {"system"} and len(kinds) > 4
    table = page.split('<table class="results">')[1].split("</table>")[0]
    rows = [" ".join(visible_text(tr).split()) for tr in table.split("<tr>")[2:]]
    assert rows[0] == "train/loss 0.75 30 0.12346 10 3 0"    # the one number text (5 digits)
    assert rows[1] == "train/grad_norm NaN 4 1 1 4 3"


def test_a_large_run_shows_the_catalogs_summary_without_min_max_steps(root, monkeypatch):
    run = summary_run(root)
    monkeypatch.setattr(run_results, "POINT_BUDGET", 5)     # the run holds more points than this
    with Viewer(root) as v:
        results = v.get(f"/api/p/llm/.run/{run.id}").json()["results"]
        page = visible_text(v.get(f"/p/llm/.run/{run.id}").text)
    loss = {r["name"]: r for r in results["rows"]}["train/loss"]
    assert results["steps"] is False
    assert (loss["last"], loss["last_step"], loss["min"], loss["max"]) == (0.75, 30, 0.123456, 3.0)
    assert loss["min_step"] is None and loss["max_step"] is None
    assert "steps of its min and max are not looked up" in page
    assert not math.isnan(loss["min"])


def test_a_run_without_scalars_says_so(root, make_run):
    folder = make_run("llm")
    with Viewer(root) as v:
        assert "No scalars logged." in visible_text(v.get(f"/p/llm/.run/{folder.name}").text)


def test_the_crash_line_is_text_not_markup(root):
    with pytest.raises(ValueError):
        with nb.init("llm", dir=root, run_name="hostile", **QUIET) as run:
            raise ValueError('<img src=x onerror="alert(1)"> & more')
    with Viewer(root) as v:
        page = v.get(f"/p/llm/.run/{run.id}").text
    assert "<img src=x" not in page
    assert "ValueError: &lt;img src=x onerror=&#34;alert(1)&#34;&gt; &amp; more" in page


def test_results_without_the_catalog_come_from_the_data(root):
    run = summary_run(root)
    stale = [{"name": "train/loss", "last": 0.5, "min": 0.5, "max": 3.0, "count": 3,
              "last_step": 20}]                      # synced before the last point
    for rows in ([], stale):
        got = run_results.scalar_results(Path(run.path), rows, {"system": "system",
                                                                "timing": "timing"})
        loss = {r["name"]: r for r in got["rows"]}["train/loss"]
        assert got["steps"] is True
        assert (loss["last"], loss["last_step"], loss["count"]) == (0.75, 30, 4)
        assert (loss["min"], loss["min_step"], loss["max"], loss["max_step"]) == (0.123456, 10,
                                                                                  3.0, 0)
