"""The query box that helps: warnings for keys no run has (viewer, JSON twins, `nuboard ls`),
the completion endpoint, a half-typed query that keeps the rows, and every example query of
the README and the placeholders finding runs in the demo."""
from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from urllib.parse import quote

import pytest
from helpers import REPO, run_cli
from helpers_http import Viewer, visible_text

LR_HINT = "unknown key 'lr' — did you mean optimizer.lr?"


@pytest.fixture
def project(make_run):
    """Three runs in 'llm' with nested config (optimizer.lr, model.width), train/loss, tags
    and groups."""
    for i, lr in enumerate([1e-4, 1e-3, 1e-2]):
        make_run("llm", points={"train/loss": [(0, 2.0), (1, 1.0 / (i + 1))]},
                 run_name=f"lr{lr:g}", config={"optimizer": {"lr": lr}, "model": {"width": 256}},
                 tags=["sweep"] + (["baseline"] if i == 1 else []), group="lr-sweep")
    make_run("llm", run_name="other", tags=["data"])


@pytest.mark.parametrize("query, warning", [
    ("lr>=1e-3", LR_HINT),                                       # a config key's last part
    ("config.lr>=1e-3", "unknown key 'config.lr' — did you mean config.optimizer.lr?"),
    ("optimizer.lrr>0", "unknown key 'optimizer.lrr' — did you mean optimizer.lr?"),
    ("min(train/los)<1", "unknown key 'train/los' — did you mean train/loss?"),
    ("train/lss<1", "unknown key 'train/lss' — did you mean train/loss?"),
    ("started>2d", "unknown key 'started' — did you mean created?"),   # not a field
    ("stauts:finished", "unknown key 'stauts' — did you mean status?"),
    ("zzzqqq>1", "unknown key 'zzzqqq' — no run has a config key or scalar of that name"),
])
def test_an_unknown_key_is_a_warning_naming_the_nearest_key_and_the_query_still_runs(
        root, project, query, warning):
    with Viewer(root) as v:
        twin = v.get("/api/p/llm/runs?q=" + quote(query))
        assert twin.status == 200 and twin.json()["warnings"] == [warning]
        assert twin.json()["total"] == 0                  # it ran: no run has that key
        page = v.get("/p/llm?q=" + quote(query))
        assert page.status == 200 and 'class="query-warning"' in page.text
        assert warning in html.unescape(visible_text(page.text))
        timeline = v.get("/api/p/llm/.timeline?q=" + quote(query)).json()
        assert timeline["warnings"] == [warning]
        assert warning in html.unescape(v.get("/p/llm/.timeline?q=" + quote(query)).text)


def test_known_keys_fields_and_words_give_no_warning(root, project):
    query = ("tag:sweep optimizer.lr>=1e-3 config.model.width=256 train/loss<0.9 "
             "min(train/loss)<2 status:finished created>2020-01-01 -group:x lr0.00")
    with Viewer(root) as v:
        twin = v.get("/api/p/llm/runs?q=" + quote(query)).json()
        assert twin["warnings"] == [] and [r["name"] for r in twin["runs"]] == ["lr0.001"]
        assert "query-warning" not in v.get("/p/llm?q=" + quote(query)).text
        assert v.get("/api/p/llm/runs").json()["warnings"] == []
        assert v.get("/api/p/llm/.timeline?q=" + quote(query)).json()["warnings"] == []


def test_each_unknown_key_is_named_once(root, project):
    with Viewer(root) as v:
        twin = v.get("/api/p/llm/runs?q=" + quote("lr>1 OR -lr<0 widht>1")).json()
    assert twin["warnings"] == [LR_HINT, "unknown key 'widht' — did you mean model.width?"]


def test_ls_warns_on_stderr_and_keeps_stdout_and_exit_code(root, project):
    plain = run_cli(root, "ls", "llm", "--query", "lr>=1e-3 OR tag:baseline")
    assert plain.returncode == 0 and "lr0.001" in plain.stdout
    assert plain.stderr.splitlines() == ["nuboard ls: " + LR_HINT]
    as_json = run_cli(root, "ls", "llm", "-q", "lr>=1e-3 OR tag:baseline", "--json")
    assert as_json.returncode == 0 and as_json.stderr.splitlines() == ["nuboard ls: " + LR_HINT]
    assert [r["name"] for r in json.loads(as_json.stdout)] == ["lr0.001"]
    clean = run_cli(root, "ls", "llm", "-q", "optimizer.lr>=1e-3", "--json")
    assert clean.returncode == 0 and clean.stderr == ""
    assert len(json.loads(clean.stdout)) == 2


