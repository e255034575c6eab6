"""nb.read_scalars says what is wrong with its arguments, and reads a str key as one name."""
from __future__ import annotations

import pytest

import nuboard as nb
from nuboard.errors import RunNotFoundError


@pytest.fixture
def run_path(make_run):
    return make_run("llm", points={"train/loss": [(step, 1.0 / (step + 1)) for step in range(5)],
                                   "t": [(step, float(step)) for step in range(5)]})


def test_a_str_key_is_one_name_not_its_characters(run_path):
    got = nb.read_scalars(run_path, keys="train/loss")
    assert list(got) == ["train/loss"] and got["train/loss"].steps.tolist() == [0, 1, 2, 3, 4]
    assert list(nb.read_scalars(run_path, keys="t")) == ["t"]        # not the 't' of train/loss
    assert list(nb.read_scalars(run_path, keys=("t", "train/loss"))) == ["t", "train/loss"]


def test_the_same_holds_when_read_from_data_parquet(run_path):
    pytest.importorskip("pyarrow")
    assert (run_path / "data.parquet").is_file()
    assert list(nb.read_scalars(run_path, keys="train/loss")) == ["train/loss"]


@pytest.mark.parametrize("where", ["missing", "project", "runs-of-project", "root", "a-file"])
def test_a_path_that_is_not_a_run_folder_is_run_not_found_naming_it(run_path, root, where):
    path = {"missing": root / "llm" / "runs" / "nope", "project": root / "llm",
            "runs-of-project": root / "llm" / "runs", "root": root,
            "a-file": run_path / "run.json"}[where]
    with pytest.raises(RunNotFoundError) as caught:
        nb.read_scalars(path)
    assert repr(str(path)) in str(caught.value)
    if where == "project":
        assert "project folder" in str(caught.value)


def test_bad_keys_and_rank_are_type_and_value_errors(run_path):
    with pytest.raises(TypeError, match="keys"):
        nb.read_scalars(run_path, keys=3)
    with pytest.raises(TypeError, match="keys entry 3"):
        nb.read_scalars(run_path, keys=["t", 3])
    with pytest.raises(TypeError, match="rank"):
        nb.read_scalars(run_path, rank="0")
    with pytest.raises(ValueError, match="rank -1"):
        nb.read_scalars(run_path, rank=-1)
