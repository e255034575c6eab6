"""The form of `nuboard artifact add`: field checks, metadata typing, sizes, the review, check_all."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import make_tree

from nuboard.artifacts import SourceInfo, add_artifact
from nuboard.artifacts.form import (
    AddForm,
    FieldError,
    Target,
    apply_meta_command,
    check_all,
    check_path,
    check_target,
    format_count,
    format_size,
    meta_lines,
    meta_summary,
    meta_text,
    metadata_dict,
    parse_meta,
    parse_meta_flags,
    parse_store,
    parse_type,
    parse_yes_no,
    review_lines,
)


def listing(folder: Path) -> list[str]:
    """Every path under a folder, to compare before and after."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def source_of(count: int, size: int, given: str = "~/data") -> SourceInfo:
    """A SourceInfo as inspect_source returns it, for the pure formatters."""
    return SourceInfo(given, Path("/data"), False, [], count, size, None)


# --- sizes and counts ----------------------------------------------------------------------------

@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1, "1 B"), (999, "999 B"), (1000, "1 kB"), (1005, "1.01 kB"), (1234, "1.23 kB"),
    (12_345_678, "12.3 MB"), (999_499, "999 kB"), (999_500, "1 MB"), (999_999_999, "1 GB"),
    (1_200_000_000, "1.2 GB"), (812_000_000_420, "812 GB"), (1_500_000_000_000, "1.5 TB"),
    (2_000_000_000_000_000, "2 PB"), (5 * 10**18, "5000 PB"),
])
def test_format_size_is_decimal_with_three_significant_digits(n, text):
    assert format_size(n) == text


@pytest.mark.parametrize("n, word, text", [
    (0, "file", "0 files"), (1, "file", "1 file"), (2, "file", "2 files"),
    (1204, "file", "1,204 files"), (1_000_000, "file", "1,000,000 files"), (1, "version", "1 version"),
])
def test_format_count(n, word, text):
    assert format_count(n, word) == text


# --- metadata --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, entry", [
    ("tokens=12B", ("tokens", "12B", "text")),
    ("rows=1200000", ("rows", 1200000, "int")),
    ("delta=-3", ("delta", -3, "int")),
    ("lr=3e-4", ("lr", 3e-4, "float")),
    ("score=0.5", ("score", 0.5, "float")),
    ("dedup=true", ("dedup", True, "bool")),
    ("dedup=False", ("dedup", False, "bool")),
    ("id=0001", ("id", 1, "int")),
    ("id:str=0001", ("id", "0001", "text")),
    ("steps:int=5", ("steps", 5, "int")),
    ("score:float=1", ("score", 1.0, "float")),
    ("ok:bool=true", ("ok", True, "bool")),
    ("shards:json=[1, 2]", ("shards", [1, 2], "json")),
    ("cfg:json={\"a\": null}", ("cfg", {"a": None}, "json")),
    ("url=http://x/?a=1", ("url", "http://x/?a=1", "text")),
    ("note=", ("note", "", "text")),
    (" tokens = 12B ", ("tokens", "12B", "text")),
    ("eval:acc:float=0.9", ("eval:acc", 0.9, "float")),
])
def test_metadata_is_typed_as_entered_or_as_said(text, entry):
    key, value, typename = parse_meta(text)
    assert (key, value, typename) == entry
    assert type(value) is type(entry[1])


@pytest.mark.parametrize("text, words", [
    ("rows", ["'rows'", "no '='"]),
    ("=5", ["'=5'", "no key"]),
    ("rows:int=abc", ["'abc'", "whole number", "rows:int="]),
    ("rows:int=1.5", ["'1.5'", "whole number"]),
    ("lr:float=fast", ["'fast'", "not a number"]),
    ("ok:bool=yes", ["'yes'", "true or false"]),
    ("shards:json=[1,", ["'[1,'", "not JSON"]),
    ("x:json=NaN", ["'NaN'", "not JSON"]),
    ("rows:itn=5", ["'itn'", "not a type"]),
    ("big=1e400", ["'1e400'", "infinity"]),
])
def test_bad_metadata_names_the_value_and_the_rule(text, words):
    with pytest.raises(FieldError) as info:
        parse_meta(text)
    for word in words:
        assert word in str(info.value)


def test_metadata_lines_and_summary():
    items = [("tokens", "12B", "text"), ("rows", 1200000, "int"), ("dedup", True, "bool"),
             ("lr", 0.5, "float"), ("shards", [1, 2], "json")]
    assert meta_text(*items[0]) == 'tokens = "12B"  (text)'
    assert meta_text(*items[1]) == "rows = 1200000  (int)"
    assert meta_summary(items[:2]) == 'tokens="12B" (text), rows=1200000 (int)'
    assert meta_summary(items[2:]) == "dedup=true (bool), lr=0.5 (float), shards=[1, 2] (json)"
    assert meta_summary([]) == "none"
    assert meta_lines(items[:2]) == ['  1  tokens = "12B"  (text)', "  2  rows = 1200000  (int)"]
    assert meta_lines([]) == ["  (no metadata)"]
    assert metadata_dict(items) == {"tokens": "12B", "rows": 1200000, "dedup": True, "lr": 0.5,
                                    "shards": [1, 2]}
    assert json.loads(json.dumps(metadata_dict(items))) == metadata_dict(items)


