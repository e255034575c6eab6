"""Fuzzing every JSON file kind through the catalog's sync, the CLI and the viewer (issue 30,
item 18; the readers' rules are item 10).

A real project (runs, artifact versions, a use record and a saved view, all written by the real
API) gets one hostile file: run.json, a session record inside it, a heartbeat, a manifest.json,
views.json or a use record, replaced by hypothesis-made JSON of the wrong types, deeply nested,
with huge strings, lone surrogates, NaN, numbers past int64, or bytes that are not JSON at all.
Then the sync must not raise and must index the rest of the project; the one damaged object is
indexed or reported as skipped, never dropped silently; `nuboard ls`, `nuboard artifact ls` and
the viewer's pages answer without a traceback or a 500. The budget is the hypothesis profile of
tests/conftest.py (docs/testing.md).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest
from helpers import drop_catalog, run_cli
from helpers_http import AppViewer
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

import nuboard as nb
from nuboard.catalog.artifact_reads import version_rows
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
from nuboard.catalog.tables import runs, scalars
from nuboard.web.views import make_view, read_views_noted, save_view

PROJECT = "p"
QUIET = dict(system_metrics=False, capture_console=False, capture_env=False)
# An example copies a project, syncs it, lists it and serves seven pages (half a second of CPU):
# a sixteenth of the profile's count per file kind and backend (the deep examples come on top).
BUDGET = settings(max_examples=max(3, settings.default.max_examples // 16))


# -- the project ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A project written by the real API: artifact 'data' v1 (used by run 'victim'), artifact
    'model' v1 and v2, runs 'victim' and 'keep' (each 'x' at steps 0..4), a saved view."""
    root = tmp_path_factory.mktemp("template") / "experiments"
    src = root.parent / "weights.bin"
    src.write_bytes(b"\1" * 100)
    nb.add_artifact(PROJECT, "data", src, type="dataset", description="d", dir=root)
    for run_id in ("victim", "keep"):
        run = nb.init(PROJECT, dir=root, run_id=run_id, run_name=run_id, config={"lr": 0.1},
                      tags=["a"], **QUIET)
        if run_id == "victim":
            run.use_artifact("data:v1")
        for step in range(5):
            run.add_scalar("x", float(step), step=step)
        if run_id == "victim":       # nuboard.wandb's keys, for the hostile versions to reach
            run.update_record(lambda doc: doc.update(
                summary={"best": 0.5, "val": {"min": 0.1}}, metrics={"val/*": {"step_metric": "epoch"}},
                alerts=[{"time": "2026-01-01T00:00:00.000Z", "level": "WARN", "title": "t", "text": "x"}]))
        run.finish()
    for _ in range(2):
        nb.add_artifact(PROJECT, "model", src, type="model", description="m", dir=root)
    save_view(root, PROJECT, make_view("mine", "tag:a", ["name"], "start", True, ["keep"]))
    return root


def kind_paths(root: Path) -> dict[str, Path]:
    """Each file kind's one victim in a copy of the template."""
    project = root / PROJECT
    uses = sorted((project / "artifacts" / ".uses").rglob("*.json"))
    assert len(uses) == 1, uses
    return {"run.json": project / "runs" / "victim" / "run.json",
            "session": project / "runs" / "victim" / "run.json",
            "heartbeat": project / "runs" / "victim" / "heartbeat",
            "manifest.json": project / "artifacts" / "model" / "v1" / "manifest.json",
            "views.json": project / "views.json",
            "use record": uses[0]}


# -- hostile JSON ---------------------------------------------------------------------------------

class Raw:
    """JSON text put into a document as it is (deep nesting, numbers Python would not write)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:60]!r}{'...' if len(self.text) > 60 else ''} len={len(self.text)})"


def deep(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


class Shown(bytes):
    """A file's bytes, shown short in hypothesis's reports."""

    def __repr__(self) -> str:
        return repr(bytes(self[:200])) + (f"... ({len(self)} bytes)" if len(self) > 200 else "")


class Huge(str):
    """A huge string, shown short in hypothesis's reports."""

    def __repr__(self) -> str:
        return f"Huge({self[:1]!r} * {len(self)})"


LONE = ["\ud800", "a\udfffb", "\udc00\ud800", "\ud83d"]        # lone surrogates
RAW_NUMBERS = ["1e400", "-1e400", "123456789012345678901234567890", "-0", "1E+2",
               "NaN", "Infinity", "-Infinity", "9223372036854775808", "-9223372036854775809"]

