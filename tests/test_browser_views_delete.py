"""The Runs page in a real browser: deleting a saved view asks first, and a refused question
deletes nothing; a project that holds artifacts and no runs shows them in the page body."""
from __future__ import annotations

import json
import urllib.request

import pytest
from helpers import write_run
from helpers_browser import serve, shot, shutdown

import nuboard as nb

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser-views") / "experiments"
    write_run(root, "llm", {"train/loss": [(0, 1.0), (1, 0.5)]}, run_name="first",
              config={"optimizer": {"lr": 1e-3}})
    data = root.parent / "corpus.txt"
    data.write_text("one line of a corpus\n")
    nb.add_artifact("datasets", "corpus", data, type="dataset", dir=root)
    proc, url = serve(root)
    yield url
    shutdown(proc)


def saved_views(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/p/llm/.views", timeout=30) as reply:
        return [v["name"] for v in json.load(reply)["views"]]


def test_deleting_a_saved_view_asks_first(page, viewer):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(viewer + "/p/llm?q=optimizer.lr%3E%3D1e-4")
    page.fill("#save-view input[name=name]", "big lr")
    page.click("#save-view button[type=submit]")
    page.wait_for_selector("ul.views a.view-link")
    assert saved_views(viewer) == ["big lr"]
    delete = page.get_by_role("button", name="delete view big lr")

    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    delete.click()
    page.wait_for_timeout(300)                  # a form that was sent would have navigated
    assert asked == ["Delete the saved view “big lr”? This cannot be undone."]
    assert saved_views(viewer) == ["big lr"]     # refused: nothing deleted
    page.reload()
    assert page.locator("ul.views a.view-link").all_inner_texts() == ["big lr"]

    page.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    with page.expect_navigation():
        delete.click()
    assert len(asked) == 2 and saved_views(viewer) == []
    assert page.locator("ul.views a.view-link").count() == 0
    assert "None yet." in page.inner_text("aside.side")
    assert errors == []


def test_a_project_without_runs_shows_its_artifacts(page, viewer):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(viewer + "/p/datasets")
    section = page.locator("section.project-artifacts")
    assert section.is_visible()
    assert section.locator("h2").inner_text() == "No runs in datasets: it holds 1 artifact"
    # no empty runs table or selection bar below it; a query still shows its (no) runs
    assert page.locator("table.runs").count() == 0 and page.locator(".selection-bar").count() == 0
    shot(page, "runs-datasets-artifacts")
    page.fill("#q", "status:finished")
    page.press("#q", "Enter")
    page.wait_for_selector("#runs-results p.count")
    assert page.locator("#runs-results p.count").inner_text() == "0 runs matching status:finished"
    page.goto(viewer + "/p/datasets")
    link = section.locator("a.artifact-link")
    assert link.inner_text() == "datasets/corpus"
    assert section.locator("tr[data-artifact='datasets/corpus'] .tag").inner_text() == "dataset"
    assert section.locator("#project-artifacts-link").get_attribute("href") == \
        "/p/datasets/.artifacts"
    link.click()
    page.wait_for_url("**/p/datasets/.artifact/corpus/v1")
    assert "corpus" in page.locator("h1").inner_text()

    page.goto(viewer + "/p/llm")                # a project with runs: no such section
    page.wait_for_selector("table.runs")
    assert page.locator("section.project-artifacts").count() == 0
    assert errors == []