def test_metadata_editor_commands():
    items = [("tokens", "12B", "text"), ("rows", 1200000, "int")]
    assert apply_meta_command(items, "dedup=true") == items + [("dedup", True, "bool")]
    assert apply_meta_command(items, "tokens=13B") == [("tokens", "13B", "text"), items[1]]  # in place
    assert apply_meta_command(items, "2 rows=5") == [items[0], ("rows", 5, "int")]
    assert apply_meta_command(items, "2 count=5") == [items[0], ("count", 5, "int")]
    assert apply_meta_command(items, "-1") == [items[1]]
    assert apply_meta_command(items, "rows:str=1200000") == [items[0], ("rows", "1200000", "text")]
    assert items == [("tokens", "12B", "text"), ("rows", 1200000, "int")]       # not changed
    with pytest.raises(FieldError, match="no line 3: the list has lines 1-2"):
        apply_meta_command(items, "-3")
    with pytest.raises(FieldError, match="no line 1: the list is empty"):
        apply_meta_command([], "1 a=1")
    with pytest.raises(FieldError, match="'rows' is already line 2"):
        apply_meta_command(items, "1 rows=3")
    with pytest.raises(FieldError, match="'x' is not a whole number"):
        apply_meta_command(items, "2 rows:int=x")


def test_meta_flags_collect_every_problem():
    items, problems = parse_meta_flags(["tokens=12B", "rows:int=x", "rows=5", "bad", "tokens=13B"])
    assert items == [("tokens", "13B", "text"), ("rows", 5, "int")]
    assert problems == ["--meta: 'x' is not a whole number, as rows:int= needs (such as rows:int=5)",
                        "--meta: 'bad' has no '=': write key=value, such as rows=1200000"]


# --- the other fields ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, store", [("copy", "copy"), ("c", "copy"), ("Reference", "reference"),
                                         ("ref", "reference"), ("r", "reference")])
def test_store(text, store):
    assert parse_store(text) == store


def test_store_type_and_yes_no_refuse_others():
    with pytest.raises(FieldError, match="'both' is not copy or reference"):
        parse_store("both")
    with pytest.raises(FieldError, match="'datset' is not one of dataset, model, checkpoint, report, other"):
        parse_type("datset")
    assert parse_type("Dataset") == "dataset" and parse_type("other") == "other"
    assert parse_yes_no("", False) is False and parse_yes_no("", True) is True
    assert parse_yes_no("Y", False) is True and parse_yes_no("no", True) is False
    with pytest.raises(FieldError, match="'maybe' is not y or n"):
        parse_yes_no("maybe", False)


def test_target_needs_the_project_and_peeks_at_the_next_version(root, tmp_path):
    with pytest.raises(FieldError) as info:
        check_target("fineweb-edu", root)
    assert str(info.value) == "give the project too, as in datasets/fineweb-edu"
    assert check_target("datasets/fineweb-edu", root) == Target("datasets", "fineweb-edu", 1, False)
    src = make_tree(tmp_path / "src", {"a": b"1"})
    add_artifact("datasets", "fineweb-edu", src)
    add_artifact("datasets", "fineweb-edu", src)
    before = listing(root)
    assert check_target(" datasets/fineweb-edu ", root) == Target("datasets", "fineweb-edu", 3, True)
    assert check_target("team/llm/model", root) == Target("team/llm", "model", 1, False)
    assert listing(root) == before                                  # a peek: nothing claimed


@pytest.mark.parametrize("text, words", [
    ("datasets/fine web", ["'fine web'", "letters, digits"]),
    ("datasets/", ["''", "letters, digits"]),
    ("a//b", ["'a/'", "empty segment"]),
    ("datasets/fineweb-edu:v3", ["':v3'", "numbered for you"]),
    ("", ["give the project and the name"]),
])
def test_bad_targets_say_why(root, text, words):
    with pytest.raises(FieldError) as info:
        check_target(text, root)
    for word in words:
        assert word in str(info.value)


def test_path_counts_files_and_expands_home_and_relative(root, tmp_path, monkeypatch):
    make_tree(tmp_path / "home" / "data", {"a.bin": b"x" * 1500, "sub/b.bin": b"y" * 500})
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    source = check_path("~/data", root, "datasets")
    assert (source.file_count, source.total_bytes, source.given) == (2, 2000, "~/data")
    monkeypatch.chdir(tmp_path / "home")
    assert check_path("data/a.bin", root, "datasets").real == tmp_path / "home" / "data" / "a.bin"
    assert check_path("data", root, None).file_count == 2          # no project known yet


