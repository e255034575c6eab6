"""The query language on a real catalog, SQLite and PostgreSQL: every construct, the errors,
injection, limits."""
from __future__ import annotations

import datetime as dt
import os
import random
import time
from pathlib import Path

import pytest
from conftest import PG_REQUIRED, pg_url
from sqlalchemy import create_engine, func, insert, inspect, select
from sqlalchemy.dialects import sqlite

from nuboard.catalog import tables
from nuboard.catalog.query import And, Field, Not, Or, QuerySyntaxError, Word, compile_query, normalize, parse_query
from nuboard.errors import NuBoardError

NOW = dt.datetime(2026, 12, 10, 12, 0, tzinfo=dt.timezone.utc)
T = NOW.timestamp()
ALL = [f"r{i:02d}" for i in range(1, 13)]

# run_id, name, project, group, notes, status, heartbeat age (s), host, created, ended
RUNS = [
    ("r01", "baseline", 1, "sweep-a", "first try", "finished", None, "node-1",
     "2026-09-15T08:00:00.000Z", "2026-09-15T09:00:00.000Z"),
    ("r02", "lr_0.1", 1, "sweep-a", None, "finished", None, "node-1",
     "2026-10-01T00:00:00.000Z", None),
    ("r03", "lr-sweep 100%", 1, "sweep-b", None, "crashed", None, "node-2",
     "2026-10-01T23:59:59.999Z", None),
    ("r04", "lrx0.1", 1, None, None, "running", 10, "node-2",
     "2026-10-02T00:00:00.000Z", None),
    ("r05", "my run", 1, None, None, "running", 500, "gpu-a",
     "2026-12-05T10:00:00.000Z", None),
    ("r06", "Big Model", 1, None, None, "running", None, "gpu-a",
     "2026-12-09T12:00:00.000Z", None),
    ("r07", "eval", 2, None, "Checked OOM at step 5", "killed", None, "gpu-b",
     "2026-12-10T11:45:00.000Z", None),
    ("r08", "x' OR 1=1 --", 2, None, None, "failed", None, None,
     "2026-11-01T12:00:00.000Z", "2026-11-01T12:30:00.000Z"),
    ("r09", "resnet50", 2, "cnn", None, "finished", None, "node-1",
     "2026-10-01T12:00:00.000Z", "2026-10-01T13:00:00.000Z"),
    ("r10", "resnet18", 2, "cnn", None, "finished", None, None,
     "2026-10-01T11:59:59.999Z", "2026-11-02T00:00:00.000Z"),
    ("r11", "vit", 2, None, 'uses "quotes" here', "finished", None, None,
     "2026-12-03T00:00:00.000Z", None),
    ("r12", "abc%def", 1, None, None, "finished", None, None,
     "2026-08-01T00:00:00.000Z", None),
]
TAGS = {"r01": ["baseline", "paper"], "r02": ["sweep"], "r03": ["sweep"], "r09": ["baseline"],
        "r11": ["my tag"]}
# run: [(key, type, value_num, value_text)]
CONFIG = {
    "r01": [("lr", "float", 0.001, "0.001"), ("optimizer", "str", None, "adam"),
            ("model.width", "int", 512, "512"), ("use_amp", "bool", 1, "true")],
    "r02": [("lr", "float", 0.1, "0.1"), ("optimizer", "str", None, "sgd"),
            ("model.width", "int", 256, "256")],
    "r03": [("lr", "float", 0.01, "0.01"), ("optimizer", "str", None, "adam"),
            ("model.width", "int", 1024, "1024"), ("seed", "str", None, "42")],
    "r04": [("lr", "float", 0.0005, "0.0005"), ("optimizer", "str", None, "Adam")],
    "r05": [("optimizer", "str", None, "adam")],
    "r09": [("lr", "float", 0.1, "0.1"), ("optimizer", "str", None, "adamw"),
            ("model.width", "int", 512, "512"), ("activation", "null", None, "null")],
    "r10": [("lr", "float", 0.3, "0.3"), ("use_amp", "bool", 0, "false")],
}
# run: [(rank, name, last, min, max, count, last_step)]
SCALARS = {
    "r01": [(0, "train/loss", 0.45, 0.30, 2.0, 100, 99), (1, "train/loss", 0.2, 0.1, 2.0, 100, 99)],
    "r02": [(0, "train/loss", 0.6, 0.35, 2.5, 50, 49)],
    "r03": [(0, "train/loss", 1.2, 0.5, 3.0, 10, 9), (1, "train/loss", 0.1, 0.05, 3.0, 10, 9)],
    "r04": [(0, "train/loss", 0.8, 0.8, 0.8, 1, 0)],
    "r05": [(0, "lr", 0.002, 0.001, 0.002, 20, 19)],
    "r06": [(1, "lr", 0.5, 0.5, 0.5, 1, 0)],            # rank 1 only: never matches `lr`
    "r09": [(0, "val/top-1.acc", 0.76, 0.1, 0.77, 30, 29)],
}


