"""The query language gives the same runs on SQLite and PostgreSQL, and exact ones (issue 30,
items 15 and 18).

Runs written by the API hold the numbers where doubles and 64-bit integers part ways (2**53 + 1,
2**63 - 1, a float beside an int of the same value), non-ASCII names and odd text. A fixed table
of comparisons is checked against Python's own exact arithmetic; then hypothesis writes queries
from the grammar (seeded, FUZZ_EXAMPLES of them in CI, NUBOARD_FUZZ_EXAMPLES=N or
NUBOARD_FUZZ=long for more) and each must select the same runs on both backends.
"""
from __future__ import annotations

import operator
import os
import time
from fractions import Fraction

import pytest
from conftest import PG_REQUIRED, pg_url
from helpers import write_run
from hypothesis import example, given
from hypothesis import strategies as st

from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.run_reads import find_runs
from nuboard.catalog.sync import sync

BIG = 2 ** 53 + 1                      # the first integer a double cannot hold
TOP = 2 ** 63 - 1                      # the largest 64-bit integer
# name -> (config, {scalar: [(step, value)]}): a run each
RUNS = {
    "big-step": ({"seed": BIG, "lr": 0.1}, {"train/loss": [(0, 1.0), (BIG, 0.5)]}),
    "big-step-next": ({"seed": BIG + 1, "lr": 0.5}, {"train/loss": [(0, 2.0), (BIG + 1, 0.25)]}),
    "round-step": ({"seed": 2 ** 53, "lr": 1e-3}, {"train/loss": [(2 ** 53, 3.0)]}),
    "top": ({"seed": TOP, "width": 512}, {"train/loss": [(TOP, float(2 ** 53))]}),
    "bottom": ({"seed": -TOP - 1, "width": 512.0}, {"val/acc": [(1, -0.0)]}),
    "float-twin": ({"seed": float(BIG), "flag": True}, {"lr": [(3, float(BIG))]}),
    "huge": ({"seed": 1e30, "flag": False}, {"lr": [(5, 1e300)]}),
    "École": ({"seed": 7, "optimizer": "Adam"}, {"train/loss": [(7, 0.75)]}),
    "ÉCOLE-éTÉ": ({"seed": "7", "optimizer": "adam"}, {}),
    "straße_%": ({"optimizer": "ADAMW", "note": "a\\b"}, {"val/acc": [(2, 0.5)]}),
}
KEYS = ("seed", "lr", "width", "flag", "optimizer", "note", "train/loss", "val/acc", "missing")
SUMMARIES = ("min", "max", "last", "count", "last_step")
OPS = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The runs above, written by the API once for the module: (root, {run name: run id})."""
    root = tmp_path_factory.mktemp("fuzz") / "experiments"
    ids = {}
    for name, (config, points) in RUNS.items():
        ids[name] = write_run(root, "llm", points, run_name=name, config=config).name
    return root, ids


@pytest.fixture(scope="module")
def catalogs(project):
    """{'sqlite': Catalog, 'postgresql': Catalog or absent}, synced from the same files."""
    root, _ = project
    found = {}
    with pytest.MonkeyPatch.context() as env:       # url=None reads $NUBOARD_CATALOG_URL, once
        env.delenv("NUBOARD_CATALOG_URL", raising=False)
        found["sqlite"] = Catalog(root, "llm", url=None)
    url = pg_url()
    if url is not None:
        found["postgresql"] = Catalog(root, "llm", url=url)
    elif os.environ.get(PG_REQUIRED):
        pytest.fail("NUBOARD_TEST_PG_URL is not set: scripts/test starts a PostgreSQL")
    for catalog in found.values():
        sync(catalog)
    yield found
    for catalog in found.values():
        catalog.close()


@pytest.fixture(scope="module")
def pair(catalogs) -> dict:
    """The two catalogs (the test is skipped before hypothesis starts without PostgreSQL)."""
    return both(catalogs)


def selected(catalog, query: str) -> list[str]:
    """The names of the runs the query selects, sorted."""
    return sorted(r["name"] for r in find_runs(catalog, query, now=time.time()))


def both(catalogs) -> dict:
    if "postgresql" not in catalogs:
        pytest.skip("no PostgreSQL for the tests; scripts/test starts one")
    return catalogs


# -- exact numbers, against Python's arithmetic ---------------------------------------------------

def expected(op: str, number: int | float, summary: str, key: str) -> list[str]:
    """The runs whose rank-0 summary of the scalar `key` compares true, by exact arithmetic."""
    out = []
    for name, (_, points) in RUNS.items():
        pairs = points.get(key)
        if not pairs:
            continue
        values = [v for _, v in pairs]
        have = {"last": values[-1], "min": min(values), "max": max(values), "count": len(pairs),
                "last_step": pairs[-1][0]}[summary]
        if OPS[op](Fraction(have), Fraction(number)):
            out.append(name)
    return sorted(out)


def written(number: int | float) -> str:
    return str(number) if isinstance(number, int) else repr(number)


NUMBERS = (BIG, BIG - 1, BIG + 1, BIG + 2, 2 ** 53, float(BIG - 1), TOP, TOP + 1, -TOP - 1,
           -TOP - 2, 2 ** 64, 10 ** 30, 10 ** 400, 0.5, 1.5, 2.5e-1, float(2 ** 53), 1e300, 2.0)


@pytest.mark.parametrize("backend_name", ["sqlite", "postgresql"])
@pytest.mark.parametrize("summary", SUMMARIES)
def test_a_summary_compares_exactly_with_every_number(catalogs, backend_name, summary):
    if backend_name not in catalogs:
        both(catalogs)
    catalog = catalogs[backend_name]
    wrong = []
    for key in ("train/loss", "lr"):
        for number in NUMBERS:
            for op in OPS:
                query = f"{summary}({key}){op}{written(number)}"
                want = expected(op, number, summary, key)
                got = selected(catalog, query)
                if got != want:
                    wrong.append((query, got, want))
    assert wrong == []


def test_a_run_is_found_by_its_own_last_step_and_seed(catalogs):
    for catalog in catalogs.values():
        assert selected(catalog, f"last_step(train/loss)={BIG}") == ["big-step"]
        assert selected(catalog, f"last_step(train/loss)={BIG + 1}") == ["big-step-next"]
        assert selected(catalog, f"last_step(train/loss)={TOP}") == ["top"]
        assert selected(catalog, f"seed={BIG}") == ["big-step"]           # not its float twin
        assert selected(catalog, f"seed={float(BIG)!r}") == ["float-twin", "round-step"]  # 2**53
        assert selected(catalog, f"seed={2 ** 53}") == ["float-twin", "round-step"]
        assert selected(catalog, f"seed={TOP}") == ["top"]
        assert selected(catalog, f"seed<={-TOP - 1}") == ["bottom"]
        assert selected(catalog, f"seed>{TOP}") == ["huge"]
        assert selected(catalog, "seed=7") == ["École"]                   # "7" is text
        assert selected(catalog, 'seed="7"') == ["ÉCOLE-éTÉ", "École"]   # text, and 7 as JSON


def test_ignoring_case_is_ascii_on_both_backends(catalogs):
    for catalog in catalogs.values():
        assert selected(catalog, "name:école") == []                     # É is not é
        assert selected(catalog, "name:École") == ["École"]
        assert selected(catalog, "name:ÉcOLE") == ["École"]              # ASCII letters fold
        assert selected(catalog, "éTÉ") == ["ÉCOLE-éTÉ"]
        assert selected(catalog, "ÉTÉ") == []
        assert selected(catalog, "STRASSE") == []                        # ß is not ss
        assert selected(catalog, "name:STRAßE_%") == ["straße_%"]


# -- hypothesis: any query, the same runs on both ---------------------------------------------------

def _numbers() -> st.SearchStrategy[str]:
    """Numbers as a query writes them, most near the values the runs hold (steps, values and
    config past 2**53 and at 2**63), as ints, as 'N.0', in e-notation, or any double."""
    held = [BIG, 2 ** 53, TOP, -TOP - 1, 1, 2, 5, 7, 512, 10 ** 30]
    near = st.tuples(st.sampled_from(held), st.integers(min_value=-2, max_value=2)).map(sum)
    ints = st.one_of(near, near, near, st.integers())
    return st.one_of(
        ints.map(str), ints.map(str),
        ints.map(lambda n: f"{n}.0"),
        ints.map(lambda n: f"{n}e0"),
        st.floats(allow_nan=False).map(repr).filter(lambda s: "inf" not in s),
        st.sampled_from(["0.5", ".5", "1e-3", "2.5E+4", "-0", "+3", "1e400", "-1e400",
                         "9007199254740993.0", "9223372036854775807.5", "0.25", "1e300"]))


_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\()'),
                min_size=1, max_size=6)


def _leaf() -> st.SearchStrategy[str]:
    key = st.sampled_from(KEYS)
    op = st.sampled_from(["=", ":", "==", "!=", "<", "<=", ">", ">="])
    compare = st.tuples(key, op, _numbers()).map(lambda t: "".join(t))
    scalar = st.sampled_from(["train/loss", "val/acc", "lr"])
    summary = st.tuples(st.sampled_from(SUMMARIES), scalar, op, _numbers()).map(
        lambda t: f"{t[0]}({t[1]}){t[2]}{t[3]}")
    config = st.tuples(st.sampled_from(KEYS[:6]), op, st.one_of(_numbers(), _TEXT.map(
        lambda s: f'"{s}"'))).map(lambda t: f"config.{t[0]}{t[1]}{t[2]}")
    text_word = st.one_of(_TEXT, st.sampled_from(["École", "école", "ÉTÉ", "éTÉ", "ß", "%", "_",
                                                  "straße", "adam"])).map(lambda s: f'"{s}"')
    glob = st.tuples(st.sampled_from(["name", "id", "group", "host"]), st.one_of(
        _TEXT, st.sampled_from(["*", "?*", "É*", "é*", "*%", "straße_?", "ÉCOLE-*"]))).map(
        lambda t: f'{t[0]}:"{t[1]}"')
    return st.one_of(summary, summary, compare, compare, config, text_word, glob)


QUERIES = st.recursive(_leaf(), lambda inner: st.one_of(
    st.lists(inner, min_size=2, max_size=3).map(" ".join),
    st.lists(inner, min_size=2, max_size=3).map(" OR ".join),
    inner.map(lambda q: f"-({q})")), max_leaves=6)


@given(query=QUERIES)
@example(query=f"last_step(train/loss)={BIG}")             # PostgreSQL matched 2**53 too
@example(query=f"last_step(train/loss)<={2 ** 53}.0")
@example(query=f"-(seed>={BIG} OR max(lr)<{BIG}e0) OR count(val/acc)>0.5")
@example(query='"école" OR name:"ÉCOLE*" OR "STRASSE"')
def test_every_query_selects_the_same_runs_on_both_backends(pair, query):
    assert selected(pair["sqlite"], query) == selected(pair["postgresql"], query), query