leaves = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.sampled_from([2**63, -2**63 - 1, 2**64, 10**30, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20), st.sampled_from(LONE),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zl", "Zp", "Mn"]), max_size=8),
    st.builds(lambda n, c: Huge(c * n), st.sampled_from([70_000, 1_100_000, 3_000_000]),
              st.sampled_from(["x", "\u00e9", "\U0001f600", "\n"])),
    st.builds(deep, st.sampled_from([64, 1000, 5000, 100_000]), st.sampled_from(["list", "dict"])),
    st.sampled_from(RAW_NUMBERS).map(Raw),
)
keys = st.one_of(st.text(max_size=10), st.sampled_from(LONE + ["", "format", "id", "\0"]))
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)),
                      max_leaves=12)


def dump(value) -> str:
    """JSON text of value, Raw parts as they are, strings escaped to ASCII (lone surrogates
    become \\udxxx escapes, as any JSON writer outside Python may write them)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value, allow_nan=True)


def paths_in(doc, prefix: tuple = (), depth: int = 3) -> list[tuple]:
    """Every path to a value in doc (keys and list indexes), up to `depth` levels down."""
    out = [prefix] if prefix else []
    if depth == 0:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_in(v, prefix + (k,), depth - 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:2]):
            out += paths_in(v, prefix + (i,), depth - 1)
    return out


def replaced(doc, path: tuple, value):
    """A copy of doc with the value at path replaced (or removed, for the Missing marker)."""
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    head, rest = path[0], path[1:]
    if not rest and value is MISSING:
        del copy[head]
    else:
        copy[head] = replaced(doc[head], rest, value)
    return copy


MISSING = object()

RAW_FILES = [b"", b"{", b"[", b"null", b"[]", b'"x"', b"{}", b"\xff\xfe{\x00}\x00", b"\xef\xbb\xbf{}",
             b"\x00" * 64, b'{"a": 1}{"b": 2}', b'{"format": 99}', b'{"format": "1"}',
             b'{"a": 1, "a": [', "{\"\u2028\": 1}".encode(), b'{"id": "\xff"}']


@st.composite
def hostile_file(draw, kind: str, doc) -> bytes:
    return Shown(draw(hostile_bytes(kind, doc)))


@st.composite
def hostile_bytes(draw, kind: str, doc) -> bytes:
    """The bytes of a hostile file of this kind: the API's own document with one value (or the
    whole) replaced by hostile JSON, or a key removed, or bytes cut or not JSON at all."""
    how = draw(st.sampled_from(["value", "value", "value", "remove", "whole", "raw", "cut"]))
    if kind == "session":
        where = [p for p in paths_in(doc) if p[:1] == ("sessions",)]
    else:
        where = paths_in(doc)
    if how == "whole" and kind != "session":
        return dump(draw(values, label="whole")).encode()
    if how == "raw" and kind != "session":
        return draw(st.sampled_from(RAW_FILES), label="raw")
    text = json.dumps(doc)
    if how == "cut":
        return text.encode()[:draw(st.integers(0, len(text) - 1), label="cut")]
    path = draw(st.sampled_from(where), label="path")
    if how == "remove":
        return dump(replaced(doc, path, MISSING)).encode()
    return dump(replaced(doc, path, draw(values, label="value"))).encode()


# -- the checks -----------------------------------------------------------------------------------

def indexed(root: Path) -> tuple[object, dict[str, dict], set[tuple[str, int]]]:
    """Sync the project from its files; the report, each run's row with its scalars, and the
    (artifact, version) pairs indexed."""
    with Catalog(root, PROJECT) as catalog:
        report = sync(catalog)
        with catalog.reader.connect() as conn:
            rows = {r.run_id: dict(r._mapping) for r in
                    conn.execute(select(runs).where(runs.c.project_id == catalog.project_id))}
            for row in rows.values():
                row["scalars"] = {s.name: s.last for s in conn.execute(
                    select(scalars.c.name, scalars.c.last).where(scalars.c.run == row["id"]))}
        versions = {(v["name"], v["version"]) for v in version_rows(catalog)}
    return report, rows, versions


_copies = itertools.count()


def project_copy(template: Path, base: Path) -> Path:
    root = base / f"copy{next(_copies)}" / "experiments"
    shutil.copytree(template, root, symlinks=True)
    return root


def check_project_survives(root: Path, kind: str, target: Path) -> None:
    """The sync, `ls`, `artifact ls`, the saved views and the viewer over a project with one
    hostile file: what that file does not hold is all there."""
    report, rows, versions = indexed(root)
    where = f"{kind} {target.name}: {report}"
    assert "keep" in rows and rows["keep"]["scalars"] == {"x": 4.0}, where
    assert {("data", 1), ("model", 2)} <= versions, where
    skipped = {name for name, _ in report.skipped}
    if kind in ("run.json", "session"):
        assert "victim" in rows or "victim" in skipped, where
    else:
        assert "victim" in rows and rows["victim"]["scalars"] == {"x": 4.0}, where
    if kind == "manifest.json":
        assert ("model", 1) in versions or \
            any("model" in name for name, _ in report.skipped_versions), where
    else:
        assert ("model", 1) in versions, where
    read_views_noted(root, PROJECT)

    listed = run_cli(root, "ls", PROJECT, "--json")
    assert listed.returncode == 0, f"{where}\n{listed.stderr}"
    assert "keep" in {r["id"] for r in json.loads(listed.stdout)}, where
    arts = run_cli(root, "artifact", "ls", PROJECT, "--json")
    assert arts.returncode == 0, f"{where}\n{arts.stderr}"
    assert "Traceback" not in listed.stderr + arts.stderr, where

    with AppViewer(root) as viewer:
        for page in (f"/p/{PROJECT}", f"/p/{PROJECT}/.artifacts", f"/p/{PROJECT}/.timeline",
                     f"/p/{PROJECT}/.run/keep", f"/p/{PROJECT}/.run/victim",
                     f"/p/{PROJECT}/.artifact/model/v1", f"/p/{PROJECT}/.charts?runs=keep,victim"):
            reply = viewer.get(page)
            assert reply.status < 500, f"{where}: GET {page} answered {reply.status}"
        assert viewer.get(f"/p/{PROJECT}/.run/keep").status == 200, where


KINDS = ["run.json", "session", "heartbeat", "manifest.json", "views.json", "use record"]


def original(template: Path, kind: str):
    return json.loads(kind_paths(template)[kind].read_bytes())


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_file_of_each_kind_never_takes_the_project_down(template, tmp_path, kind, backend):
    """Per kind: hypothesis-made hostile versions of that file, each in a fresh copy of the
    project; the sync, the CLI and the viewer keep the rest of the project (on SQLite, and on
    PostgreSQL, where text may hold no NUL and no lone surrogate)."""
    doc = original(template, kind)

    @BUDGET
    @given(content=hostile_file(kind, doc))
    @example(content=Shown(("[" * 5000 + "]" * 5000).encode()))
    @example(content=Shown(dump(replaced(doc, paths_in(doc)[0], deep(5000, "dict"))).encode()))
    def check(content: bytes) -> None:
        root = project_copy(template, tmp_path)
        target = kind_paths(root)[kind]
        target.write_bytes(content)
        try:
            check_project_survives(root, kind, target)
        finally:
            if backend == "postgresql":         # its schemas, made for this copy's root id
                with Catalog(root, PROJECT) as catalog:
                    drop_catalog(catalog)
            shutil.rmtree(root.parent, ignore_errors=True)

    check()


def test_the_template_project_is_whole(template, tmp_path):
    """Without a hostile file everything is indexed and shown (the base of the test above)."""
    root = project_copy(template, tmp_path)
    report, rows, versions = indexed(root)
    assert set(rows) == {"victim", "keep"} and not report.skipped, report
    assert versions == {("data", 1), ("model", 1), ("model", 2)}, report
    assert [v["name"] for v in read_views_noted(root, PROJECT)[0]] == ["mine"]
    assert all(math.isclose(rows[r]["scalars"]["x"], 4.0) for r in rows)
    started = time.monotonic()
    check_project_survives(root, "views.json", kind_paths(root)["views.json"])
    assert time.monotonic() - started < 120


@pytest.mark.parametrize("case", ["metadata", "file name"])
def test_a_manifest_with_text_that_is_not_utf8_lists_shows_and_serves(tmp_path, case):
    """A manifest holding a lone surrogate (a metadata value escaped as \\ud800 by hand, or the
    \\udcff a real add writes for a file name that is not UTF-8): `artifact ls --json`,
    `artifact show` and the version's pages answer, without a traceback or a 500."""
    root = tmp_path / "experiments"
    data = tmp_path / "data"
    data.mkdir()
    if case == "file name":
        with open(os.path.join(os.fsencode(data), b"w\xff.bin"), "wb") as fh:
            fh.write(b"x")
    else:
        (data / "w.bin").write_bytes(b"x")
    nb.add_artifact(PROJECT, "model", data, dir=root)
    if case == "metadata":
        manifest = root / PROJECT / "artifacts" / "model" / "v1" / "manifest.json"
        doc = json.loads(manifest.read_text())
        doc["metadata"] = {"note": "\ud800"}
        manifest.write_text(json.dumps(doc))          # ASCII: the surrogate as an escape
    listed = run_cli(root, "artifact", "ls", PROJECT, "--json")
    assert listed.returncode == 0, listed.stderr
    shown = run_cli(root, "artifact", "show", f"{PROJECT}/model:v1")
    assert shown.returncode == 0, shown.stderr
    with AppViewer(root) as viewer:
        for page in (f"/p/{PROJECT}/.artifact/model/v1", f"/p/{PROJECT}/.artifact/model/v1/files",
                     f"/api/p/{PROJECT}/.artifact/model/v1", f"/p/{PROJECT}/.artifacts"):
            assert viewer.get(page).status == 200, page
