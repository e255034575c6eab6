"""One odd file never takes a project down (issue 30, item 10; reliability.md row 24).

Every JSON file kind a project holds (run.json, a session record in it, manifest.json,
views.json, the heartbeat) is read through files.documents with one set of rules. Here each
kind is made hostile in each way (nested 5,000 levels deep, wrong types, a lone surrogate
escape, a FIFO, run.json over 64 MB), all in one project folder beside good runs and
versions, and `nuboard ls`, `nuboard artifact ls` (real commands) and the real viewer over
HTTP (Runs, Artifacts, Timeline, run and version pages) must each skip the odd file with a
reason naming it, show the rest, and never answer 500.
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env
from helpers_http import Viewer

import nuboard as nb
from nuboard.files import caps, documents, layout

QUIET = dict(system_metrics=False, capture_console=False, capture_env=False)
DEEP = '{"a": ' * 5000 + "1" + "}" * 5000          # 30 kB of valid JSON, 5,000 levels deep
SURROGATE = '"\\ud800"'                            # a lone surrogate escape, as JSON text

# run.json (and the session records in it): run id -> (change to its text, the reason shown)
RUN_CASES = {
    "deep": (lambda doc: json.dumps(doc)[:-1] + ', "extra": ' + DEEP + "}",
             "run.json is not readable JSON (nested more than 100 levels deep)"),
    "huge": (lambda doc: json.dumps({**doc, "padding": "x" * (65 << 20)}),
             "run.json is larger than 64 MB"),
    "types": (lambda doc: json.dumps({**doc, "tags": 7}), "run.json field 'tags' is 7"),
    "surrogate": (lambda doc: json.dumps(doc)[:-1] + ', "name": ' + SURROGATE + "}",
                  "run.json is not readable JSON (a lone surrogate escape)"),
    "fifo": (None, "run.json is not a regular file"),
    "session-time": (lambda doc: json.dumps({**doc, "sessions": [
        {**doc["sessions"][0], "start_time": 1765100000}]}),
        "run.json field 'sessions[0].start_time' is 1765100000, not a string"),
    "session-deep": (lambda doc: json.dumps(doc)[:-1] + ', "sessions": [' + DEEP + "]}",
                     "run.json is not readable JSON (nested more than 100 levels deep)"),
}
# manifest.json of v1 of an artifact of that name: (its text from the good one, the reason)
MANIFEST_CASES = {
    "m-deep": (lambda text: DEEP,
               "manifest.json is not readable JSON (nested more than 100 levels deep)"),
    "m-types": (lambda text: json.dumps({**json.loads(text), "files": "all"}),
                "its 'files' is not a list"),
    "m-fifo": (None, "manifest.json is not a regular file"),
}
# views.json of a project of that name: (its text, what the Runs page says of it)
VIEW_CASES = {
    "v-deep": ('{"views": [' + DEEP + "]}",
               "views.json is not readable JSON (nested more than 100 levels deep)"),
    "v-surrogate": ('{"views": [{"name": ' + SURROGATE + "}]}",
                    "views.json is not readable JSON (a lone surrogate escape)"),
    "v-fifo": (None, "views.json is not a regular file"),
    "v-types": ('{"views": [{"name": "v", "runs": "r"}]}', "view 'v' has runs 'r'"),
    "v-null": ('{"views": [{"name": "v", "runs": null, "columns": null, "query": null}]}', None),
}
# heartbeat of a run that run.json says is running: its text
HEARTBEAT_CASES = {"hb-deep": DEEP, "hb-types": "[1, 2]", "hb-surrogate": SURROGATE,
                   "hb-fifo": None, "hb-fields": '{"pid": "x", "seq": [], "interval": "1"}'}


def finished(root: Path, project: str, run_id: str) -> Path:
    with nb.init(project, dir=root, run_id=run_id, **QUIET) as run:
        run.add_scalar("loss", 1.0, step=0)
    return Path(run.path)


def put(path: Path, text: str | None) -> None:
    """Replace a file by text, or by a FIFO when text is None."""
    path.unlink()
    if text is None:
        os.mkfifo(path)
    else:
        path.write_text(text, encoding="utf-8")


def hostile_project(root: Path, tmp_path: Path) -> None:
    """Project 'p': a good run, one run per RUN_CASES and HEARTBEAT_CASES, and artifacts
    with a hostile v1 and a good v2; one project per VIEW_CASES with a good run."""
    finished(root, "p", "good")
    for run_id, (change, _) in RUN_CASES.items():
        folder = finished(root, "p", run_id)
        doc = json.loads((folder / layout.RUN_JSON).read_text())
        put(folder / layout.RUN_JSON, None if change is None else change(doc))
    for run_id, text in HEARTBEAT_CASES.items():
        folder = finished(root, "p", run_id)
        doc = json.loads((folder / layout.RUN_JSON).read_text())
        (folder / layout.RUN_JSON).write_text(json.dumps({**doc, "status": "running"}))
        (folder / layout.HEARTBEAT).write_text("{}")
        put(folder / layout.HEARTBEAT, text)
    data = tmp_path / "data.txt"
    data.write_text("rows")
    for name, (change, _) in MANIFEST_CASES.items():
        nb.add_artifact("p", name, data, dir=root)
        nb.add_artifact("p", name, data, dir=root)
        manifest = layout.project_dir(root, "p") / "artifacts" / name / "v1" / "manifest.json"
        put(manifest, None if change is None else change(manifest.read_text()))
    for project, (text, _) in VIEW_CASES.items():
        finished(root, project, "r")
        views = layout.project_dir(root, project) / "views.json"
        views.write_text("{}")
        put(views, text)


def cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The real `nuboard` command; a hang (a FIFO opened for reading) fails after 120 s."""
    return subprocess.run([sys.executable, "-m", "nuboard.cli.main", *args, "--dir", str(root)],
                          capture_output=True, text=True, env=child_env(), timeout=120,
                          stdin=subprocess.DEVNULL)


