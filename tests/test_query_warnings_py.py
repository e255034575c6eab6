"""A query from Python warns as `nuboard ls -q` and the viewer do (docs/query.md, "Warnings"):
an unknown key names the nearest known one, a lowercase and/or no run name holds suggests the
operator. One QueryWarning a line, at the caller's line; a correct query is silent. The viewer
and the CLI get the and/or hint from the same place."""
from __future__ import annotations

import warnings
from urllib.parse import quote

import pytest
from helpers import QUIET, run_cli
from helpers_http import AppViewer

import nuboard as nb
from nuboard.tables import QueryWarning

HINT_AND = ("the word 'and' matches no run name; did you mean AND? "
            "(the operators are upper case)")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """One project of two runs: config optimizer.lr, scalar train/loss, named 'alpha'/'beta'."""
    root = tmp_path_factory.mktemp("qw")
    for name, lr in (("alpha", 1e-3), ("beta", 1e-2)):
        with nb.init("llm", dir=root, run_name=name, config={"optimizer": {"lr": lr}},
                     **QUIET) as run:
            run.add_scalar("train/loss", lr * 100, step=0)
    return root


@pytest.mark.parametrize("call", [
    lambda root, q: nb.runs("llm", query=q, dir=root),
    lambda root, q: nb.history("llm", query=q, dir=root),
    lambda root, q: nb.media("llm", query=q, dir=root),
], ids=["runs", "history", "media"])
def test_unknown_key_warns_once_with_the_nearest_key(two_runs, call):
    with pytest.warns(QueryWarning) as caught:
        result = call(two_runs, "lr>=1e-3")
    assert [str(w.message) for w in caught] == ["unknown key 'lr' — did you mean optimizer.lr?"]
    assert caught[0].filename == __file__          # points at this line, not into nuboard
    assert len(result) == 0                        # the query still runs


def test_a_correct_query_does_not_warn(two_runs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(nb.runs("llm", query="optimizer.lr>=1e-3 AND min(train/loss)<10", dir=two_runs)) == 2
        assert len(nb.runs("llm", query="alpha OR beta", dir=two_runs)) == 2
        assert nb.history("llm", query="name:alpha", dir=two_runs).num_rows == 1


def test_lowercase_and_suggests_the_operator(two_runs):
    with pytest.warns(QueryWarning) as caught:
        found = nb.runs("llm", query="alpha and beta", dir=two_runs)
    assert [str(w.message) for w in caught] == [HINT_AND]
    assert len(found) == 0
    with pytest.warns(QueryWarning, match=r"the word 'or' matches no run name; did you mean OR\?"):
        nb.history("llm", query="alpha or beta", dir=two_runs)


def test_a_word_a_run_name_holds_is_not_flagged(tmp_path):
    with nb.init("shop", dir=tmp_path, run_name="sand-castle", **QUIET):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(nb.runs("shop", query="and", dir=tmp_path)) == 1


def test_ls_prints_the_and_or_hint_on_stderr(two_runs):
    both = run_cli(two_runs, "ls", "llm", "-q", "alpha or lr>1", "--json")
    assert both.returncode == 0
    assert both.stdout.strip() == "[]"
    assert both.stderr.splitlines() == [
        "nuboard ls: unknown key 'lr' — did you mean optimizer.lr?",
        "nuboard ls: the word 'or' matches no run name; did you mean OR? "
        "(the operators are upper case)"]


def test_viewer_shows_the_and_or_hint(two_runs):
    with AppViewer(two_runs) as v:
        twin = v.get("/api/p/llm/runs?q=" + quote("alpha and beta")).json()
    assert twin["warnings"] == [HINT_AND]


def test_a_lowercase_or_in_a_query_that_matches_nothing_is_flagged(tmp_path):
    """`name:a or name:b` finds nothing when a run named 'storage' holds 'or' as a word: the
    query matched no run, so the hint says what it most likely meant."""
    for name in ("a", "b", "storage"):
        with nb.init("shop", dir=tmp_path, run_name=name, **QUIET):
            pass
    with pytest.warns(QueryWarning, match=r"the query matches no run and holds the lowercase "
                                          r"word 'or'.*did you mean OR\?"):
        assert len(nb.runs("shop", query="name:a or name:b", dir=tmp_path)) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(nb.runs("shop", query="name:a OR name:b", dir=tmp_path)) == 2
