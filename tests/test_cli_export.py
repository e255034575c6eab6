"""`nuboard export`: the run table and the history written to Parquet and CSV read back equal
to nb.runs and nb.history; bad command lines and failed writes say one line and leave no file.

The CLI runs in this process (helpers.run_cli), and once as the real program (helpers.cli).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from helpers import cli, one_line_error, run_cli

import nuboard as nb

POINTS = {"train/loss": [(0, 2.0), (1, 0.5)], "val/acc": [(0, 0.25)]}


@pytest.fixture
def llm(make_run):
    """Two finished runs of 'llm': 'base' (tagged, with val/acc) and 'wide'."""
    make_run("llm", points=POINTS, run_name="base", tags=["baseline", "x, y"],
             config={"optimizer": {"lr": 1e-3}, "seed": 1})
    make_run("llm", points={"train/loss": [(0, 3.0)]}, run_name="wide",
             config={"optimizer": {"lr": 0.1}, "seed": 2, "width": 512})


def read_csv_as(path, schema: pa.Schema) -> pa.Table:
    """A CSV file read with the column types of `schema` (lists read as text)."""
    types = {f.name: pa.string() if pa.types.is_list(f.type) else
             f.type.value_type if pa.types.is_dictionary(f.type) else f.type for f in schema}
    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types=types,
                                                                   strings_can_be_null=True))


def test_runs_to_parquet_and_csv_read_back_equal(root, llm, tmp_path):
    expected = nb.runs("llm").to_arrow()
    out = run_cli(root, "export", "llm", "--runs", "-o", str(tmp_path / "runs.parquet"))
    assert out.returncode == 0, out
    assert out.stdout.strip() == f"Wrote 2 runs to {tmp_path / 'runs.parquet'}."
    assert pq.read_table(tmp_path / "runs.parquet").equals(expected)

    assert run_cli(root, "export", "llm", "--runs", "-o", str(tmp_path / "runs.csv")).returncode == 0
    back = read_csv_as(tmp_path / "runs.csv", expected.schema)
    assert back.column_names == expected.column_names
    tags = [json.loads(t) for t in back.column("tags").to_pylist()]
    assert tags == expected.column("tags").to_pylist() and ["baseline", "x, y"] in tags
    assert back.drop_columns(["tags"]).equals(expected.drop_columns(["tags"]))


def test_history_to_parquet_and_csv_read_back_equal(root, llm, tmp_path):
    expected = nb.history("llm")
    assert expected.num_rows == 4
    out = run_cli(root, "export", "llm", "--history", "-o", str(tmp_path / "h.parquet"))
    assert out.returncode == 0 and "Wrote 4 points of 2 runs to" in out.stdout, out
    assert pq.read_table(tmp_path / "h.parquet").equals(expected)

    assert run_cli(root, "export", "llm", "--history", "-o", str(tmp_path / "h.csv")).returncode == 0
    back = read_csv_as(tmp_path / "h.csv", expected.schema)
    assert back.to_pylist() == expected.to_pylist()


def test_query_keys_and_rank_pick_the_rows(root, llm, tmp_path):
    target = tmp_path / "h.parquet"
    out = run_cli(root, "export", "llm", "--history", "-q", "tag:baseline", "-k", "val/*",
                  "--keys", "nope", "-o", str(target))
    assert out.returncode == 0, out
    assert pq.read_table(target).equals(nb.history("llm", keys=["val/*"], query="tag:baseline"))
    assert pq.read_table(target).num_rows == 1
    out = run_cli(root, "export", "llm", "--runs", "--query", "seed>=2", "-o", str(tmp_path / "r.parquet"))
    assert out.returncode == 0 and pq.read_table(tmp_path / "r.parquet").column("name").to_pylist() == ["wide"]
    out = run_cli(root, "export", "llm", "--history", "--rank", "1", "-o", str(target))
    assert out.returncode == 0 and "Wrote 0 points of 0 runs" in out.stdout
    assert pq.read_table(target).num_rows == 0


@pytest.mark.parametrize("args, code, says", [
    (["--runs", "-o", "out.txt"], 2, "name the file .parquet or .csv"),
    (["--runs", "--history", "-o", "out.csv"], 2, "not both"),
    (["-o", "out.csv"], 2, "pass one of --runs"),
    (["--runs", "--keys", "a", "-o", "out.csv"], 2, "--keys and --rank go with --history"),
    (["--history", "--query", "lr>", "-o", "out.csv"], 2, "bad --query 'lr>'"),
    (["--history"], 2, "Missing option '--output'"),
])
def test_bad_command_lines_are_one_usage_line(root, llm, tmp_path, monkeypatch, args, code, says):
    monkeypatch.chdir(tmp_path)
    out = run_cli(root, "export", "llm", *args)
    assert out.returncode == code, out
    assert says in one_line_error(out)
    assert list(tmp_path.iterdir()) == [root]


def test_an_unknown_project_exits_1_with_one_line(root, llm, tmp_path):
    out = cli(root, "export", "nope", "--runs", "-o", str(tmp_path / "r.csv"))
    assert out.returncode == 1
    assert one_line_error(out).startswith("nuboard: Project 'nope' not found")
    assert not (tmp_path / "r.csv").exists()


def test_a_failed_write_leaves_the_old_file_and_no_half_file(root, llm, tmp_path, monkeypatch):
    target = tmp_path / "runs.parquet"
    target.write_bytes(b"old")

    def half_then_fail(table, where, **kw):
        with open(where, "wb") as fh:
            fh.write(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", half_then_fail)
    out = run_cli(root, "export", "llm", "--runs", "-o", str(target))
    assert out.returncode == 1
    assert "No space left on device" in one_line_error(out)
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["experiments", "runs.parquet"]


def test_help_has_an_example(root):
    out = run_cli(root, "export", "--help")
    assert out.returncode == 0 and "Example:" in out.stdout and "nuboard export llm --runs" in out.stdout