def test_no_hostile_file_takes_a_project_down(root, tmp_path):
    """Each odd file is skipped with its reason by `nuboard ls` and `nuboard artifact ls`
    (exit 0, the rest listed), and every page of the viewer answers without a 500: the Runs
    page lists the good runs and says why each other one is left out, a skipped run's page
    says the same reason (422), a skipped version's page is 404, and a views.json that cannot
    be used is named in a note while the runs are still listed."""
    hostile_project(root, tmp_path)

    ls = cli(root, "ls", "--json")
    assert ls.returncode == 0, ls.stderr
    listed = {(row["project"], row["id"]) for row in json.loads(ls.stdout)}
    assert listed == {("p", "good"), *(("p", run) for run in HEARTBEAT_CASES),
                      *((project, "r") for project in VIEW_CASES)}
    for run_id, (_, reason) in RUN_CASES.items():
        line = next((x for x in ls.stderr.splitlines() if f"/{run_id}'" in x), "")
        assert reason in line, (run_id, ls.stderr)
    for name, (_, reason) in MANIFEST_CASES.items():        # the sync names every version
        line = next((x for x in ls.stderr.splitlines() if f"artifacts/{name}/v1:" in x), "")
        assert reason in line, (name, ls.stderr)

    arts = cli(root, "artifact", "ls", "p", "--json")
    assert arts.returncode == 0, arts.stderr
    versions = {(row["name"], row["version"]) for row in json.loads(arts.stdout)}
    assert versions == {(name, 2) for name in MANIFEST_CASES}
    for name, (_, reason) in MANIFEST_CASES.items():
        if name != "m-fifo":          # a manifest that is no regular file: an add in progress
            line = next((x for x in arts.stderr.splitlines() if f"{name}:v1" in x), "")
            assert reason in line, (name, arts.stderr)

    with Viewer(root) as viewer:
        def get(path: str, status: int = 200):
            reply = viewer.get(path)
            assert reply.status == status, (path, reply.status, reply.text[:3000])
            return reply

        runs_page = get("/p/p").text
        assert "good" in runs_page
        for run_id, (_, reason) in RUN_CASES.items():
            assert reason.replace("'", "&#39;") in runs_page, run_id
            page = get(f"/api/p/p/.run/{run_id}", 422).text
            assert reason in json.loads(page)["error"], (run_id, page[:500])
            get(f"/p/p/.run/{run_id}", 422)
            get(f"/p/p/.run/{run_id}/files/")
        for run_id in ["good", *HEARTBEAT_CASES]:
            run = get(f"/api/p/p/.run/{run_id}").json()
            assert run["status"] in ("finished", "running", "lost"), run_id
            get(f"/p/p/.run/{run_id}")
        for path in ("/", "/artifacts", "/api/artifacts", "/p/p/.artifacts", "/p/p/.timeline",
                     "/api/p/p/.timeline", "/api/p/p/runs", "/api/projects"):
            get(path)
        for name in MANIFEST_CASES:
            get(f"/p/p/.artifact/{name}", 302)        # to its latest version, v2
            get(f"/p/p/.artifact/{name}/v2")
            get(f"/p/p/.artifact/{name}/v1", 404)
        for project, (_, note) in VIEW_CASES.items():
            page = get(f"/p/{project}").text
            assert "/.run/r" in page, project
            if note is not None:
                assert note.replace("'", "&#39;") in page, (project, page[:3000])
            get(f"/p/{project}?view=v", 200 if project == "v-null" else 404)   # 404: no such view
            get(f"/p/{project}/.timeline")