def test_path_problems_say_why(root, tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_VAR", raising=False)
    (tmp_path / "empty").mkdir()
    cases = {str(tmp_path / "nope"): "does not exist", "$NO_SUCH_VAR/x": "$NO_SUCH_VAR",
             str(tmp_path / "empty"): "holds no files", "  ": "give the path"}
    for text, words in cases.items():
        with pytest.raises(FieldError, match=words.replace("$", r"\$")):
            check_path(text, root, "datasets")
    art = add_artifact("datasets", "x", make_tree(tmp_path / "src", {"a": b"1"}))
    with pytest.raises(FieldError, match="artifacts/"):
        check_path(str(art.files), root, "datasets", reference=True)


# --- the review ------------------------------------------------------------------------------------

def test_review_lines_read_as_the_spec_shows():
    form = AddForm(target="datasets/fineweb-edu", path="~/data/fineweb-edu/2026-10", store="reference",
                   type="dataset", description="FineWeb-Edu, Oct 2026 snapshot, deduplicated",
                   checksum=False, metadata=[("tokens", "12B", "text"), ("rows", 1200000, "int")])
    lines = review_lines(form, Target("datasets", "fineweb-edu", 3, True), source_of(1204, 812_000_000_420))
    assert lines == [
        "  1  name         datasets/fineweb-edu  (new version v3)",
        "  2  path         ~/data/fineweb-edu/2026-10  (1,204 files, 812 GB)",
        "  3  store        reference",
        "  4  type         dataset",
        "  5  description  FineWeb-Edu, Oct 2026 snapshot, deduplicated",
        "  6  checksum     no",
        '  7  metadata     tokens="12B" (text), rows=1200000 (int)',
    ]


def test_review_of_a_copy_of_one_file_to_a_new_name():
    form = AddForm(target="llm/best", path="ckpt/best.pt", store="copy", type="checkpoint",
                   description="step 25000")
    lines = review_lines(form, Target("llm", "best", 1, False), source_of(1, 1_200_000_000))
    assert lines[0] == "  1  name         llm/best  (new artifact, v1)"
    assert lines[1] == "  2  path         ckpt/best.pt  (1 file, 1.2 GB)"
    assert lines[5] == "  6  checksum     yes (a copy is always hashed)"
    assert lines[6] == "  7  metadata     none"
    form.store, form.checksum = "reference", True
    assert review_lines(form, Target("llm", "best", 1, False), source_of(1, 5))[5] == "  6  checksum     yes"


# --- the whole form --------------------------------------------------------------------------------

def test_check_all_reports_every_problem_at_once(root, tmp_path):
    form = AddForm(target="fineweb-edu", path=str(tmp_path / "nope"), store="both", type="datset",
                   description="  ")
    assert check_all(form, root) == [
        "NAME: give the project too, as in datasets/fineweb-edu",
        f"PATH: path {str(tmp_path / 'nope')!r} does not exist: give an existing file or folder",
        "--ref/--copy: 'both' is not copy or reference (copy copies the files into the version; "
        "reference leaves them where they are)",
        "--type: 'datset' is not one of dataset, model, checkpoint, report, other",
        "--description: give a description: say in a few words what this version is",
    ]


def test_check_all_names_each_missing_value(root):
    assert check_all(AddForm(), root) == [
        "missing NAME, the project/name (such as datasets/fineweb-edu)",
        "missing PATH, the file or folder to add",
        "missing --ref or --copy (reference leaves the files where they are; copy copies them)",
        "missing --type (dataset, model, checkpoint, report or other)",
        "missing --description (what this version is)",
    ]


def test_check_all_passes_a_complete_form_and_writes_nothing(root, tmp_path):
    src = make_tree(tmp_path / "src", {"a": b"1"})
    form = AddForm(target="datasets/x", path=str(src), store="reference", type="dataset",
                   description="one file", metadata=[("rows", 1, "int")])
    assert check_all(form, root) == []
    assert not root.exists()
    missing_type = AddForm(target="datasets/x", path=str(src), store="copy", description="d")
    assert check_all(missing_type, root) == ["missing --type (dataset, model, checkpoint, report or other)"]


def test_check_all_checks_a_reference_to_a_running_run(root):
    run = root / "llm" / "runs" / "r1"
    make_tree(run / "files", {"best.pt": b"best"})
    (run / "run.json").write_text(json.dumps({"id": "r1", "project": "llm", "status": "running"}))
    (run / "heartbeat").write_text("{}")
    form = AddForm(target="llm/best", path=str(run / "files" / "best.pt"), store="reference",
                   type="checkpoint", description="best")
    problems = check_all(form, root)
    assert len(problems) == 1 and problems[0].startswith("PATH: run 'r1' is still running")
    form.store = "copy"
    assert check_all(form, root) == []
    assert os.listdir(root / "llm") == ["runs"]
