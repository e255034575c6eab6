"""The Runs table as a user shapes it, over real HTTP: rows grouped by a config key or the run's
group under one header row per value with its count and the mean of each numeric column (over
the whole group, not only the page shown), the column order and widths carried by the URL and a
saved view, and the values the table refuses (400, naming the value and the rule)."""
from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from helpers import write_run
from helpers_http import Viewer, visible_text

# name, opt, lr, run group, train/loss's last value
RUNS = [("a1", "adam", 0.1, "sweep-a", 0.5), ("a2", "adam", 0.3, "sweep-a", 0.3),
        ("s1", "sgd", 0.1, "sweep-b", 0.9), ("s2", "sgd", 0.2, "sweep-b", 0.7),
        ("s3", "sgd", 0.3, "sweep-b", 0.8), ("bare", None, None, None, 0.4)]
COLS = "name,config:opt,config:lr,scalar:train/loss"


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    root = tmp_path_factory.mktemp("shape") / "experiments"
    for name, opt, lr, group, loss in RUNS:
        config = {"opt": opt, "lr": lr} if opt else {"seed": 1}
        write_run(root, "llm", {"train/loss": [(0, 2.0), (1, loss)]}, run_name=name,
                  config=config, group=group)
    with Viewer(root) as v:
        yield v, root


