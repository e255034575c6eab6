"""The Artifacts pages in a real browser: lineage, a version of 25,000 files, the Timeline's
diamonds, and with --edit-artifacts the New version form, a version from a run's file, Unlink
and Restore; without the flag no edit control is shown and the edit routes are refused.

Debian's Chromium driven by Playwright against two `nuboard up` subprocesses over one demo
folder (one with --edit-artifacts, one without). Screenshots go to test-screenshots/2x-*.png.
The tests that change the folder (a new fineweb-edu version, a version from a run's file, an
unlink and restore) come last, so the lineage and the Timeline are checked on the demo as written.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import child_env, make_tree
from helpers_browser import SHOTS, serve, shot, shutdown, watch_errors
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

MANY = 25_000
TRAINING = ("lr1e-2-s1", "wide-d2048", "lr1e-4-s1", "lr3e-4-s1", "lr1e-3-s1", "lr3e-3-s1",
            "lr3e-4-s2", "lr1e-3-s2", "lr6e-4-long", "lr1e-3-s1-halflr", "ddp-lr1e-3-bs128",
            "ddp-lr2e-3-bs128")


def write_many(folder: Path, count: int) -> list[str]:
    """count tiny files in one folder (os.open/os.write: about a second for 25,000)."""
    folder.mkdir(parents=True)
    names = [f"shard-{i:05d}.txt" for i in range(count)]
    for i, name in enumerate(names):
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"%d\n" % i)
        finally:
            os.close(fd)
    return names


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The demo plus a version of 25,000 files, a folder for a new fineweb-edu version and a
    run's eval.json, served twice: with --edit-artifacts (`edit`) and without (`plain`)."""
    import nuboard as nb
    from nuboard.demo import write_demo
    base = tmp_path_factory.mktemp("browser-artifacts")
    root = base / "experiments"
    runs = write_demo(root, progress=lambda _line: None).runs
    many = write_many(base / "many-files", MANY)
    nb.add_artifact("datasets", "many-files", base / "many-files", reference=True, dir=root,
                    type="dataset", description="25,000 tiny files")
    make_tree(root / ".demo-data" / "fineweb-edu" / "2026-11",
              {"index.json": b'{"shards": 1}\n', "train/shard-000.bin": b"\x00" * 4096})
    run_dir = root / "llm-pretrain" / "runs" / runs["llm-pretrain/lr1e-3-s1"]
    (run_dir / "files" / "eval.json").write_text('{"mmlu": 0.312, "hellaswag": 0.405}\n')
    edit_proc, edit = serve(root, "--edit-artifacts")
    try:
        plain_proc, plain = serve(root)
    except BaseException:
        shutdown(edit_proc)
        raise
    yield SimpleNamespace(root=root, runs=runs, many=many, edit=edit, plain=plain,
                          run_dir=run_dir)
    shutdown(plain_proc)
    shutdown(edit_proc)