def test_ls_over_every_project_warns_only_for_a_key_no_project_has(root, project, make_run):
    make_run("vision", run_name="vit", config={"lr": 0.1})
    both = run_cli(root, "ls", "-q", "lr>0 optimizer.lr>0", "--json")
    assert both.returncode == 0 and both.stderr == "" and json.loads(both.stdout) == []
    one = run_cli(root, "ls", "vision", "-q", "lr>0 optimizer.lr>0")
    assert one.stderr.splitlines() == ["nuboard ls: unknown key 'optimizer.lr' — did you mean lr?"]


def test_completion_endpoint_lists_keys_and_values(root, project):
    with Viewer(root) as v:
        keys = v.get("/api/p/llm/.query-keys").json()
    assert keys["project"] == "llm"
    assert keys["config"] == ["model.width", "optimizer.lr"]
    assert keys["scalar"] == ["train/loss"]
    assert {"tag", "status", "group", "name", "created", "ended"} <= set(keys["fields"])
    assert "min" in keys["summaries"]
    assert keys["values"]["tag"] == ["baseline", "data", "sweep"]
    assert keys["values"]["group"] == ["lr-sweep"]
    assert "finished" in keys["values"]["status"] and "crashed" in keys["values"]["status"]


def test_a_half_typed_query_from_htmx_keeps_the_rows_and_shows_the_error_by_the_box(root, project):
    hx = {"HX-Request": "true", "HX-Target": "runs-results"}
    with Viewer(root) as v:
        bad = v.get("/p/llm?q=" + quote("tag:sweep optimizer.lr>="), headers=hx)
        assert bad.status == 200
        assert bad.headers["hx-reswap"] == "none" and bad.headers["hx-push-url"] == "false"
        assert 'id="runs-results"' not in bad.text                  # the rows are not replaced
        assert re.search(r'id="query-notes"[^>]*hx-swap-oob="true"', bad.text)
        assert "expected a value after 'optimizer.lr>='" in html.unescape(bad.text)
        good = v.get("/p/llm?q=" + quote("tag:sweep lr>1"), headers=hx)
        assert "hx-reswap" not in good.headers and 'id="runs-results"' in good.text
        notes = good.text[good.text.index('id="query-notes"'):]
        assert "query-error" not in notes and "did you mean optimizer.lr" in html.unescape(notes)
        whole = v.get("/p/llm?q=" + quote("tag:"))               # no script: the page says it
        assert whole.status == 200 and whole.text.count('class="error query-error"') == 1


# ---- the examples find runs in the demo ----

def readme_queries() -> list[tuple[str, list[str]]]:
    """The `nuboard ls ... --query '...'` lines of the README, as argument lists."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("nuboard ls ")
             and ("--query" in ln or " -q " in ln)]
    return [(ln, shlex.split(ln)[1:]) for ln in lines]


def placeholders() -> dict[str, str]:
    """The placeholder of each query box (Runs, Timeline), from the templates."""
    out = {}
    for name, box in (("runs.html", "q"), ("timeline.html", "tl-q")):
        text = (REPO / "templates" / name).read_text(encoding="utf-8")
        found = re.search(r'<input id="' + box + r'"[^>]*placeholder="([^"]*)"', text)
        out[name] = html.unescape(found.group(1))
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("query-demo") / "experiments"
    write_demo(root, progress=lambda _line: None)
    return root


def test_readme_examples_and_placeholders_find_runs_in_the_demo(demo):
    examples = readme_queries()
    assert examples, "the README shows a query"
    for line, args in examples:
        done = run_cli(demo, *args, "--json")
        assert done.returncode == 0, (line, done.stderr)
        assert "unknown key" not in done.stderr, (line, done.stderr)
        assert len(json.loads(done.stdout)) > 0, line
    boxes = placeholders()
    assert set(boxes) == {"runs.html", "timeline.html"} and all(boxes.values())
    for template, query in boxes.items():
        done = run_cli(demo, "ls", "llm-pretrain", "--query", query, "--json")
        assert done.returncode == 0 and done.stderr == "", (template, query, done.stderr)
        assert len(json.loads(done.stdout)) > 0, (template, query)