def group_rows(page: str) -> list[list[str]]:
    """The group header rows of the Runs table, each as the texts of its cells."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[" ".join(html.unescape(visible_text(c)).split()) for c in
             re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r'<tr class="group-row[^"]*"[^>]*>(.*?)</tr>', body, re.S)]


def header_cols(page: str) -> list[str]:
    return re.findall(r'<th class="[^"]*" data-col="([^"]+)"', page)


def run_names(page: str) -> list[str]:
    return re.findall(r'class="run-link"[^>]*title="([^"]*)"', page)


def test_grouped_by_a_config_key_shows_each_groups_count_and_means(viewer):
    v, _ = viewer
    page = v.get(f"/p/llm?cols={quote(COLS)}&group=config:opt&sort=name&desc=0").text
    rows = group_rows(page)
    # pick cell, "opt = <value> N runs, means →" over name and opt, then lr and train/loss
    assert rows == [["▾", "opt = adam 2 runs, means →", "0.2", "0.4"],
                    ["▾", "opt = sgd 3 runs, means →", "0.2", "0.8"],
                    ["▾", "opt = (no value) 1 run, means →", "", "0.4"]]
    assert run_names(page) == ["a1", "a2", "s1", "s2", "s3", "bare"]   # by name in each group
    twin = v.get(f"/api/p/llm/runs?cols={quote(COLS)}&group=config:opt").json()
    assert twin["group"] == "config:opt"
    by_label = {g["label"]: g for g in twin["groups"]}
    assert [g["label"] for g in twin["groups"]] == ["adam", "sgd", "(no value)"]
    assert by_label["adam"]["count"] == 2
    assert by_label["adam"]["means"]["scalar:train/loss"] == pytest.approx(0.4)
    assert by_label["sgd"]["means"]["config:lr"] == pytest.approx(0.2)
    assert by_label["sgd"]["means"]["config:opt"] is None        # a text column: no mean
    assert by_label["(no value)"]["means"]["config:lr"] is None
    labels = [twin["groups"][r["group_index"]]["label"] for r in twin["runs"]]
    assert labels == ["adam", "adam", "sgd", "sgd", "sgd", "(no value)"]


def test_the_means_are_over_the_whole_group_not_the_page(viewer):
    v, _ = viewer
    url = f"/p/llm?cols={quote(COLS)}&group=config:opt&sort=name&desc=0&per_page=2&page=2"
    page = v.get(url).text
    assert run_names(page) == ["s1", "s2"]
    assert group_rows(page) == [["▾", "opt = sgd 3 runs, means →", "0.2", "0.8"]]
    twin = v.get("/api/" + url[1:].replace("p/llm?", "p/llm/runs?")).json()
    assert twin["pages"] == 3 and [r["name"] for r in twin["runs"]] == ["s1", "s2"]


def test_grouped_by_the_runs_group_and_within_a_filter(viewer):
    v, _ = viewer
    twin = v.get("/api/p/llm/runs?cols=name,scalar:train/loss&group=group&q=" + quote("train/loss<0.75")
                 ).json()
    groups = {g["label"]: (g["count"], g["means"]["scalar:train/loss"]) for g in twin["groups"]}
    assert groups == {"sweep-a": (2, pytest.approx(0.4)), "sweep-b": (1, pytest.approx(0.7)),
                      "(no value)": (1, pytest.approx(0.4))}
    page = v.get("/p/llm?cols=name,scalar:train/loss&group=group").text
    assert [r[1] for r in group_rows(page)] == ["group = sweep-a 2 runs, means →",
                                                "group = sweep-b 3 runs, means →",
                                                "group = (no value) 1 run, means →"]
    assert 'option value="config:opt" selected' not in page
    assert '<option value="group" selected>run group</option>' in page


def test_the_means_on_either_catalog_backend(root, backend):
    for name, opt, lr, group, loss in RUNS:
        config = {"opt": opt, "lr": lr} if opt else {"seed": 1}
        write_run(root, "llm", {"train/loss": [(0, 2.0), (1, loss)]}, run_name=name,
                  config=config, group=group)
    with Viewer(root) as v:
        by_opt = v.get(f"/api/p/llm/runs?cols={quote(COLS)}&group=config:opt").json()
        by_group = v.get("/api/p/llm/runs?cols=scalar:train/loss&group=group").json()
    assert [(g["label"], g["count"], round(g["means"]["scalar:train/loss"], 6))
            for g in by_opt["groups"]] == [("adam", 2, 0.4), ("sgd", 3, 0.8), ("(no value)", 1, 0.4)]
    assert [(g["label"], g["count"]) for g in by_group["groups"]] == [
        ("sweep-a", 2), ("sweep-b", 3), ("(no value)", 1)]


def test_the_url_carries_the_order_and_the_widths(viewer):
    v, _ = viewer
    cols = "scalar:train/loss,name,config:opt"
    page = v.get(f"/p/llm?cols={quote(cols)}&widths=" + quote("name:240,scalar:train/loss:90")
                 + "&group=config:opt").text
    assert header_cols(page) == ["scalar:train/loss", "name", "config:opt"]
    widths = re.search(r'data-widths="([^"]*)"', page).group(1)
    assert json.loads(html.unescape(widths)) == {"name": 240, "scalar:train/loss": 90}
    state = html.unescape(re.search(r'data-state-url="([^"]*)"', page).group(1))
    params = parse_qs(urlsplit(state).query)
    assert params["cols"] == [cols] and params["group"] == ["config:opt"]
    assert params["widths"] == ["name:240,scalar:train/loss:90"]
    sort_link = html.unescape(re.search(r'<a class="sort[^"]*"\s+href="([^"]*)"', page).group(1))
    assert parse_qs(urlsplit(sort_link).query)["widths"] == ["name:240,scalar:train/loss:90"]
    twin = v.get(f"/api/p/llm/runs?cols={quote(cols)}&widths=name:240").json()
    assert twin["columns"] == cols.split(",") and twin["widths"] == {"name": 240}


def test_a_saved_view_keeps_order_widths_and_grouping(viewer):
    v, root = viewer
    saved = v.post("/p/llm/.views", {"name": "by opt", "q": "", "cols": "config:lr,name",
                                     "sort": "name", "desc": "0", "runs": "",
                                     "widths": "name:200,config:lr:60", "group": "config:opt"})
    assert saved.status == 303
    kept = json.loads((root / "llm" / "views.json").read_text())["views"][-1]
    assert kept["columns"] == ["config:lr", "name"] and kept["group"] == "config:opt"
    assert kept["widths"] == {"name": 200, "config:lr": 60}
    page = v.get("/p/llm?view=" + quote("by opt")).text
    assert header_cols(page) == ["config:lr", "name"]
    assert json.loads(html.unescape(re.search(r'data-widths="([^"]*)"', page).group(1))) == \
        {"name": 200, "config:lr": 60}
    # lr, the first column, has means: the group's name goes on a row of its own above them
    assert group_rows(page)[:2] == [["▾ opt = adam 2 runs, means →"], ["", "0.2", ""]]
    twin = v.get("/api/p/llm/runs?view=" + quote("by opt")).json()
    assert twin["group"] == "config:opt" and twin["widths"] == {"name": 200, "config:lr": 60}
    # the URL wins over the view: no grouping, other widths
    twin = v.get("/api/p/llm/runs?view=" + quote("by opt") + "&group=&widths=name:50").json()
    assert twin["group"] == "" and twin["groups"] == [] and twin["widths"] == {"name": 50}


def test_a_view_saved_before_widths_and_groups_still_opens(viewer):
    v, root = viewer
    path = root / "llm" / "views.json"
    old = json.loads(path.read_text()) if path.exists() else {"format": 1, "views": []}
    old["views"] = [w for w in old["views"] if w["name"] != "old"] + [
        {"name": "old", "query": "", "columns": ["name", "config:lr"], "sort": "start",
         "desc": True, "runs": [], "x": "step"},
        {"name": "broken", "columns": ["name"], "widths": {"name": "wide"}}]
    path.write_text(json.dumps(old))
    page = v.get("/p/llm?view=old")
    assert page.status == 200 and header_cols(page.text) == ["name", "config:lr"]
    assert 'data-widths="{}"' in page.text and not group_rows(page.text)
    assert "the width &#39;wide&#39; of column &#39;name&#39; is not allowed" in page.text
    assert v.get("/p/llm?view=broken").status == 404


@pytest.mark.parametrize("query, message", [
    ("widths=name:wide", "the width 'wide' of column 'name' is not a number: give whole pixels "
                         "from 30 to 2000"),
    ("widths=name:5", "the width 5 of column 'name' is not allowed: give whole pixels from 30 "
                      "to 2000"),
    ("widths=name", "the width 'name' is not <column>:<pixels> (e.g. name:240)"),
    ("widths=shoe:100", "a width names an unknown column 'shoe'"),
    ("group=tags", "cannot group runs by 'tags': use group, host or config:<key>"),
])
def test_a_width_or_group_the_table_cannot_take_is_a_400(viewer, query, message):
    v, _ = viewer
    page = v.get("/p/llm?" + query)
    assert page.status == 400 and message in html.unescape(page.text)
    twin = v.get("/api/p/llm/runs?" + query)
    assert twin.status == 400 and message in twin.json()["error"]
    saved = v.post("/p/llm/.views", {"name": "bad", "cols": "name", "runs": "",
                                     **dict([query.split("=", 1)])})
    assert saved.status == 400 and message in html.unescape(saved.text)


def test_a_group_key_copied_from_the_charts_page_works_on_the_runs_page(viewer):
    """Charts write config.opt, the Runs table config:opt: each page takes the other's."""
    v, _ = viewer
    dotted = v.get("/api/p/llm/runs?group=config.opt").json()
    assert dotted["group"] == "config:opt"
    assert [g["label"] for g in dotted["groups"]] == ["adam", "sgd", "(no value)"]