def view_shot(page, name: str) -> None:
    """The visible part only, for pages thousands of rows long."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def node(page, key: str):
    return page.locator(f'#lineage svg [data-key="{key}"]')


def left(locator) -> float:
    box = locator.bounding_box()
    assert box is not None, "the node is not drawn"
    return box["x"]


def run_key(site, name: str, project: str = "llm-pretrain") -> str:
    return f"run:{project}/{site.runs[f'{project}/{name}']}"


def token_of(page) -> str:
    return json.loads(page.locator("body").get_attribute("hx-headers"))["X-CSRF-Token"]


def listing(folder: Path) -> dict:
    """Every file and folder under folder with its size and modification time."""
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        out[path.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns, path.is_dir())
    return out


# -- reading (the demo as written) ---------------------------------------------------------------

def test_lineage_of_fineweb_v2_moves_to_the_model_and_opens_runs(page, site):
    errors = watch_errors(page)
    page.goto(site.edit + "/p/datasets/.artifact/fineweb-edu/v2")
    expect(page.locator("h1")).to_contain_text("datasets/fineweb-edu:v2")
    centre = node(page, "datasets/fineweb-edu:v2")
    expect(centre).to_have_class(re.compile(r"\bcentre\b"))
    assert centre.get_attribute("data-column") == "0"

    prepare = node(page, run_key(site, "prepare-data"))
    expect(prepare).to_contain_text("prepare-data")
    assert prepare.get_attribute("data-column") == "-1"
    columns = page.eval_on_selector_all(
        "#lineage svg [data-key]", "els => els.map(e => [e.dataset.key, e.dataset.column])")
    in_column = {}
    for key, column in columns:
        in_column.setdefault(int(column), set()).add(key)
    assert in_column[1] == {run_key(site, name) for name in TRAINING}
    assert in_column[2] == {"llm-pretrain/model:v1"}
    assert in_column[3] == {run_key(site, "eval-mmlu")}
    assert min(in_column) == -1                     # nothing upstream of prepare-data
    model = node(page, "llm-pretrain/model:v1")
    evaluation = node(page, run_key(site, "eval-mmlu"))
    expect(model).to_contain_text("model:v1")
    expect(evaluation).to_contain_text("eval-mmlu")
    # what the eye sees: upstream on the left, downstream on the right
    trained = [left(node(page, run_key(site, name))) for name in TRAINING]
    assert left(prepare) < left(centre) < min(trained)
    assert max(trained) < left(model) < left(evaluation)
    for name in ("lr1e-3-s1", "wide-d2048", "ddp-lr2e-3-bs128"):
        expect(node(page, run_key(site, name))).to_contain_text(name)
    shot(page, "2x-01-lineage-fineweb-v2")

    model.click()
    page.wait_for_url(re.compile(r"/p/llm-pretrain/\.artifact/model/v1$"))
    expect(page.locator("h1")).to_contain_text("llm-pretrain/model:v1")
    centre = page.locator("#lineage svg .centre")
    expect(centre).to_have_count(1)
    assert centre.get_attribute("data-key") == "llm-pretrain/model:v1"
    assert centre.get_attribute("data-column") == "0"
    producer = node(page, run_key(site, "lr1e-3-s1"))
    assert producer.get_attribute("data-column") == "-1"
    assert node(page, "datasets/fineweb-edu:v2").get_attribute("data-column") == "-2"
    assert node(page, run_key(site, "prepare-data")).get_attribute("data-column") == "-3"
    assert node(page, run_key(site, "eval-mmlu")).get_attribute("data-column") == "1"
    assert left(node(page, run_key(site, "prepare-data"))) < left(producer) < left(centre)
    assert left(centre) < left(node(page, run_key(site, "eval-mmlu")))
    shot(page, "2x-02-lineage-model-v1")

    node(page, run_key(site, "eval-mmlu")).click()
    page.wait_for_url(re.compile(r"/p/llm-pretrain/\.run/" + site.runs["llm-pretrain/eval-mmlu"]))
    expect(page.locator("h1")).to_contain_text("eval-mmlu")
    expect(page.locator("body")).to_contain_text("llm-pretrain/model:v1")
    shot(page, "2x-03-lineage-run-opened")
    assert not errors, errors


def test_files_of_a_version_of_25000_files_show_more_and_filter(page, site):
    errors = watch_errors(page)
    page.goto(site.edit + "/p/datasets/.artifact/many-files/v1")
    rows = page.locator("#files-table tr.file-row")
    expect(rows).to_have_count(1000)
    expect(rows.first).to_contain_text(site.many[0])
    expect(rows.last).to_contain_text(site.many[999])
    expect(page.locator("#logged-outside")).to_have_text("Logged outside a run")
    expect(page.locator("dl.facts")).to_contain_text("25000")
    expect(page.locator("#files-more")).to_have_text("Show more (1,000 of 25,000 files shown)")
    view_shot(page, "2x-04-files-first-1000")

    page.click("button.show-more")
    expect(rows).to_have_count(2000)
    expect(rows.nth(1000)).to_contain_text(site.many[1000])
    expect(rows.last).to_contain_text(site.many[1999])
    expect(page.locator("#files-more")).to_have_text("Show more (2,000 of 25,000 files shown)")
    page.locator("#files-more").scroll_into_view_if_needed()
    view_shot(page, "2x-05-files-show-more")

    needle = "shard-2000"                          # only files far past the first pages
    wanted = [n for n in site.many if needle in n]
    assert 1 < len(wanted) < 1000
    page.locator("#files-filter").scroll_into_view_if_needed()
    page.fill("#files-filter", needle)
    expect(rows).to_have_count(len(wanted))
    assert [t.strip() for t in rows.locator("td:first-child").all_inner_texts()] == wanted
    expect(page.locator("button.show-more")).to_have_count(0)
    shot(page, "2x-06-files-filtered")

    page.fill("#files-filter", "no-such-part")
    expect(page.locator("#files-table")).to_contain_text("No file path holds that text.")
    page.fill("#files-filter", "")
    expect(rows).to_have_count(1000)
    expect(rows.first).to_contain_text(site.many[0])
    expect(page.locator("button.show-more")).to_have_count(1)
    assert not errors, errors


LABELS = "[...document.querySelectorAll('svg.tl-axis text.tl-tick-label')].map(t => t.textContent)"


def tick_labels(page) -> list[str]:
    return page.locator("svg.tl-axis text.tl-tick-label").all_text_contents()


def test_timeline_diamonds_tooltips_zoom_and_reset(page, site):
    errors = watch_errors(page)
    page.goto(site.edit + "/p/llm-pretrain/.timeline")
    dataset = page.locator('a.tl-version[href="/p/datasets/.artifact/fineweb-edu/v2"]')
    model = page.locator('a.tl-version[href="/p/llm-pretrain/.artifact/model/v1"]')
    expect(dataset).to_have_count(1)
    expect(model).to_have_count(1)
    for diamond, maker in ((dataset, "prepare-data"), (model, "lr1e-3-s1")):
        row = diamond.get_attribute("data-run")
        assert page.locator(f'a.tl-label[data-run="{row}"]').text_content() == maker
    expect(page.locator("a.tl-version")).to_have_count(2)

    tip = page.locator(".tl-tip")
    dataset.hover()
    expect(tip).to_be_visible()
    expect(tip.locator(".tl-tip-head")).to_have_text("datasets/fineweb-edu:v2")
    expect(tip).to_contain_text("made by: prepare-data")
    expect(tip).to_contain_text("type: dataset")
    shot(page, "2x-07-timeline-diamond-tip")
    model.hover()
    expect(tip.locator(".tl-tip-head")).to_have_text("llm-pretrain/model:v1")
    expect(tip).to_contain_text("made by: lr1e-3-s1")

    before = tick_labels(page)
    assert before
    expect(page.locator("#tl-reset")).to_be_disabled()
    body = page.locator("svg.tl-body").bounding_box()
    page.mouse.move(body["x"] + 230 + (body["width"] - 230) * 0.4, body["y"] + 12)
    page.mouse.wheel(0, -800)
    page.wait_for_function(f"before => {LABELS}.join('|') !== before.join('|')", arg=before)
    zoomed = tick_labels(page)
    assert zoomed and zoomed != before
    expect(page.locator("#tl-reset")).to_be_enabled()
    shot(page, "2x-08-timeline-zoomed")
    page.click("#tl-reset")
    page.wait_for_function(f"before => {LABELS}.join('|') === before.join('|')", arg=before)
    expect(page.locator("#tl-reset")).to_be_disabled()

    dataset.click()
    page.wait_for_url(re.compile(r"/p/datasets/\.artifact/fineweb-edu/v2$"))
    expect(page.locator("h1")).to_contain_text("datasets/fineweb-edu:v2")
    assert not errors, errors


def test_without_edit_artifacts_no_edit_control_is_shown(page, site):
    errors = watch_errors(page)
    files_tab = f"/p/llm-pretrain/.run/{site.runs['llm-pretrain/lr1e-3-s1']}/files/files/"
    # the edit viewer shows them, so their absence below means something
    page.goto(site.edit + "/p/datasets/.artifacts")
    expect(page.locator("#new-version")).to_be_visible()
    page.goto(site.edit + "/p/datasets/.artifact/fineweb-edu/v1")
    expect(page.locator("#unlink-version")).to_be_visible()
    page.goto(site.edit + files_tab)
    expect(page.locator("a.new-artifact").first).to_be_visible()

    page.goto(site.plain + "/artifacts")
    expect(page.locator('tr[data-artifact="llm-pretrain/model"]')).to_be_visible()
    expect(page.locator("#new-version")).to_have_count(0)
    page.goto(site.plain + "/p/datasets/.artifacts")
    expect(page.locator('tr[data-artifact="datasets/fineweb-edu"]')).to_be_visible()
    expect(page.locator("#new-version")).to_have_count(0)
    expect(page.get_by_text("New version")).to_have_count(0)
    expect(page.get_by_text("editing artifacts")).to_have_count(0)
    shot(page, "2x-09-plain-list")
    page.goto(site.plain + "/p/datasets/.artifact/fineweb-edu/v1")
    expect(page.locator("h1")).to_contain_text("datasets/fineweb-edu:v1")
    expect(page.locator(".edit-actions")).to_have_count(0)
    for text in ("New version", "Unlink version", "Unlink all versions", "Restore"):
        expect(page.get_by_text(text, exact=True)).to_have_count(0)
    shot(page, "2x-10-plain-version")
    page.goto(site.plain + files_tab)
    expect(page.locator("table.file-list")).to_contain_text("eval.json")
    expect(page.locator("a.download").first).to_be_visible()
    expect(page.locator("a.new-artifact")).to_have_count(0)
    expect(page.get_by_text("New artifact version")).to_have_count(0)
    shot(page, "2x-11-plain-run-files")
    assert not errors, errors


def test_posts_without_the_token_or_from_another_site_are_refused(page, site):
    errors = watch_errors(page)
    version = "/p/datasets/.artifact/fineweb-edu/v1"
    page.goto(site.edit + version)
    token = token_of(page)
    unlink = site.edit + version + "/unlink"
    no_token = page.request.post(unlink, form={"csrf_token": ""}, headers={"Origin": site.edit})
    assert no_token.status == 403
    assert "security token is missing or stale" in no_token.text()
    foreign = page.request.post(unlink, form={"csrf_token": token},
                                headers={"Origin": "http://evil.example"})
    assert foreign.status == 403
    assert "evil.example" in foreign.text()
    page.reload()
    expect(page.locator("h1")).not_to_contain_text("unlinked")
    expect(page.locator("#unlink-version")).to_be_visible()
    assert (site.root / "datasets" / "artifacts" / "fineweb-edu" / "v1" / "manifest.json").is_file()
    page.goto(site.edit + "/p/datasets/.artifacts?unlinked=1")
    expect(page.locator("table.artifact-list")).to_contain_text("No unlinked versions.")
    assert not errors, errors


def test_without_edit_artifacts_the_edit_routes_do_not_exist(page, site):
    """docs/viewer.md: without the flag the edit routes do not exist (404), with a valid
    token and Origin as much as without."""
    version = "/p/datasets/.artifact/fineweb-edu/v1"
    page.goto(site.plain + version)
    token = token_of(page)
    headers = {"Origin": site.plain, "X-CSRF-Token": token}
    for path in (version + "/unlink", version + "/restore", "/p/datasets/.artifact/fineweb-edu/unlink-all",
                 "/p/datasets/.artifacts/check", "/p/datasets/.artifacts/add",
                 "/api/p/datasets/.artifacts/add"):
        answer = page.request.post(site.plain + path, form={"csrf_token": token}, headers=headers)
        assert answer.status == 404, f"POST {path}: {answer.status}"
    for path in ("/p/datasets/.artifacts/new", version + "/unlink"):
        assert page.goto(site.plain + path).status == 404, f"GET {path}"
    page.goto(site.plain + version)
    expect(page.locator("h1")).not_to_contain_text("unlinked")
    assert (site.root / "datasets" / "artifacts" / "fineweb-edu" / "v1" / "manifest.json").is_file()


# -- editing (last: they add versions and unlink one) --------------------------------------------

def fill_version_form(page, *, name: str | None, path: str, type: str, description: str) -> None:
    if name is not None:
        page.fill("#f-name", name)
    page.fill("#f-path", path)
    page.select_option("#f-type", type)
    page.fill("#f-description", description)


def beside(page, field: str):
    """The lines beside a field of the New version form."""
    return page.locator(f"#msg-{field} .msg")


def test_new_version_form_end_to_end(page, site):
    errors = watch_errors(page)

    # the files of v2 again: the form says so and offers Add anyway
    page.goto(site.edit + "/p/datasets/.artifact/fineweb-edu/v2")
    page.get_by_role("link", name="New version").click()
    page.wait_for_url(re.compile(r"/p/datasets/\.artifacts/new\?name=fineweb-edu$"))
    assert page.input_value("#f-name") == "fineweb-edu"
    fill_version_form(page, name=None, path=".demo-data/fineweb-edu/2026-10", type="dataset",
                      description="the October snapshot once more")
    expect(beside(page, "path").and_(page.locator(".warning"))).to_have_text(
        "⚠ the files are the same as fineweb-edu:v2")
    page.click("#review-button")
    expect(page.locator("#review")).to_contain_text("(new version v3)")
    expect(page.locator("#same-as-latest")).to_contain_text("the same as fineweb-edu:v2")
    expect(page.locator("#add-anyway")).to_be_visible()
    expect(page.locator("#add-version")).to_have_count(0)
    shot(page, "2x-12-new-version-same-as-latest")

    # a new snapshot, with a typo first
    page.goto(site.edit + "/p/datasets/.artifacts")
    page.click("#new-version")
    page.wait_for_url(re.compile(r"/p/datasets/\.artifacts/new$"))
    page.select_option("#f-project", "datasets")
    expect(page.locator("#path-base")).to_have_text(
        f"a relative path is relative to {site.root}, the served folder")
    page.fill("#f-name", "fineweb-edu")
    expect(beside(page, "name"),   # before the path and description are given
           "the name is checked as it is typed").to_have_text("✓ name: will be fineweb-edu:v3")
    page.locator("#f-name").press("End")                   # typing on, the name still focused
    page.wait_for_timeout(600)                              # past the check's 400 ms delay
    for field in ("path", "type", "description", "meta-0"):
        expect(beside(page, field), f"{field} is not flagged while the name is typed") \
            .to_have_count(0)
    expect(page.locator("#checks")).to_have_text("")
    page.locator("#f-path").focus()
    page.locator("#f-path").press("Tab")                   # left empty
    expect(beside(page, "path")).to_have_text("✗ path: give the path of a file or folder")
    expect(beside(page, "path")).to_have_class("msg bad")
    expect(beside(page, "description"), "the fields after it are untouched").to_have_count(0)
    expect(page.locator("#checks")).to_have_text("✗ 1 field to fix: path")
    shot(page, "2x-13a-new-version-path-left-empty")
    page.fill("#f-path", ".demo-data/fineweb-edu/2026-1l")
    bad = beside(page, "path")
    expect(bad).to_have_class("msg bad")
    expect(bad).to_contain_text("✗ path:")
    expect(bad).to_contain_text("does not exist")
    shot(page, "2x-13-new-version-typo")
    page.fill("#f-path", ".demo-data/fineweb-edu/2026-11")
    good = beside(page, "path")
    expect(good).to_have_class("msg good")
    expect(good).to_contain_text("✓ path: 2 files, ")
    expect(good).to_contain_text(str(site.root / ".demo-data" / "fineweb-edu" / "2026-11"))
    page.select_option("#f-type", "dataset")
    page.fill("#f-description", "FineWeb-Edu, Nov 2026 snapshot")
    page.fill('input[name="meta_key_0"]', "tokens")
    page.select_option('select[name="meta_kind_0"]', "text")
    page.fill('input[name="meta_value_0"]', "13B")
    page.fill('input[name="meta_key_1"]', "rows")
    page.select_option('select[name="meta_kind_1"]', "number")
    page.fill('input[name="meta_value_1"]', "1300000")
    expect(beside(page, "description")).to_have_count(0)            # a description says nothing
    expect(page.locator("#version-form .msg.bad")).to_have_count(0)
    expect(page.locator("#version-form .msg.warning")).to_have_count(0)
    expect(page.locator("#checks")).to_have_text("")
    page.click("#review-button")
    review = page.locator("#review")
    expect(review).to_contain_text("datasets/fineweb-edu (new version v3)")
    expect(review).to_contain_text("2 files")
    expect(review).to_contain_text('tokens="13B"')
    expect(review).to_contain_text("rows=1300000")
    shot(page, "2x-14-new-version-review")
    page.click("#add-version")
    page.wait_for_url(re.compile(r"/p/datasets/\.artifact/fineweb-edu/v3\?added=1$"))
    expect(page.locator("h1")).to_contain_text("datasets/fineweb-edu:v3")
    added = page.locator("#version-added")
    expect(added).to_contain_text("✓ Added fineweb-edu v3 to datasets")
    expect(added.get_by_role("link", name="fineweb-edu v3")).to_have_attribute(
        "href", "/p/datasets/.artifact/fineweb-edu/v3")
    metadata = page.locator("table.config")
    expect(metadata.locator("tr", has_text="tokens")).to_contain_text("13B")
    expect(metadata.locator("tr", has_text="rows")).to_contain_text("1300000")
    expect(page.locator("#files-table tr.file-row")).to_have_count(2)
    shot(page, "2x-15-new-version-added")

    page.goto(site.edit + "/p/datasets/.artifacts")
    first = page.locator("table.artifact-list tbody tr").first
    expect(first).to_have_attribute("data-artifact", "datasets/fineweb-edu")
    expect(first).to_contain_text("v3")
    shot(page, "2x-16-list-newest-first")

    done = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "artifact", "ls", "datasets",
                           "--json", "--dir", str(site.root)], env=child_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    listed = {v["spec"]: v for v in json.loads(done.stdout)}
    v3 = listed["datasets/fineweb-edu:v3"]
    assert v3["storage"] == "reference" and v3["files"] == 2 and v3["type"] == "dataset"
    assert v3["metadata"] == {"tokens": "13B", "rows": 1300000}
    assert v3["description"] == "FineWeb-Edu, Nov 2026 snapshot"
    assert not errors, errors


def test_a_metadata_row_is_flagged_beside_it_once_the_row_is_left(page, site):
    errors = watch_errors(page)
    page.goto(site.edit + "/p/datasets/.artifacts/new?name=fineweb-edu")
    page.click("#add-meta-row")                              # a 7th row, made in the page
    rows = page.locator("#meta-table tr.meta-row")
    expect(rows).to_have_count(7)
    expect(page.locator('input[name="meta_value_6"]')).to_have_attribute(
        "aria-describedby", "msg-meta-6")
    page.fill('input[name="meta_key_6"]', "rows")
    page.select_option('select[name="meta_kind_6"]', "number")
    page.fill('input[name="meta_value_6"]', "many")
    page.wait_for_timeout(600)                              # past the check's 400 ms delay
    expect(rows.nth(6).locator(".msg"), "not flagged while still in the row").to_have_count(0)
    page.locator('input[name="meta_value_6"]').press("Tab")
    expect(rows.nth(6).locator(".msg.bad")).to_have_text("✗ 'many' is not a number, as rows needs")
    expect(page.locator("#version-form .msg.bad"), "only the row left").to_have_count(1)
    expect(page.locator("#checks")).to_have_text("✗ 1 field to fix: metadata row 7")
    shot(page, "2x-13b-new-version-metadata-row")
    page.click("#review-button")                            # a submit flags every field
    page.wait_for_url(re.compile(r"/p/datasets/\.artifacts/review$"))
    for field in ("path", "type", "description"):
        expect(page.locator(f"#msg-{field} .msg.bad")).to_have_count(1)
    expect(page.locator("#msg-meta-0 .msg.bad")).to_have_text(
        "✗ 'many' is not a number, as rows needs")
    expect(page.locator("#msg-name .msg.good")).to_contain_text("✓ name: will be fineweb-edu:v")
    shot(page, "2x-13c-new-version-submitted-with-problems")
    assert not errors, errors


def test_new_version_from_a_runs_file_leaves_the_run_unchanged(page, site):
    errors = watch_errors(page)
    run_id = site.runs["llm-pretrain/lr1e-3-s1"]
    before = listing(site.run_dir)
    page.goto(site.edit + f"/p/llm-pretrain/.run/{run_id}/files/files/")
    page.get_by_role("link", name="New artifact version from eval.json").click()
    page.wait_for_url(re.compile(r"/p/llm-pretrain/\.artifacts/new\?"))
    project = page.locator('input[name="project"]')
    expect(project).to_have_value("llm-pretrain")
    expect(project).to_have_attribute("readonly", "")
    expect(page.locator("#f-path")).to_have_value("files/eval.json")
    expect(page.locator('input[name="store"][value="copy"]')).to_be_checked()
    expect(page.locator("h1")).to_contain_text(run_id)
    fill_version_form(page, name="best-eval", path="files/eval.json", type="report",
                      description="MMLU and HellaSwag of lr1e-3-s1")
    expect(page.locator("#path-base")).to_have_text(
        f"inside the run: relative to its folder {site.run_dir}")
    expect(beside(page, "path")).to_contain_text("✓ path: 1 file")
    expect(page.locator("#version-form .msg.bad")).to_have_count(0)
    shot(page, "2x-17-run-file-form")
    page.click("#review-button")
    review = page.locator("#review")
    expect(review).to_contain_text("llm-pretrain/best-eval (new version v1)")
    expect(review).to_contain_text("copy")
    page.click("#add-version")
    page.wait_for_url(re.compile(r"/p/llm-pretrain/\.artifact/best-eval/v1\?added=1$"))
    expect(page.locator("#version-added")).to_contain_text("✓ Added best-eval v1 to llm-pretrain")
    expect(page.locator("h1")).to_contain_text("llm-pretrain/best-eval:v1")
    produced = page.locator("section.card", has=page.locator("h2", has_text="Produced by"))
    expect(produced.locator("a.run-link").first).to_have_text("lr1e-3-s1")
    expect(page.locator("dl.facts")).to_contain_text("a copy")
    expect(page.locator("#files-table tr.file-row")).to_contain_text("eval.json")
    expect(node(page, run_key(site, "lr1e-3-s1"))).to_be_visible()
    shot(page, "2x-18-run-file-version")
    assert listing(site.run_dir) == before
    assert not errors, errors


def test_unlink_show_unlinked_and_restore(page, site):
    errors = watch_errors(page)
    vit = [run_id for key, run_id in site.runs.items() if key.startswith("vit-ablations/")]
    assert vit
    page.goto(site.edit + "/p/datasets/.artifact/imagenet-100/v1")
    page.click("#unlink-version")
    page.wait_for_url(re.compile(r"/p/datasets/\.artifact/imagenet-100/v1/unlink$"))
    expect(page.locator("h1")).to_contain_text("Unlink datasets/imagenet-100:v1?")
    users = page.locator("#unlink-users")
    expect(users).to_contain_text(f"This version is used by {len(vit)} runs of vit-ablations: ")
    expect(users.locator("a.run-link")).to_have_count(len(vit))
    shot(page, "2x-19-unlink-confirm")
    page.click("#confirm-unlink")
    page.wait_for_url(re.compile(r"/p/datasets/\.artifacts\?unlinked=1$"))
    row = page.locator('tr[data-artifact="datasets/imagenet-100"]')
    expect(row).to_contain_text("v1")
    expect(row).to_contain_text("(unlinked)")
    shot(page, "2x-20-unlinked-list")
    page.goto(site.edit + "/p/datasets/.artifacts")
    expect(page.locator('tr[data-artifact="datasets/fineweb-edu"]')).to_be_visible()
    expect(page.locator('tr[data-artifact="datasets/imagenet-100"]')).to_have_count(0)

    for run_id in vit:
        page.goto(site.edit + f"/p/vit-ablations/.run/{run_id}")
        expect(page.locator("p.artifact", has_text="datasets/imagenet-100:v1")).to_have_text(
            "datasets/imagenet-100:v1 (unlinked)")
    shot(page, "2x-21-run-input-unlinked")

    page.goto(site.edit + "/p/datasets/.artifacts?unlinked=1")
    page.locator('tr[data-artifact="datasets/imagenet-100"] a', has_text="v1").first.click()
    page.wait_for_url(re.compile(r"/p/datasets/\.artifact/imagenet-100/v1$"))
    expect(page.locator("h1")).to_contain_text("(unlinked)")
    expect(page.locator("#unlink-version")).to_have_count(0)
    shot(page, "2x-22-unlinked-version")
    page.click("#restore")
    page.wait_for_url(re.compile(r"/p/datasets/\.artifact/imagenet-100/v1$"))
    expect(page.locator("h1")).not_to_contain_text("unlinked")
    expect(page.locator("#unlink-version")).to_be_visible()
    page.goto(site.edit + "/p/datasets/.artifacts")
    expect(page.locator('tr[data-artifact="datasets/imagenet-100"]')).to_be_visible()
    shot(page, "2x-23-restored-list")
    page.goto(site.edit + f"/p/vit-ablations/.run/{vit[0]}")
    expect(page.locator("p.artifact", has_text="datasets/imagenet-100:v1")).to_have_text(
        "datasets/imagenet-100:v1")
    assert not errors, errors
