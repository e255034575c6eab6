"""The form of `nuboard artifact add`: field checks, metadata typing, sizes, the review,
check_all; and the viewer's New version form over real HTTP: each message beside its field,
a field flagged only once left, the base of a relative path, the confirmation after Add and
the runs the unlink pages name."""
from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import QUIET, make_tree
from helpers_http import Viewer

import nuboard as nb
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


# --- the viewer's New version form (nuboard up --edit-artifacts) ----------------------------------

class _ByIds(HTMLParser):
    """The text inside each element with an id, and the id of the <label> each id sits in."""

    def __init__(self):
        super().__init__()
        self.text: dict[str, str] = {}
        self.label_of: dict[str, str | None] = {}
        self.attrs_of: dict[str, dict] = {}
        self._open: list[tuple[str, str | None]] = []          # (tag, id) of open elements
        self._labels = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("input", "br", "img", "meta", "link"):           # void: never closed
            ident = dict(attrs).get("id")
            if ident:
                self.attrs_of[ident] = dict(attrs)
                self.label_of[ident] = self._label()
            return
        ident = dict(attrs).get("id")
        if tag == "label":
            self._labels += 1
            ident = ident or f"label-{self._labels}"
        if ident:
            self.text.setdefault(ident, "")
            self.attrs_of[ident] = dict(attrs)
            self.label_of[ident] = self._label()
        self._open.append((tag, ident))

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                return

    def handle_data(self, data):
        for _, ident in self._open:
            if ident:
                self.text[ident] += data

    def _label(self) -> str | None:
        labels = [ident for tag, ident in self._open if tag == "label"]
        return labels[-1] if labels else None


def by_ids(html: str) -> _ByIds:
    parsed = _ByIds()
    parsed.feed(html)
    return parsed


def form_fields(**kw) -> dict:
    fields = {"project": "datasets", "name": "corpus", "path": "", "store": "reference",
              "type": "dataset", "description": "a new cut"}
    fields.update(kw)
    return fields


@pytest.fixture
def used(root, tmp_path):
    """datasets/corpus v1 used by runs train-0 and train-1 of llm, v2 by train-1 and eval of
    vit, v3 by none."""
    data = make_tree(tmp_path / "data", {"a.bin": b"1"})
    for cut in ("one", "two", "three"):
        make_tree(data, {f"{cut}.bin": cut.encode()})
        nb.add_artifact("datasets", "corpus", str(data), type="dataset", reference=True,
                        description=cut, dir=root)
    for project, name, versions in (("llm", "train-0", [1]), ("llm", "train-1", [1, 2]),
                                    ("vit", "eval", [2])):
        with nb.init(project, dir=root, run_name=name, **QUIET) as run:
            for n in versions:
                run.use_artifact(f"datasets/corpus:v{n}")
    return data


def test_after_a_submit_each_message_sits_in_its_fields_label(root, used):
    with Viewer(root, edit_artifacts=True) as v:
        page = v.post("/p/datasets/.artifacts/review", form_fields(
            name="", path=str(used) + "-typo", type="model-ish", description=" ",
            meta_key_0="rows", meta_kind_0="number", meta_value_0="1200000",
            meta_key_1="dedup", meta_kind_1="yes/no", meta_value_1="maybe"))
    assert page.status == 400
    found = by_ids(page.text)
    for field, words in (("name", "✗ name: give a name"), ("path", "does not exist"),
                         ("type", "✗ type: 'model-ish' is not one of"),
                         ("description", "✗ description: give a description")):
        assert words in found.text[f"msg-{field}"], field
        assert found.label_of[f"msg-{field}"] == found.label_of[f"f-{field}"] is not None
        assert found.attrs_of[f"msg-{field}"].get("hx-swap-oob") is None
    assert found.text["msg-meta-0"] == ""                       # a good row says nothing
    assert "'maybe' is not yes or no, as dedup needs" in found.text["msg-meta-1"]
    assert found.text["checks"].strip() == ("✗ 5 fields to fix: name, path, type, description, "
                                            "metadata row 2")
    assert found.attrs_of["touched"]["value"] == "*"     # checked again as typed: all shown


