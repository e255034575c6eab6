"""A project may not be named like a folder NuBoard uses inside a project (runs, artifacts, ...).

`nb.init("llm/runs")` would write into project llm's own runs/ folder. Every way in that
takes a project (the API, the commands, the viewer's URLs) refuses such a name, writes
nothing, and says which segment is the problem.
"""
from __future__ import annotations

import os
import sqlite3
import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest
from helpers import QUIET, invoke_cli, loss_run
from helpers_http import AppViewer

import nuboard as nb
from nuboard.errors import InvalidNameError
from nuboard.files.layout import find_projects

BAD = ["llm/runs", "llm/artifacts", "llm/views.json", "llm/colours.json", "runs", "team/Runs/x", "llm/.nuboard"]


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("project", BAD)
def test_init_refuses_a_project_segment_named_like_a_project_folder_part(root, project):
    loss_run(root, "llm")
    before = files_under(root)
    with pytest.raises(InvalidNameError) as caught:
        nb.init(project, dir=root, **QUIET)
    assert repr(project) in str(caught.value)
    assert files_under(root) == before                  # nothing written, llm's runs untouched


def test_add_artifact_refuses_such_a_project(root, tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("x")
    for project in ("llm/runs", "llm/artifacts"):
        with pytest.raises(InvalidNameError, match="uses inside a project"):
            nb.add_artifact(project, "x", data, dir=root)
    assert not root.exists()


def test_commands_refuse_such_a_project_in_one_line(root, tmp_path):
    loss_run(root, "llm")
    (root / "llm" / "runs" / "x").mkdir()                # a folder where llm/runs/x would go
    data = tmp_path / "data.txt"
    data.write_text("x")
    before = files_under(root)
    for args in (["ls", "llm/runs"], ["reindex", "llm/runs"], ["rm", "x", "--project", "llm/runs", "--yes"],
                 ["artifact", "add", "llm/runs/x", str(data), "--copy", "--no-input"],
                 ["artifact", "ls", "llm/artifacts"]):
        out = invoke_cli(*args)
        assert out.exit_code == 1, (args, out.stdout, out.stderr)
        err = out.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "a name NuBoard uses inside a project folder" in err, err
    assert files_under(root) == before


def test_the_viewer_answers_400_for_such_a_project(root):
    loss_run(root, "llm")
    with AppViewer(root) as viewer:
        for path in ("/p/llm/runs", "/p/llm/artifacts", "/p/llm/views.json"):
            reply = viewer.get(path)
            assert reply.status == 400, (path, reply.status)
            assert "uses inside a project" in reply.text
        assert viewer.get("/p/llm").status == 200


def test_a_good_nested_project_still_works(root):
    with nb.init("team/runs-1", dir=root, **QUIET) as run:
        run.add_scalar("x", 1.0, step=0)
    assert Path(run.path) == root / "team" / "runs-1" / "runs" / run.id
    assert os.path.isdir(root / "team" / "runs-1" / "runs")


MISLEADING = ["llm ", " llm", "team/llm\u3000", "llm\u202e", "team/l\u2067lm", "\u200fllm"]


@pytest.mark.parametrize("project", MISLEADING)
def test_a_name_that_displays_as_another_is_refused_everywhere(root, project):
    """Spaces at the ends or a bidirectional-formatting character: refused by init, the commands
    and the viewer, as a project and as a run id, with the value shown escaped."""
    loss_run(root, "llm")
    before = files_under(root)
    rule = "bidirectional-formatting character" if project.strip() == project else "spaces at its ends"
    with pytest.raises(InvalidNameError, match=rule) as caught:
        nb.init(project, dir=root, **QUIET)
    assert repr(project) in str(caught.value)
    run_id = project.split("/")[-1]
    with pytest.raises(InvalidNameError, match=rule):
        nb.init("llm", run_id=run_id, dir=root, **QUIET)
    for args in (["ls", project], ["rm", run_id, "--project", "llm", "--yes"]):
        out = invoke_cli(*args)
        assert out.exit_code == 1, (args, out.stdout, out.stderr)
        err = out.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err and rule in err, err
        assert not any(ch in err for ch in "\u202e\u2067\u200f\u3000"), err   # shown escaped
    assert files_under(root) == before
    with AppViewer(root) as viewer:
        for path in (f"/p/{quote(project)}", f"/p/llm/.run/{quote(run_id)}"):
            reply = viewer.get(path)
            assert reply.status == 400 and rule in reply.text, (path, reply.status)


# -- one name, one project, whatever its Unicode spelling -----------------------------------------

NFC = unicodedata.normalize("NFC", "café/équipe")
NFD = unicodedata.normalize("NFD", NFC)


def test_nfc_and_nfd_spellings_are_one_project(root, tmp_path):
    """'café' typed on Linux (NFC) and on a Mac (NFD): one folder, one project, in NFC."""
    assert NFC != NFD
    data = tmp_path / "a.txt"
    data.write_text("a")
    with nb.init(NFD, dir=root, run_name="mac", **QUIET) as mac:
        mac.add_scalar("loss", 1.0, step=0)
    with nb.init(NFC, dir=root, run_name="linux", **QUIET) as linux:
        linux.add_scalar("loss", 1.0, step=0)
    assert os.listdir(root) == [NFC.split("/")[0]]
    assert os.listdir(root / NFC.split("/")[0]) == [NFC.split("/")[1]]
    assert mac.project == linux.project == NFC
    assert Path(mac.path).parent == Path(linux.path).parent == root / NFC / "runs"
    made = nb.add_artifact(NFD, "raw", data, dir=root, type="dataset")
    assert made.project == NFC and made.path.parent.parent.parent == root / NFC
    assert nb.get_artifact(f"{NFC}/raw:v1", dir=root).path == made.path
    assert sorted(r.name for r in nb.runs(NFD, dir=root)) == ["linux", "mac"]


def test_a_folder_in_another_spelling_stays_the_project(root):
    """A project folder spelled in NFD (by a NuBoard before names were NFC, or copied from a
    Mac) is that project: new runs go into it, no NFC twin is made, it is listed once."""
    loss_run(root, NFC, name="before")
    os.rename(root / NFC.split("/")[0], root / NFD.split("/")[0])
    os.rename(root / NFD.split("/")[0] / NFC.split("/")[1], root / NFD)
    with nb.init(NFC, dir=root, run_name="after", **QUIET) as run:
        run.add_scalar("loss", 1.0, step=0)
    assert os.listdir(root) == [NFD.split("/")[0]]
    assert Path(run.path).parent == root / NFD / "runs"
    assert find_projects(root) == [NFC]
    assert sorted(r.name for r in nb.runs(NFC, dir=root)) == ["after", "before"]


def test_a_folder_whose_nfc_twin_exists_is_not_a_project(root):
    """Both spellings on disk (two folders made before names were NFC): the NFC one is the
    project, whichever spelling is given; the other is left as it is and not listed."""
    loss_run(root, NFC, name="nfc")
    loss_run(root, "other", name="x")
    (root / NFD).mkdir(parents=True)
    os.rename(root / "other" / "runs", root / NFD / "runs")
    with nb.init(NFD, dir=root, run_name="given-nfd", **QUIET) as run:
        run.add_scalar("loss", 1.0, step=0)
    assert Path(run.path).parent == root / NFC / "runs"
    assert find_projects(root) == [NFC]                        # "other" has no runs/ now
    assert sorted(r.name for r in nb.runs(NFD, dir=root)) == ["given-nfd", "nfc"]
    assert len(os.listdir(root / NFD / "runs")) == 1           # the twin's run is left alone


def test_the_commands_the_viewer_and_the_tables_take_either_spelling(root):
    """One catalog row per project, whichever spelling a command or a URL gives."""
    loss_run(root, NFC, name="one")
    assert nb.runs(NFD, dir=root).project == NFC
    assert set(nb.history(NFD, dir=root).column("project").to_pylist()) == {NFC}
    for spelling in (NFD, NFC):
        out = invoke_cli("ls", spelling, "--dir", str(root))
        assert out.exit_code == 0 and "one" in out.stdout, out.stderr
    for catalog in root.rglob("catalog.sqlite"):
        with sqlite3.connect(catalog) as conn:
            assert conn.execute("select name from projects").fetchall() == [(NFC,)]
    with AppViewer(root) as viewer:
        for spelling in (NFD, NFC):
            reply = viewer.get(f"/api/p/{quote(spelling)}/runs")
            assert reply.status == 200 and "one" in reply.text, (spelling, reply.status)