EXPECTED_COUNTS = {"projects": 2, "runs": len(RUNS), "tags": sum(map(len, TAGS.values())),
                   "config": sum(map(len, CONFIG.values())),
                   "scalars": sum(map(len, SCALARS.values()))}


def counts(conn) -> dict:
    return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (tables.projects, tables.runs, tables.tags, tables.config, tables.scalars)}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def engine(request, tmp_path_factory):
    """The tables with the runs above: an SQLite file, or a schema of its own on the test
    PostgreSQL (the tables as tables.py makes them there: text compared as on SQLite)."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("catalog") / "catalog.sqlite"
        engine = create_engine(f"sqlite:///{path}")
    else:
        url = pg_url()
        if url is None:
            if os.environ.get(PG_REQUIRED):
                pytest.fail("NUBOARD_TEST_PG_URL is not set: scripts/test starts a PostgreSQL")
            pytest.skip("no PostgreSQL for the tests; scripts/test starts one")
        schema = f"test_query_{os.getpid()}_{random.randrange(1 << 30)}"
        with create_engine(url).begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        engine = create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    tables.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(tables.projects), [{"id": 1, "name": "llm/pretrain", "path": "/x/llm"},
                                               {"id": 2, "name": "vision", "path": "/x/vision"}])
        ids = {}
        for n, (run_id, name, project, group, notes, status, age, host, created, ended) \
                in enumerate(RUNS, 1):
            ids[run_id] = n
            conn.execute(insert(tables.runs).values(
                id=n, project_id=project, run_id=run_id, name=name, group_name=group, notes=notes,
                status=status, heartbeat_mtime=None if age is None else T - age, host=host,
                created=created, ended=ended, folder_mtime_ns=0, signature="s"))
        conn.execute(insert(tables.tags), [{"run": ids[r], "tag": t}
                                           for r, ts in TAGS.items() for t in ts])
        conn.execute(insert(tables.config), [
            {"run": ids[r], "key": k, "type": ty, "value_num": num, "value_text": text}
            for r, rows in CONFIG.items() for k, ty, num, text in rows])
        conn.execute(insert(tables.scalars), [
            {"run": ids[r], "rank": rank, "name": name, "last": last, "min": lo, "max": hi,
             "count": count, "last_step": step}
            for r, rows in SCALARS.items() for rank, name, last, lo, hi, count, step in rows])
    yield engine
    engine.dispose()


def select_ids(engine, query: str, now: dt.datetime = NOW) -> list[str]:
    stmt = select(tables.runs.c.run_id).where(compile_query(query, now=now)) \
        .order_by(tables.runs.c.run_id)
    with engine.connect() as conn:
        return list(conn.execute(stmt).scalars())


def but(*excluded: str) -> list[str]:
    return [r for r in ALL if r not in excluded]


CASES = [
    # empty
    ("", ALL), ("   ", ALL),
    # tags: exact
    ("tag:baseline", ["r01", "r09"]), ("tag:base", []), ("tag:BASELINE", []),
    ('tag:"my tag"', ["r11"]), ("tag=sweep", ["r02", "r03"]), ("tag!=baseline", but("r01", "r09")),
    # name: a case-insensitive glob over the whole name, % and _ literal
    ("name:lr*", ["r02", "r03", "r04"]), ("name:LR*", ["r02", "r03", "r04"]),
    ("name:lr_*", ["r02"]), ("name:*%*", ["r03", "r12"]), ("name:abc%def", ["r12"]),
    ("name:abc_def", []), ("name:baseline", ["r01"]), ("name:base", []),
    ('name:"my run"', ["r05"]), ("name:resnet??", ["r09", "r10"]), ("name:vi?", ["r11"]),
    # group, host (nullable: a negation keeps the runs without one), id, project
    ("group:sweep-*", ["r01", "r02", "r03"]), ("group:CNN", ["r09", "r10"]),
    ("-group:cnn", but("r09", "r10")), ("group!=cnn", but("r09", "r10")),
    ("host:node-1", ["r01", "r02", "r09"]), ("host:gpu-?", ["r05", "r06", "r07"]),
    ("-host:*", ["r08", "r10", "r11", "r12"]),
    ("id:r1?", ["r10", "r11", "r12"]), ("id:R01", ["r01"]), ("id:r0", []),
    ("project:vision", ["r07", "r08", "r09", "r10", "r11"]),
    ("project:llm/*", ["r01", "r02", "r03", "r04", "r05", "r06", "r12"]),
    ("project:llm", []), ("-project:vision", ["r01", "r02", "r03", "r04", "r05", "r06", "r12"]),
    # status
    ("status:finished", ["r01", "r02", "r09", "r10", "r11", "r12"]), ("status:crashed", ["r03"]),
    ("status:killed", ["r07"]), ("status:failed", ["r08"]), ("status:FAILED", ["r08"]),
    ("status:running", ["r04", "r06"]), ("status:lost", ["r05"]),
    ("status!=running", but("r04", "r06")),
    ("status:running OR status:lost", ["r04", "r05", "r06"]),
    # config comparisons (numbers on value_num, text on value_text)
    ("config.model.width=512", ["r01", "r09"]), ("config.model.width:512.0", ["r01", "r09"]),
    ("model.width>=512", ["r01", "r03", "r09"]), ("config.model.width<512", ["r02"]),
    ("lr>=1e-3", ["r01", "r02", "r03", "r05", "r09", "r10"]),       # r05 through its lr scalar
    ("config.lr>=1e-3", ["r01", "r02", "r03", "r09", "r10"]),
    ("lr<0.001", ["r04"]), ("lr:0.1", ["r02", "r09"]), ("lr==0.1", ["r02", "r09"]),
    ("lr=.1", ["r02", "r09"]), ("lr>0.2", ["r10"]), ("lr<=5e-4", ["r04"]),
    ("lr!=0.1", but("r02", "r09")),
    ("optimizer:adam", ["r01", "r03", "r05"]), ("optimizer!=adam", but("r01", "r03", "r05")),
    ("optimizer>b", ["r02"]), ('optimizer:"adam"', ["r01", "r03", "r05"]),
    ("seed:42", []), ('seed:"42"', ["r03"]),
    ("use_amp:true", ["r01"]), ("use_amp:1", ["r01"]), ("use_amp:0", ["r10"]),
    ("activation:null", ["r09"]), ("config.optimizer:adam", ["r01", "r03", "r05"]),
    ("nope:1", []),
    # scalar summaries (rank 0 only)
    ("train/loss<0.5", ["r01"]), ("train/loss<=0.6", ["r01", "r02"]),
    ("train/loss>1", ["r03"]), ('train/loss<"0.5"', ["r01"]),
    ("min(train/loss)<0.4", ["r01", "r02"]), ("MIN(train/loss)<0.4", ["r01", "r02"]),
    ("max(train/loss)>=2.5", ["r02", "r03"]), ("last(train/loss)>1", ["r03"]),
    ("count(train/loss)>=50", ["r01", "r02"]), ("count(train/loss):1", ["r04"]),
    ("last_step(train/loss)=9", ["r03"]), ("min( train/loss )<0.4", ["r01", "r02"]),
    ('min("train/loss")<0.4', ["r01", "r02"]),
    ("val/top-1.acc>0.75", ["r09"]), ("max(val/top-1.acc)>0.765", ["r09"]),
    ("min(lr)>=0.001", ["r05"]), ("count(lr)>0", ["r05"]),
    ("-train/loss<0.5", but("r01")),
    # dates: a date is its whole day, a time its minute (or second)
    ("created>2026-10-01", ["r04", "r05", "r06", "r07", "r08", "r11"]),
    ("created>=2026-10-01", ["r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09", "r10", "r11"]),
    ("created<2026-10-01", ["r01", "r12"]),
    ("created<=2026-10-01", ["r01", "r02", "r03", "r09", "r10", "r12"]),
    ("created:2026-10-01", ["r02", "r03", "r09", "r10"]),
    ("created!=2026-10-01", but("r02", "r03", "r09", "r10")),
    ("created<2026-10-01T12:00", ["r01", "r02", "r10", "r12"]),
    ("created>=2026-10-01T12:00", but("r01", "r02", "r10", "r12")),
    ("created:2026-10-01T12:00", ["r09"]), ("created:2026-10-01T11:59:59", ["r10"]),
    ('created:"2026-10-01 12:00"', ["r09"]), ("created:2026-10-01T12:00Z", ["r09"]),
    ("created>7d", ["r05", "r06", "r07"]), ("created:7d", ["r05", "r06", "r07"]),
    ("created>2d", ["r06", "r07"]), ("created>30m", ["r07"]), ("created>1h", ["r07"]),
    ("created>0.5h", ["r07"]), ("created<1w", but("r05", "r06", "r07")),
    ("created>=2w", ["r05", "r06", "r07", "r11"]),
    ("ended<2026-11-01", ["r01", "r09"]), ("ended>=2026-11-01", ["r08", "r10"]),
    ("-ended<2026-11-01", but("r01", "r09")), ("ended:2026-11-01T12:30", ["r08"]),
    # free words: case-insensitive substrings of the name or the notes, ANDed
    ("resnet", ["r09", "r10"]), ("oom", ["r07"]), ("RESNET 50", ["r09"]),
    ('"first try"', ["r01"]), ('"try first"', []), ("%", ["r03", "r12"]), ("_", ["r02"]),
    ('"uses \\"quotes\\""', ["r11"]), ('"\\"quotes\\" here"', ["r11"]), ("lr*", []),
    ("wow!", []), ('""', ALL),
    # precedence: OR looser than AND, NOT and - bind to one term
    ("resnet OR vit", ["r09", "r10", "r11"]), ("resnet or vit", []),
    ("tag:baseline OR tag:sweep project:vision", ["r01", "r09"]),
    ("(tag:baseline OR tag:sweep) project:llm*", ["r01", "r02", "r03"]),
    ("project:llm* (tag:baseline OR tag:sweep)", ["r01", "r02", "r03"]),
    ("tag:baseline AND project:vision", ["r09"]),
    ("-tag:baseline project:vision", ["r07", "r08", "r10", "r11"]),
    ("NOT tag:baseline project:vision", ["r07", "r08", "r10", "r11"]),
    ("NOT (tag:baseline OR tag:sweep)", but("r01", "r02", "r03", "r09")),
    ("-(tag:baseline OR tag:sweep)", but("r01", "r02", "r03", "r09")),
    ("NOT tag:baseline OR tag:paper", but("r09")),
    ("--tag:baseline", ["r01", "r09"]), ("NOT -tag:baseline", ["r01", "r09"]),
    ("tag:sweep OR tag:paper OR name:vit", ["r01", "r02", "r03", "r11"]),
    ("tag:sweep OR (tag:paper OR (name:vit status:failed))", ["r01", "r02", "r03"]),
    ("((resnet))", ["r09", "r10"]), ("(resnet)(50)", ["r09"]),
    ("-\"my run\"", but("r05")),
]


@pytest.mark.parametrize("query, expected", CASES)
def test_query_selects_exactly(engine, query, expected):
    assert select_ids(engine, query) == expected


@pytest.mark.parametrize("offset, running, lost", [
    (0, ["r04", "r06"], ["r05"]),             # r04 beat 10 s ago, r05 500 s ago, r06 no beat
    (110, ["r04", "r06"], ["r05"]),           # r04's beat is 120 s old: not yet lost
    (111, ["r06"], ["r04", "r05"]),           # 121 s: lost
    (-380, ["r04", "r05", "r06"], []),        # r05's beat was 120 s old
    (-379, ["r04", "r06"], ["r05"]),
])
def test_lost_is_judged_from_the_heartbeat_and_now(engine, offset, running, lost):
    now = NOW + dt.timedelta(seconds=offset)
    assert select_ids(engine, "status:running", now) == running
    assert select_ids(engine, "status:lost", now) == lost
    assert select_ids(engine, "-status:lost", now) == but(*lost)


def test_now_defaults_to_the_clock_and_naive_means_utc(engine):
    assert select_ids(engine, "created>7d", NOW.replace(tzinfo=None)) == ["r05", "r06", "r07"]
    before = time.time()
    params = compile_query("status:lost").compile().params
    cutoffs = [v for v in params.values() if isinstance(v, float)]
    assert len(cutoffs) == 1 and before - 121 < cutoffs[0] < time.time() - 119
    (bound,) = compile_query("created>1d").compile().params.values()
    assert bound.endswith("Z") and len(bound) == len("2026-12-02T15:56:37.262Z")
    bound = dt.datetime.fromisoformat(bound[:-1]).replace(tzinfo=dt.timezone.utc)
    day_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)
    assert abs((bound - day_ago).total_seconds()) < 5


def test_the_tree_is_small_frozen_dataclasses():
    assert parse_query("") == And(())
    assert parse_query("tag:a -b") == And((Field("tag", "a"), Not(Word("b"))))
    assert parse_query("--x") == Word("x")
    assert parse_query("tag!=a") == Not(Field("tag", "a"))
    assert parse_query('status:Running') == Field("status", "running")


ERRORS = [
    ("tag:", 5, "a tag", "expected a tag after 'tag:' at column 5"),
    ("tag: baseline", 5, "a tag", "expected a tag after 'tag:' at column 5"),
    ("name:x -tag:", 13, "a tag", "expected a tag after 'tag:' at column 13"),
    ("tag:baseline (name:x", 21, "')'", "expected ')' after '(name:x' at column 21"),
    ("((a)", 5, "')'", "expected ')' after '((a)' at column 5"),
    ('name:"my run', 13, "a closing '\"'",
     "expected a closing '\"' after '\"my run' at column 13"),
    ('"abc', 5, "a closing '\"'", "expected a closing '\"' after '\"abc' at column 5"),
    ("train/loss<abc", 12, "a number",
     "expected a number after 'train/loss<' at column 12, not 'abc'"),
    ("min(train/loss)<", 17, "a number", "expected a number after 'min(train/loss)<' at column 17"),
    ("max(train/loss)<1e", 17, "a number",
     "expected a number after 'max(train/loss)<' at column 17, not '1e'"),
    ("status:runing", 8, "one of running, finished, crashed, killed, failed, lost",
     ("expected one of running, finished, crashed, killed, failed, lost after 'status:' at "
      "column 8, not 'runing'")),
    ("status:", 8, "one of running, finished, crashed, killed, failed, lost", None),
    ("created>2026-13-01", 9, None, "not '2026-13-01'"),
    ("created>2026-02-30", 9, None, "after 'created>' at column 9"),
    ("created>yesterday", 9, None, "not 'yesterday'"),
    ("created>7y", 9, None, "not '7y'"),
    ("created>", 9, None, "after 'created>' at column 9"),
    ("tag:a OR", 9, "a term", "expected a term after 'OR' at column 9"),
    ("tag:a OR OR tag:b", 10, "a term", "expected a term after 'OR' at column 10"),
    ("OR tag:a", 1, "a term before 'OR'", "expected a term before 'OR' at column 1"),
    ("AND tag:a", 1, "a term before 'AND'", "expected a term before 'AND' at column 1"),
    ("tag:a AND", 10, "a term", "expected a term after 'AND' at column 10"),
    ("()", 2, "a term", "expected a term after '(' at column 2"),
    ("tag:a)", 6, "a matching '(' before ')'", "expected a matching '(' before ')' at column 6"),
    (")", 1, "a matching '(' before ')'", None),
    ("- tag:a", 2, "a term", "expected a term after '-' at column 2"),
    ("tag:a -", 8, "a term", "expected a term after '-' at column 8"),
    ("(tag:a -)", 9, "a term", "expected a term after '-' at column 9"),
    ("NOT", 4, "a term", "expected a term after 'NOT' at column 4"),
    ("NOT OR a", 5, "a term", "expected a term after 'NOT' at column 5"),
    ("tag>x", 4, "':', '=' or '!='", "expected ':', '=' or '!=' after 'tag' at column 4, not '>'"),
    ("status>=running", 7, "':', '=' or '!='", None),
    (":x", 1, "a field name before ':'", "expected a field name before ':' at column 1"),
    ("a >=1", 3, "a field name before '>='", None),
    ("mean(train/loss)<1", 1, "one of min, max, last, count, last_step before '('",
     "expected one of min, max, last, count, last_step before '(' at column 1, not 'mean'"),
    ("min(train/loss<1", 17, "')'", "expected ')' after 'min(train/loss<1' at column 17"),
    ("min(a b)<1", 7, "')'", "expected ')' after 'min(a' at column 7, not 'b'"),
    ("min()<1", 5, "a scalar name", "expected a scalar name after 'min(' at column 5"),
    ("min(x)", 7, "an operator (:, =, !=, <, <=, >, >=)", None),
    ("config.=1", 8, "a config key", "expected a config key after 'config.' at column 8, not '='"),
    ("lr>", 4, "a value", "expected a value after 'lr>' at column 4"),
    ("lr> 1", 4, "a value", None),
]


@pytest.mark.parametrize("query, column, expected, message", ERRORS)
def test_errors_say_where_and_what_was_expected(engine, query, column, expected, message):
    with pytest.raises(QuerySyntaxError) as info:
        compile_query(query, now=NOW)
    err = info.value
    assert isinstance(err, NuBoardError) and isinstance(err, ValueError)
    assert err.column == column
    assert f"at column {column}" in str(err)
    if expected is not None:
        assert err.expected == expected
    if message is not None:
        if message.startswith("expected"):
            assert str(err) == message
        else:
            assert message in str(err)


def test_the_tag_example_is_word_for_word():
    with pytest.raises(QuerySyntaxError, match=r"^expected a tag after 'tag:' at column 5$"):
        parse_query("tag:")


def test_a_bad_date_names_the_forms_it_takes():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("created>2026-13-01")
    assert str(info.value) == ("expected a date like 2026-10-01, a time like 2026-10-01T12:00 or "
                               "an age like 7d after 'created>' at column 9, not '2026-13-01'")


INJECTIONS = [
    ('name:"x\' OR 1=1 --"', ["r08"], ["OR 1=1", "x'"]),      # r08 is literally named that
    ('tag:"; DROP TABLE runs; --"', [], ["DROP TABLE"]),
    ("lr>1 OR 1=1", [], ["1=1"]),
    ('"\'; DELETE FROM runs; --"', [], ["DELETE"]),
    ("name:\"' OR ''='\"", [], ["''="]),
    ('optimizer:"adam\' OR \'1\'=\'1"', [], ["'1'='1"]),
    ('config.x="1);DROP TABLE runs"', [], ["DROP"]),
    ('"%" OR name:"*\'--"', ["r03", "r12"], ["'--"]),
    ("train/loss<1e308", ["r01", "r02", "r03", "r04"], ["1e308"]),
    ('status:killed created>"2026-01-01"', ["r07"], ["2026-01-01"]),
]


@pytest.mark.parametrize("query, expected, fragments", INJECTIONS)
def test_injection_attempts_select_nothing_unexpected(engine, query, expected, fragments):
    with engine.connect() as conn:
        before = counts(conn)
    assert select_ids(engine, query) == expected
    with engine.connect() as conn:
        assert counts(conn) == before == EXPECTED_COUNTS
    assert set(inspect(engine).get_table_names()) >= {"runs", "tags", "config", "scalars",
                                                      "projects"}
    compiled = select(tables.runs.c.id).where(compile_query(query, now=NOW)) \
        .compile(dialect=sqlite.dialect())
    sql = str(compiled)
    for fragment in fragments:
        assert fragment not in sql
    assert "'" not in sql.replace("ESCAPE '\\'", "")        # no literal strings but LIKE's escape
    assert compiled.params


def test_compiled_sql_holds_only_bound_parameters():
    query = ('tag:tagword name:namew* group:groupw host:hostw project:projw* id:idw '
             'status:crashed config.cfgkey=cfgval keyw>3 metric/name<2 max(mname)>1 '
             'created>2026-10-01 ended<3d freeword "quoted phrase"')
    clause = compile_query(query, now=NOW)
    sql = str(clause.compile(dialect=sqlite.dialect()))
    for word in ("tagword", "namew", "groupw", "hostw", "projw", "idw", "crashed", "cfgkey",
                 "cfgval", "keyw", "metric/name", "mname", "2026", "freeword", "quoted phrase"):
        assert word not in sql, word
    assert sql.count("?") >= 15


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_a_long_query_is_refused_quickly():
    started = time.perf_counter()
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("x" * 10_001)
    assert info.value.column == 10_001
    assert str(info.value) == ("expected the end of the query (a query has at most 10,000 "
                               "characters; this one has 10,001) at column 10001")
    assert time.perf_counter() - started < 0.5
    parse_query("x" * 10_000)


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_deep_nesting_is_refused_quickly():
    """The parser alone (no catalog), so it is timed once, not once per backend; it stops at the
    101st parenthesis, not after reading 5,000."""
    started = time.perf_counter()
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("(" * 101 + "resnet" + ")" * 101)
    assert info.value.column == 101
    assert "at most 100 nested parentheses" in str(info.value)
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("(" * 5000)
    assert info.value.column == 101
    assert time.perf_counter() - started < 0.5


def test_deep_nesting_within_the_limits_selects_exactly(engine):
    assert select_ids(engine, "(" * 100 + "resnet" + ")" * 100) == ["r09", "r10"]
    assert select_ids(engine, "(a " * 100 + "resnet" + ")" * 100) == []
    assert select_ids(engine, "-" * 5001 + "resnet") == but("r09", "r10")
    assert select_ids(engine, "NOT " * 2000 + "resnet") == ["r09", "r10"]
    assert select_ids(engine, " OR ".join(["resnet"] * 999)) == ["r09", "r10"]
    assert select_ids(engine, " ".join(["e"] * 5000)) == but("r02", "r04", "r05", "r08")
    assert select_ids(engine, "(-resnet " * 100 + '""' + ")" * 100) == but("r09", "r10")
    assert select_ids(engine, "(x OR " * 100 + "resnet" + ")" * 100) == ["r04", "r08", "r09", "r10"]


def test_any_text_parses_or_raises_a_syntax_error(engine):
    alphabet = ['(', ')', '"', '\\', '-', ' ', 'OR', 'AND', 'NOT', ':', '=', '!', '<', '>', '*',
                '?', '%', '_', 'tag', 'status', 'created', 'min', 'lr', 'a/b', '1e-3', '7d',
                '2026-10-01', 'config.', "'", ';']
    rng = random.Random(4)
    with engine.connect() as conn:
        for _ in range(2000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            try:
                clause = compile_query(text, now=NOW)
            except QuerySyntaxError as err:
                assert 1 <= err.column <= len(text) + 1, text
                continue
            conn.execute(select(tables.runs.c.id).where(clause)).all()
        assert counts(conn)["runs"] == 12


def alternating(levels: int, leaf: str = "resnet") -> str:
    """`leaf` inside `levels` groups that switch between OR and AND, each matching as `leaf` does."""
    text = leaf
    for i in reversed(range(levels)):
        text = f"(tag:nope OR {text})" if i % 2 == 0 else f'("" {text})'
    return text


def test_groups_that_alternate_nest_sixteen_deep(engine):
    assert select_ids(engine, alternating(16)) == ["r09", "r10"]
    assert select_ids(engine, "-" + alternating(16, "-tag:baseline")) == ["r01", "r09"]
    deep = alternating(17)
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(deep)
    assert str(info.value) == ("expected at most 16 levels of groups that alternate AND and OR "
                               f"at column {deep.rindex('(') + 1}")
    # redundant parentheses and groups of one kind inside another do not count
    assert select_ids(engine, "(" * 100 + "resnet" + ")" * 100) == ["r09", "r10"]
    assert select_ids(engine, "(a OR " * 99 + "resnet" + ")" * 99) == ["r01", "r07", "r09",
                                                                         "r10", "r12"]
    # a long group counts a level for each doubling past 8 terms (the compiler balances it)
    assert select_ids(engine, "(" * 15 + " OR ".join(["vit"] * 9) + ")" * 15) == ["r11"]


def test_normalize_moves_not_onto_the_leaves_and_merges_groups():
    a, b, c, d = (Word(x) for x in "abcd")
    assert normalize(parse_query("-(a (b OR c))")) == Or((Not(a), And((Not(b), Not(c)))))
    assert normalize(parse_query("a (b (c d))")) == And((a, b, c, d))
    assert normalize(parse_query("(a OR b) c")) == And((c, Or((a, b))))
    assert normalize(parse_query("NOT NOT -a")) == Not(a)
    assert normalize(parse_query("-(a OR -(b OR c))")) == And((Not(a), Or((b, c))))


def test_a_word_right_before_a_parenthesis_is_a_summary():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("resnet(50)")
    assert str(info.value) == ("expected one of min, max, last, count, last_step before '(' "
                               "at column 1, not 'resnet'")
    assert parse_query("resnet (50)") == And((Word("resnet"), Word("50")))


LEAVES = {  # a query term and the same test in Python on (name, notes, tags, status)
    "tag:baseline": lambda r: "baseline" in r[2], "tag:sweep": lambda r: "sweep" in r[2],
    'tag:"my tag"': lambda r: "my tag" in r[2], "status:finished": lambda r: r[3] == "finished",
    "resnet": lambda r: "resnet" in r[0] + "\0" + r[1],
    "e": lambda r: "e" in (r[0] + "\0" + r[1]).lower(),
    '"my run"': lambda r: "my run" in r[0], "x": lambda r: "x" in r[0].lower(),
}


def random_query(rng: random.Random, depth: int):
    """(query text, the test it stands for)."""
    if depth == 0 or rng.random() < 0.3:
        text = rng.choice(list(LEAVES))
        return text, LEAVES[text]
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        text, test = random_query(rng, depth - 1)
        return f"{rng.choice(['-', 'NOT '])}({text})", lambda r: not test(r)
    parts = [random_query(rng, depth - 1) for _ in range(rng.randint(2, 4))]
    joiner = " OR " if kind == "or" else rng.choice([" ", " AND "])
    text = joiner.join(f"({t})" if rng.random() < 0.7 else t for t, _ in parts)
    if kind == "or":
        return text, lambda r: any(test(r) for _, test in parts)
    text = joiner.join(f"({t})" for t, _ in parts)              # an OR inside must be grouped
    return text, lambda r: all(test(r) for _, test in parts)


def test_random_queries_agree_with_python(engine):
    facts = {run_id: (name, notes or "", TAGS.get(run_id, []), status)
             for run_id, name, _, _, notes, status, *_ in RUNS}
    rng = random.Random(44)
    for _ in range(300):
        text, test = random_query(rng, 5)
        expected = [run_id for run_id in ALL if test(facts[run_id])]
        assert select_ids(engine, text) == expected, text


def test_the_documented_error_messages_are_the_real_ones():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "query.md").read_text()
    block = doc.split("## Errors", 1)[1].split("```")[1]
    examples = [line.split(" expected", 1) for line in block.strip().splitlines()]
    assert len(examples) >= 10
    for query, message in examples:
        with pytest.raises(QuerySyntaxError) as info:
            parse_query(query.rstrip())
        assert str(info.value) == "expected" + message, query