def test_as_typed_only_the_fields_left_are_flagged(root, used):
    with Viewer(root, edit_artifacts=True) as v:
        def check(**kw) -> _ByIds:
            reply = v.post("/p/datasets/.artifacts/check", form_fields(**kw),
                           headers={"HX-Request": "true"})
            assert reply.status == 200
            return by_ids(reply.text)

        typing = check(name="corpus", path="", type="", description="", touched="")
        assert typing.text["msg-name"] == "✓ name: will be corpus:v4"
        assert typing.attrs_of["msg-name"]["hx-swap-oob"] == "true"
        for field in ("path", "type", "description"):
            assert typing.text[f"msg-{field}"] == "", field
        assert "✗" not in "".join(typing.text.values())
        left = check(name="corpus", path="", type="", description="", touched="name,path")
        assert left.text["msg-path"] == "✗ path: give the path of a file or folder"
        assert left.text["msg-type"] == left.text["msg-description"] == ""
        assert left.text["flagged"] == "✗ 1 field to fix: path"
        good = check(path=str(used), touched="path")           # a good path is said at once
        assert good.text["msg-path"].startswith(f"✓ path: 4 files, 12 B at {used}")
        assert good.text["msg-path"].endswith("⚠ the files are the same as corpus:v3")
        rows = check(path=str(used), meta_rows="6", meta_key_3="rows", meta_kind_3="number",
                     meta_value_3="many", touched="path")
        assert rows.text["msg-meta-3"] == ""                    # row 4 not left yet
        rows = check(path=str(used), meta_rows="6", meta_key_3="rows", meta_kind_3="number",
                     meta_value_3="many", touched="path,meta-3")
        assert rows.text["msg-meta-3"] == "✗ 'many' is not a number, as rows needs"
        assert rows.text["msg-meta-0"] == ""
        every = check(name="", path="", type="", description="", touched="*")
        assert all(every.text[f"msg-{f}"].startswith("✗") for f in
                   ("name", "path", "type", "description"))


def test_the_path_field_says_what_a_relative_path_is_relative_to(root, used):
    with nb.init("llm", dir=root, run_name="ckpt", **QUIET) as run:
        pass
    with Viewer(root, edit_artifacts=True) as v:
        plain = by_ids(v.get("/p/datasets/.artifacts/new").text)
        run_form = by_ids(v.get(f"/p/llm/.artifacts/new?run={run.id}&path=files/x").text)
    assert plain.text["path-base"] == f"a relative path is relative to {root}, the served folder"
    assert plain.label_of["path-base"] == plain.label_of["f-path"]
    assert run_form.text["path-base"] == ("inside the run: relative to its folder "
                                          f"{root / 'llm' / 'runs' / run.id}")


def test_after_add_the_version_page_confirms_it(root, used, tmp_path):
    fresh = make_tree(tmp_path / "fresh", {"x.bin": b"123"})
    with Viewer(root, edit_artifacts=True) as v:
        again = by_ids(v.post("/p/datasets/.artifacts/add", form_fields(path=str(used))).text)
        assert again.text["msg-path"] == ("✗ path: the files are the same as corpus:v3; "
                                          "press Add anyway to add them again")
        added = v.post("/p/datasets/.artifacts/add", form_fields(path=str(fresh)))
        assert added.status == 303
        landed = v.get(added.headers["location"])
        plain = v.get("/p/datasets/.artifact/corpus/v4").text
    found = by_ids(landed.text)
    assert landed.status == 200
    assert " ".join(found.text["version-added"].split()).startswith(
        "✓ Added corpus v4 to datasets: use it with run.use_artifact(\"datasets/corpus:v4\")")
    assert '<a href="/p/datasets/.artifact/corpus/v4">corpus v4</a>' in landed.text
    assert 'id="version-added"' not in plain                 # only on the page Add led to


def test_the_unlink_pages_name_the_runs_that_use_the_versions(root, used):
    with Viewer(root, edit_artifacts=True) as v:
        one = by_ids(v.get("/p/datasets/.artifact/corpus/v1/unlink").text)
        unused = by_ids(v.get("/p/datasets/.artifact/corpus/v3/unlink").text)
        every = by_ids(v.get("/p/datasets/.artifact/corpus/unlink-all").text)
    said = " ".join(one.text["unlink-users"].split())
    assert said == "This version is used by 2 runs of llm: train-0, train-1."
    assert " ".join(unused.text["unlink-users"].split()) == "No run used this version."
    said = " ".join(every.text["unlink-users"].split())
    assert said == "These versions are used by 3 runs: llm/train-0, llm/train-1, vit/eval."
    assert [" ".join(line.split()) for line in every.text["used-by-version"].strip().split("\n")] \
        == ["v1: used by 2 runs", "v2: used by 2 runs", "v3: used by 0 runs"]
