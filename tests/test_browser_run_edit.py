"""A run deleted and restored in a real browser (`nuboard up --edit-runs`): on the run page press
Delete, confirm; the run folder is in runs/.trash/ whole and the Runs page no longer lists it;
Restore on the Trash page brings it back, on its own page and in the Runs table again."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import loss_run
from helpers_browser import serve, shot, shutdown, watch_errors

pytestmark = pytest.mark.browser


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser-run-edit") / "experiments"
    ids = {name: loss_run(root, name=name) for name in ("victim", "bystander", "hide-me", "trash-me")}
    proc, url = serve(root, "--edit-runs")
    yield root, ids, url
    shutdown(proc)


def test_delete_from_the_run_page_and_restore_from_the_trash(page, viewer):
    root, ids, url = viewer
    victim = ids["victim"]
    folder = root / "llm" / "runs" / victim
    before = snapshot(folder)
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm/.run/{victim}")
    page.click("#delete-run")
    page.wait_for_selector("#confirm-delete")
    shot(page, "run-delete-confirm")
    page.click("#confirm-delete")
    page.wait_for_url("**/p/llm/.trash?moved=*")
    assert page.locator("#trash-moved").inner_text().endswith(f"{victim}.")
    assert not folder.exists()
    assert snapshot(root / "llm" / "runs" / ".trash" / victim) == before
    shot(page, "run-trash")

    page.goto(f"{url}/p/llm")
    assert ids["bystander"] in page.content() and victim not in page.content()

    page.goto(f"{url}/p/llm/.trash")
    page.locator(f"tr[data-run='{victim}'] button.restore-run").click()
    page.wait_for_url(f"**/p/llm/.run/{victim}")
    assert page.locator("h1").first.inner_text().strip().endswith("victim")
    assert snapshot(folder) == before
    page.goto(f"{url}/p/llm")
    assert victim in page.content()
    assert errors == []


def test_hide_and_delete_the_runs_table_selection(page, viewer):
    root, ids, url = viewer
    extra = ids
    errors = watch_errors(page)
    page.goto(f"{url}/p/llm")
    page.wait_for_selector(f'.run-select[value="{extra["hide-me"]}"]')
    assert page.is_disabled("#hide-selected")
    page.check(f'.run-select[value="{extra["hide-me"]}"]')
    page.click("#hide-selected")
    page.wait_for_load_state()
    page.wait_for_selector(f'.run-select[value="{ids["bystander"]}"]')
    assert extra["hide-me"] not in page.content()                 # gone from the table
    assert page.locator("#selection-count").inner_text() == "0 runs selected"   # cleared
    page.check(f'.run-select[value="{extra["trash-me"]}"]')
    page.click("#delete-selected")
    page.wait_for_selector("#confirm-delete")
    page.click("#confirm-delete")
    page.wait_for_url("**/p/llm/.trash?moved=*")
    assert (root / "llm" / "runs" / ".trash" / extra["trash-me"] / "run.json").is_file()
    assert errors == []
