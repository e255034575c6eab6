"""The Runs table's columns over real HTTP: results by default (the config keys that differ, the
scalars most runs share), the run's colour swatch, each number in its one text (number_text), and
the chosen columns and saved views as before; on the demo and on runs written by the API."""
from __future__ import annotations

import html
import json
import re
from urllib.parse import quote

import pytest
from helpers import QUIET, loss_run, write_run
from helpers_http import Viewer, visible_text

import nuboard as nb

NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]\d+)?$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo, written once for the module."""
    from nuboard.demo import write_demo
    root = tmp_path_factory.mktemp("columns") / "experiments"
    written = write_demo(root, progress=lambda _line: None)
    return {"root": root, "runs": written.runs}


def header_titles(page: str) -> list[str]:
    """The Runs table's column headers as the page shows them."""
    head = page.split("<thead>", 1)[1].split("</thead>", 1)[0]
    return [html.unescape(visible_text(th).strip())
            for th in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]


def column_cells(page: str, title: str) -> list[str]:
    """The text of every body cell under the header `title`, top to bottom."""
    index = header_titles(page).index(title)
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = []
    for row in re.findall(r"<tr data-run=[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        out.append(html.unescape(visible_text(cells[index]).strip()))
    return out


def swatches(page: str) -> dict[str, str]:
    """Each row's run id and the colour of its swatch."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return {run_id: colour for run_id, colour in re.findall(
        r'<tr data-run="([^"]+)">.*?<span class="swatch" style="background: (#[0-9a-f]{6})"',
        body, re.S)}


def test_the_demo_shows_results_without_any_choice(demo):
    with Viewer(demo["root"]) as v:
        data = v.get("/api/p/llm-pretrain/runs").json()
        page = v.get("/p/llm-pretrain").text
    columns = data["columns"]
    assert data["chosen"] is False
    assert columns[:2] == ["status", "name"] and columns[-2:] == ["start", "duration"]
    config = [c for c in columns if c.startswith("config:")]
    scalars = [c for c in columns if c.startswith("scalar:")]
    assert "config:optimizer.lr" in config and len(config) <= 6
    assert "config:model.arch" not in config          # the same in every run: nothing to compare
    assert any(c.startswith("scalar:train/") for c in scalars) and len(scalars) <= 4
    assert not [c for c in scalars if c.startswith(("scalar:timing/", "scalar:system/"))]
    titles = header_titles(page)
    assert "optimizer.lr" in titles and "train/loss" in titles
    assert not [t for t in titles if t.startswith(("timing/", "system/"))]
    by_name = {r["name"]: r for r in data["runs"]}
    assert by_name["lr3e-4-s1"]["values"]["config:optimizer.lr"] == pytest.approx(3e-4)
    assert by_name["lr3e-4-s1"]["cells"]["config:optimizer.lr"] == "0.0003"
    lr = dict(zip((r["name"] for r in data["runs"]), column_cells(page, "optimizer.lr")))
    assert lr["lr1e-2-s1"] == "0.01" and lr["lr3e-4-s1"] == "0.0003" and lr["prepare-data"] == ""
    assert all(NUMBER.match(t) for t in column_cells(page, "train/loss") if t)


def test_each_row_has_the_runs_colour_chosen_columns_or_not(demo):
    with Viewer(demo["root"]) as v:
        default = v.get("/p/llm-pretrain").text
        chosen = v.get("/p/llm-pretrain?cols=" + quote("name,config:model.width")).text
        nameless = v.get("/p/llm-pretrain?cols=" + quote("status,start")).text
        data = v.get("/api/p/llm-pretrain/runs?cols=name").json()
    ids = set(demo["runs"][k] for k in demo["runs"] if k.startswith("llm-pretrain/"))
    colours = swatches(default)
    assert set(colours) == ids
    assert len(set(colours.values())) == len(ids)          # fewer runs than the palette: all differ
    for page in (chosen, nameless):
        assert swatches(page) == colours
    assert {r["id"]: r["colour"] for r in data["runs"]} == colours


def test_the_column_chooser_has_a_search_box_and_ticks_the_columns_shown(demo):
    with Viewer(demo["root"]) as v:
        page = v.get("/p/llm-pretrain").text
    assert 'id="columns-search"' in page and 'type="search"' in page
    assert re.search(r'<input type="checkbox" class="col-choice" value="config:optimizer\.lr"\s+'
                     r'checked>', page)
    assert not re.search(r'value="config:model\.arch"\s+checked', page)
    assert page.count('class="col-item"') + page.count('class="scalar-choice col-item"') > 60
    assert "runs_table.js" in page and "runs.css" in page


def test_each_number_has_its_own_text_whatever_its_column_holds(root):
    small = [("a", 3.125e-4, 2.5, 16), ("b", 1.2e-5, 0.123456, 32), ("c", 1e-3, 17.8, 64)]
    for name, lr, loss, width in small:
        write_run(root, "fmt", {"train/loss": [(0, 9.0), (1, loss)], "train/step": [(0, 1.0)]},
                  run_name=name, config={"lr": lr, "width": width, "opt": "adam"})
    with Viewer(root) as v:
        page = v.get("/p/fmt").text
        data = v.get("/api/p/fmt/runs").json()
    assert [c for c in data["columns"] if ":" in c] == [
        "config:lr", "config:width", "scalar:train/loss", "scalar:train/step"]
    lr = column_cells(page, "lr")
    assert sorted(lr) == sorted(["0.0003125", "1.2e-5", "0.001"])    # exponent below 1e-4 only
    width = column_cells(page, "width")
    assert sorted(width) == ["16", "32", "64"]                               # integers stay so
    loss = column_cells(page, "train/loss")
    assert sorted(loss) == sorted(["2.5", "0.12346", "17.8"])            # 5 digits, no padding
    assert column_cells(page, "train/step") == ["1", "1", "1"]
    assert data["numeric"] == [c for c in data["columns"] if ":" in c]
    assert re.search(r'<td class="num">1\.2e-5</td>', page)


def test_text_and_missing_cells_are_not_numbers(root):
    write_run(root, "mixed", run_name="one", config={"opt": "adam", "lr": 0.1, "flag": True})
    write_run(root, "mixed", run_name="two", config={"opt": "sgd", "lr": 0.25})
    with Viewer(root) as v:
        data = v.get("/api/p/mixed/runs?cols=" + quote("name,config:opt,config:lr,config:flag"))
        page = v.get("/p/mixed?cols=" + quote("name,config:opt,config:lr,config:flag")).text
    body = data.json()
    assert body["chosen"] is True and body["numeric"] == ["config:lr"]
    assert sorted(column_cells(page, "opt")) == ["adam", "sgd"]
    assert sorted(column_cells(page, "lr")) == ["0.1", "0.25"]
    assert sorted(column_cells(page, "flag")) == ["", "true"]
    assert '<td class="text"><span class="clip" title="adam">adam</span></td>' in page


def test_chosen_columns_stay_as_asked_and_the_defaults_stay_out_of_urls(root):
    for lr in (1e-3, 3e-3):
        loss_run(root, name=f"lr{lr:g}", config={"lr": lr, "seed": 1}, tags=["sweep"], group="g")
    with Viewer(root) as v:
        chosen = v.get("/api/p/llm/runs?cols=" + quote("status,name,tags,group,host")).json()
        assert chosen["columns"] == ["status", "name", "tags", "group", "host"]
        assert chosen["chosen"] is True
        default = v.get("/api/p/llm/runs").json()
        assert default["columns"] == ["status", "name", "config:lr", "scalar:train/loss",
                                      "start", "duration"]
        page = v.get("/p/llm").text
        sort_links = re.findall(r'<a class="sort[^"]*"\s+href="([^"]+)"', page)
        assert sort_links and not [h for h in sort_links if "cols=" in html.unescape(h)]
        assert 'id="columns-default"' not in page
        chosen_page = v.get("/p/llm?cols=name,host&sort=name&desc=0").text
        back = html.unescape(re.search(r'id="columns-default" href="([^"]+)"', chosen_page)[1])
        assert "cols=" not in back and "sort=name" in back
        assert v.get(back.replace("/p/llm", "/api/p/llm/runs", 1)).json()["columns"] == \
            default["columns"]
        by_lr = [r["name"] for r in v.get("/api/p/llm/runs?sort=config:lr&desc=1").json()["runs"]]
        assert by_lr == ["lr0.003", "lr0.001"]


def test_a_view_saved_with_the_default_columns_keeps_showing_the_defaults(root):
    loss_run(root, name="a", config={"lr": 0.1})
    with Viewer(root, sync_every=0.0) as v:
        saved = v.post("/p/llm/.views", {"name": "mine", "q": "", "cols": "", "sort": "start",
                                         "desc": "1", "runs": ""})
        assert saved.status == 303
        views = json.loads((root / "llm" / "views.json").read_text())["views"]
        assert views[0]["columns"] == []
        loss_run(root, name="b", config={"lr": 0.2})
        shown = v.get("/api/p/llm/runs?view=mine").json()
        assert "config:lr" in shown["columns"] and shown["chosen"] is False
        v.post("/p/llm/.views", {"name": "fixed", "q": "", "cols": "name,config:lr",
                                 "sort": "start", "desc": "1", "runs": ""})
        assert v.get("/api/p/llm/runs?view=fixed").json()["columns"] == ["name", "config:lr"]


def test_the_users_scalars_come_before_timing_and_system(root):
    for i in range(3):
        with nb.init("timed", dir=root, run_name=f"r{i}", **QUIET) as run:
            for step in range(3):
                with run.timer("data"):
                    pass
                with run.timer("step"):
                    pass
                run.add_scalar("zeta/score", 1.0 + i, step=step)
            if i:
                run.add_scalar("alpha/rare", 0.5, step=0)
    with Viewer(root) as v:
        columns = v.get("/api/p/timed/runs").json()["columns"]
    assert [c for c in columns if c.startswith("scalar:")] == [
        "scalar:alpha/rare", "scalar:zeta/score", "scalar:timing/data", "scalar:timing/step"]
