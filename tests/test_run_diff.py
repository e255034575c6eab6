"""The Diff of selected runs over real HTTP: config, tags, git commit and packages that differ,
side by side (only the differences by default, every row with ?all=1), a config value that is
markup shown as text, a bad ?runs= refused with the count and the rule, and runs whose files are
damaged or missing shown with a note, never a 500. Runs written by the real API, git state and
packages captured by it (capture_env) from a real repository."""
from __future__ import annotations

import html
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import QUIET
from helpers_http import Viewer

import nuboard as nb

XSS = "<script>alert('diff')</script>"
EXTRA_PACKAGE = "nuboard-diff-only==1.0"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=dict(os.environ, GIT_AUTHOR_NAME="t",
                                              GIT_AUTHOR_EMAIL="t@example.org",
                                              GIT_COMMITTER_NAME="t",
                                              GIT_COMMITTER_EMAIL="t@example.org")).stdout.strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """alpha (commit 1, clean) and beta (commit 2, dirty, one package more) captured from a
    repository; gamma with a requirements.txt of binary junk; delta with a torn run.json."""
    base = tmp_path_factory.mktemp("diff")
    root, repo = base / "experiments", base / "code"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("print(1)\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "first")
    commits = [git(repo, "rev-parse", "HEAD")]
    quiet = {**QUIET, "capture_env": True, "code_dir": repo}
    ids = {}
    with nb.init("llm", dir=root, run_name="alpha", tags=["sweep", "a"], group="g1", **quiet,
                 config={"optimizer": {"lr": 1e-3, "name": "adam"}, "seed": 1, "note": XSS,
                         "momentum": 0.3}) as r:
        ids["alpha"] = r.id
    (repo / "train.py").write_text("print(2)\n")
    git(repo, "commit", "-q", "-am", "second")
    commits.append(git(repo, "rev-parse", "HEAD"))
    (repo / "train.py").write_text("print(3)\n")          # dirty
    with nb.init("llm", dir=root, run_name="beta", tags=["sweep"], group="g1", **quiet,
                 config={"optimizer": {"lr": 3e-4, "name": "adam"}, "seed": 1,
                         "extra": 5, "momentum": 0.30000001}) as r:
        ids["beta"] = r.id
    reqs = Path(r.path) / "files" / "requirements.txt"
    reqs.write_text(reqs.read_text() + EXTRA_PACKAGE + "\n")
    for name in ("gamma", "delta"):
        with nb.init("llm", dir=root, run_name=name, config={"seed": 2}, **QUIET) as r:
            ids[name] = r.id
    gamma = root / "llm" / "runs" / ids["gamma"] / "files"
    gamma.mkdir(exist_ok=True)
    (gamma / "requirements.txt").write_bytes(b"\x00\xff\x00garbage\x00")
    delta = root / "llm" / "runs" / ids["delta"] / "run.json"
    delta.write_bytes(delta.read_bytes()[:40])
    with Viewer(root) as viewer:
        yield {"viewer": viewer, "ids": ids, "commits": commits}


def diff(site, *names: str, all_rows: bool = False, api: bool = False):
    runs = ",".join(site["ids"].get(n, n) for n in names)
    return site["viewer"].get(f"{'/api' if api else ''}/p/llm/.diff?runs={runs}"
                              + ("&all=1" if all_rows else ""))


def rows(page: str) -> dict[str, tuple[bool, list[str]]]:
    """{key: (marked as differing, [cell text per run])} of the page's table."""
    out = {}
    for marked, key, body in re.findall(
            r'<tr class="diff-row( differs)?" data-key="([^"]*)">(.*?)</tr>', page, re.S):
        cells = re.findall(r'<td class="diff-cell[^"]*"[^>]*>(.*?)</td>', body, re.S)
        out[html.unescape(key)] = (bool(marked), [html.unescape(c) for c in cells])
    return out


def flask_key(shown: dict) -> str:
    """The row of the Flask package (its name as its metadata spells it)."""
    return next(key for key in shown if key.lower() == "flask")


def test_what_differs_side_by_side(site):
    """Config keys, tags, commit, dirty flag and packages that differ, one column per run
    headed by its name (a link to its run page, in its colour); the same values hidden."""
    reply = diff(site, "alpha", "beta")
    assert reply.status == 200, reply.text
    page = reply.text
    ids, commits = site["ids"], site["commits"]
    for name in ("alpha", "beta"):
        assert re.search(rf'<a href="/p/llm/.run/{ids[name]}" class="diff-run-name">'
                         rf'<span class="swatch" aria-hidden="true"></span>{name}</a>', page)
    assert re.search(r'class="diff-run" style="--run-colour: #[0-9a-f]{6}"', page)
    shown = rows(page)
    assert shown["optimizer.lr"] == (True, ["0.001", "0.0003"])
    assert shown["extra"] == (True, ["—", "5"])
    assert shown["momentum"] == (True, ["0.3", "0.3"])       # differ beyond the digits shown
    assert "the values differ beyond the digits shown" in page
    assert shown["tags"] == (True, ["a, sweep", "sweep"])
    assert shown["commit"] == (True, commits)
    assert shown["dirty"] == (True, ["no", "yes"])
    assert shown["nuboard-diff-only"] == (True, ["—", "1.0"])
    for same in ("optimizer.name", "seed", "group", "status", "branch"):
        assert same not in shown
    assert not any(key.lower() == "flask" for key in shown)
    assert 'aria-checked="true"' in page and "only differences" in page
    data = diff(site, "alpha", "beta", api=True).json()
    assert [r["name"] for r in data["runs"]] == ["alpha", "beta"]
    config = {r["key"]: r for s in data["sections"] if s["key"] == "config" for r in s["rows"]}
    assert config["optimizer.lr"]["values"] == ["0.001", "0.0003"]
    assert config["extra"]["values"] == [None, "5"] and config["extra"]["differs"]
    assert "seed" not in config and data["differ"] == len([r for s in data["sections"]
                                                          for r in s["rows"]])


def test_every_row_with_all(site):
    """?all=1 shows the rows that are the same too, unmarked; its toggle leads back."""
    page = diff(site, "alpha", "beta", all_rows=True).text
    shown = rows(page)
    assert shown["optimizer.name"] == (False, ["adam", "adam"])
    assert shown["seed"] == (False, ["1", "1"])
    assert shown["group"] == (False, ["g1", "g1"])
    flask = shown[flask_key(shown)]
    assert flask[0] is False and flask[1][0] == flask[1][1] != "—"
    assert shown["optimizer.lr"][0] is True
    toggle = re.search(r'<a id="diff-toggle"[^>]*href="([^"]*)"[^>]*aria-checked="false"', page)
    assert toggle and "all=1" not in html.unescape(toggle.group(1))
    data = diff(site, "alpha", "beta", all_rows=True, api=True).json()
    assert data["all"] is True
    assert any(not r["differs"] for s in data["sections"] for r in s["rows"])


def test_config_markup_is_text(site):
    """A config value that is a script tag reads as text; no script runs."""
    page = diff(site, "alpha", "beta").text
    assert rows(page)["note"] == (True, [XSS, "—"])
    assert "<script>alert" not in page
    assert html.escape(XSS, quote=False) in page or "&lt;script&gt;alert(&#39;diff&#39;)" in page


@pytest.mark.parametrize("runs, said", [
    ("", "names 0 runs"), ("{alpha}", "names 1 run;"),
    (",".join(f"r{i}" for i in range(21)), "names 21 runs"),
    ("{alpha},..", "'..', which cannot be a run id"),
])
def test_bad_runs_argument(site, runs, said):
    """Fewer than 2 or more than 20 runs, or a name that cannot be a run id: a 400 naming the
    count (or the value) and the rule, as a page and as JSON."""
    runs = runs.format(**site["ids"])
    page = site["viewer"].get(f"/p/llm/.diff?runs={runs}")
    assert page.status == 400 and said in html.unescape(page.text)
    if "which" not in said:
        assert "a diff compares 2 to 20 runs" in page.text
    api = site["viewer"].get(f"/api/p/llm/.diff?runs={runs}")
    assert api.status == 400 and said in api.json()["error"]


def test_damaged_files_get_a_note(site):
    """A requirements.txt of binary junk and a torn run.json: the page still draws; those
    runs' cells are empty, with a note saying why; a run that is not there is noted too."""
    reply = diff(site, "alpha", "gamma", "delta", "20990101T0000-nothere1", all_rows=True)
    assert reply.status == 200, reply.text[:2000]
    page = html.unescape(reply.text)
    assert "files/requirements.txt is damaged (it holds binary data, not text)" in page
    assert "run.json cannot be shown" in page
    assert "Run '20990101T0000-nothere1' not found in project 'llm'." in page
    shown = rows(reply.text)
    assert shown["seed"] == (True, ["1", "2", "", ""])          # delta's and the absent's: empty
    assert shown[flask_key(shown)][1][1:] == ["", "", ""]     # gamma's packages unreadable
    data = diff(site, "gamma", "delta", api=True).json()
    notes = {s["key"]: s["notes"] for s in data["sections"]}
    assert notes["packages"][0].startswith("files/requirements.txt is damaged")
    assert "run.json cannot be shown" in notes["config"][1]