def test_the_index_and_the_run_page_read_run_json_alike(root):
    """A run.json over 64 MB was left out of the index yet opened on its run page: both now
    read it through one reader, which refuses it before reading it."""
    folder = finished(root, "p", "huge")
    doc = json.loads((folder / layout.RUN_JSON).read_text())
    (folder / layout.RUN_JSON).write_text(json.dumps({**doc, "padding": "x" * (65 << 20)}))
    with pytest.raises(documents.DocumentError, match="larger than 64 MB"):
        documents.read_document(folder / layout.RUN_JSON, documents.RUN_JSON)
    with Viewer(root) as viewer:
        assert "run.json is larger than 64 MB" in viewer.get("/p/p").text
        page = viewer.get("/api/p/p/.run/huge")
        assert page.status == 422 and "run.json is larger than 64 MB" in page.json()["error"]


def test_nesting_depth_counts_on_the_bytes():
    """The depth check on the text agrees with the parsed document's, strings and escapes
    included, and refuses 5,000 levels without parsing them."""
    for text, depth in [("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ("[{}, [[]]]", 3),
                        ('["[[[[", "\\"[[", "\\\\", {"]": "}"}]', 2),
                        ('"\\\\\\"[["', 0), ("[" * 100 + "]" * 100, 100)]:
        assert documents.nesting_depth(text.encode(), 100) == depth, text
        assert caps.depth_of(json.loads(text), 200) == depth, text
    assert documents.nesting_depth(DEEP.encode(), 100) == 101
    assert documents.nesting_depth(b"[" * 200, 100) == 0          # unbalanced: the parser says


def test_a_notes_edit_whose_lock_fails_is_a_message_not_a_500(root, monkeypatch):
    """flock of run.json's lock failing with an error other than 'no locks here' (EIO): the
    notes form answers 409 with one line saying the notes could not be saved, and run.json
    keeps its notes."""
    import fcntl

    folder = finished(root, "p", "r")
    real_flock = fcntl.flock

    def failing_flock(fd, op):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".run.json.lock"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", failing_flock)
    with Viewer(root) as viewer:
        reply = viewer.post("/p/p/.run/r/notes", {"notes": "lr 3e-4 was better"})
        assert reply.status == 409, (reply.status, reply.text[:2000])
        assert "could not be saved (Input/output error)" in reply.text
        assert json.loads((folder / layout.RUN_JSON).read_text()).get("notes") is None
