"""Run colours: a palette whose colours stay apart (ΔE76) and read on both themes' chart
background (contrast), given in the order runs were made; a colour set by a user wins, is kept
in the project's colours.json, and the others keep away from it; a damaged colours.json; the
endpoint that sets a colour, over real HTTP (CSRF, Origin, a bad colour, an unknown run)."""
from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import pytest
from helpers import REPO, loss_run
from helpers_http import Viewer

from nuboard.files.colours import ColourError, colours_path, read_colours_noted, set_colour
from nuboard.web.run_colours import (
    PALETTE,
    ProjectColours,
    assign,
    contrast,
    delta_e,
    group_colours,
    lab,
    shade,
)

MIN_DE = 10


def theme_card(theme: str) -> str:
    """The chart background (--card) of a theme, read from static/nuboard.css."""
    css = (REPO / "static" / "nuboard.css").read_text()
    block = css.split("[data-theme=dark]", 1)[1 if theme == "dark" else 0]
    return re.search(r"--card:\s*(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b", block).group(1)


def full(colour: str) -> str:
    return colour if len(colour) == 7 else "#" + "".join(c * 2 for c in colour[1:])


def test_lab_and_contrast_agree_with_known_values():
    assert [round(v, 1) for v in lab("#ff0000")] == [53.2, 80.1, 67.2]
    assert [round(v, 1) for v in lab("#ffffff")] == [100.0, 0.0, 0.0]
    assert round(contrast("#bcbd22", "#ffffff"), 2) == 2.01      # the issue's figures
    assert round(contrast("#495057", "#1b1f27"), 2) == 2.02


def test_palette_colours_stay_apart_and_read_on_both_themes():
    assert len(set(PALETTE)) == len(PALETTE) == 20
    closest = min(delta_e(a, b) for a, b in itertools.combinations(PALETTE, 2))
    assert closest >= MIN_DE, closest
    for theme in ("light", "dark"):
        card = full(theme_card(theme))
        worst = min(PALETTE, key=lambda c: contrast(c, card))
        assert contrast(worst, card) >= 3.0, (theme, card, worst, contrast(worst, card))


def test_twelve_runs_get_twelve_distinct_colours_in_creation_order():
    order = [f"run-{i:02d}" for i in range(12)]
    colours = assign(order, {})
    assert [colours[r] for r in order] == list(PALETTE[:12])
    assert min(delta_e(colours[a], colours[b]) for a, b in itertools.combinations(order, 2)) >= MIN_DE
    # a run made later does not change the colours of those before it
    assert {r: c for r, c in assign(order + ["run-12"], {}).items() if r != "run-12"} == colours


def test_past_the_palette_runs_share_the_least_used_colour():
    order = [f"r{i}" for i in range(45)]
    colours = assign(order, {})
    counts = Counter(colours.values())
    assert set(counts) == set(PALETTE) and set(counts.values()) == {2, 3}
    assert colours["r20"] == PALETTE[0] and colours["r40"] == PALETTE[0]
    # a user's colour on the first palette colour: the next round goes to the others first
    mine = assign(order[:21], {"r3": PALETTE[0]})
    assert mine["r3"] == PALETTE[0]
    assert [r for r in order[:21] if mine[r] == PALETTE[0]] == ["r3", "r20"]


def test_a_users_colour_wins_and_the_others_keep_away_from_it():
    order = [f"r{i}" for i in range(12)]
    chosen = {"r5": "#2a7bb0"}                            # near the palette's first blue
    colours = ProjectColours(order, chosen)
    assert colours.run("r5") == "#2a7bb0" and colours.chosen("r5")
    others = [colours.run(r) for r in order if r != "r5"]
    assert len(set(others)) == 11
    assert min(delta_e(c, "#2a7bb0") for c in others) >= MIN_DE
    assert colours.rank("r5", 0) == "#2a7bb0" and colours.rank("r5", 1) == shade("#2a7bb0", 1)
    assert len({colours.rank("r1", k) for k in range(6)}) == 6
    assert colours.run("not-in-the-catalog-yet") in PALETTE


def test_groups_get_distinct_colours_in_their_order():
    labels = ["0.0001", "0.0003", "0.001", "0.003", "0.01", "0.03", "(none)"]
    colours = group_colours(labels)
    assert colours == list(PALETTE[:7])
    assert min(delta_e(a, b) for a, b in itertools.combinations(colours, 2)) >= MIN_DE


def test_a_colour_is_kept_in_the_project_folder_beside_the_others(root):
    (root / "llm").mkdir(parents=True)
    hand = {"format": 1, "colours": {"other-run": "#00ff00", "odd": "blue"}, "mine": [1]}
    colours_path(root, "llm").write_text(json.dumps(hand))
    assert read_colours_noted(root, "llm") == (
        {"other-run": "#00ff00"},
        "1 colour(s) in colours.json are not '#rrggbb' and are ignored (the first: run 'odd').")
    assert set_colour(root, "llm", "r1", "#ABCDEF") == {"other-run": "#00ff00", "r1": "#abcdef"}
    kept = json.loads(colours_path(root, "llm").read_text())
    assert kept == {**hand, "colours": {**hand["colours"], "r1": "#abcdef"}}
    for bad in ("red", "#abc", "#abcdeg", "", None):
        with pytest.raises(ColourError, match="is not a colour"):
            set_colour(root, "llm", "r1", bad)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"colours": ["#000000"]}'])
def test_a_damaged_colours_file_is_read_as_none_and_left_as_it_is(root, text):
    (root / "llm").mkdir(parents=True)
    path = colours_path(root, "llm")
    path.write_text(text)
    found, note = read_colours_noted(root, "llm")
    assert found == {} and "colours.json" in note and "own colours are shown" in note
    with pytest.raises(ColourError, match="fix or remove"):
        set_colour(root, "llm", "r1", "#123456")
    assert path.read_text() == text


@pytest.fixture
def served(root):
    runs = [loss_run(root, name=f"run-{i}", steps=3) for i in range(3)]
    with Viewer(root) as v:
        yield v, runs


def test_the_endpoint_sets_a_colour_shown_on_every_page(served, root):
    v, runs = served
    url = "/api/p/llm/.colours"
    before = {r["id"]: r["colour"] for r in v.get("/api/p/llm/.timeline").json()["runs"]}
    assert list(before.values()) == list(PALETTE[:3])       # creation order: run-0 first
    refused = [v.post(url, {"run": runs[0], "colour": "#123456"}, token=False),
               v.post(url, {"run": runs[0], "colour": "#123456"}, origin="http://evil.example"),
               v.post(url, {"run": runs[0], "colour": "#123456"}, origin=None)]
    assert [r.status for r in refused] == [403, 403, 403]
    bad = v.post(url, {"run": runs[0], "colour": "red"})
    assert bad.status == 400 and bad.json()["error"].startswith("colour 'red' is not a colour")
    unknown = v.post(url, {"run": "20990101-000000-nothere", "colour": "#123456"})
    assert unknown.status == 404 and "not found in project 'llm'" in unknown.json()["error"]
    assert not colours_path(root, "llm").exists()
    ok = v.post(url, {"run": runs[1], "colour": "#123456"})
    assert ok.status == 200 and ok.json() == {"run": runs[1], "colour": "#123456"}
    assert json.loads(colours_path(root, "llm").read_text())["colours"] == {runs[1]: "#123456"}
    after = {r["id"]: r["colour"] for r in v.get("/api/p/llm/.timeline").json()["runs"]}
    assert after == {runs[0]: PALETTE[0], runs[1]: "#123456", runs[2]: PALETTE[1]}


def test_read_only_refuses_to_set_a_colour(root):
    run_id = loss_run(root, name="only", steps=2)
    with Viewer(root, read_only=True) as v:
        answer = v.post("/api/p/llm/.colours", {"run": run_id, "colour": "#123456"})
    assert answer.status == 403 and "--read-only" in answer.json()["error"]
    assert not colours_path(root, "llm").exists()


def test_a_damaged_colours_file_is_said_on_the_runs_page_and_kept(root):
    run_id = loss_run(root, name="only", steps=2)
    colours_path(root, "llm").write_text("{not json")
    with Viewer(root) as v:
        page = v.get("/p/llm").text
        refused = v.post("/api/p/llm/.colours", {"run": run_id, "colour": "#123456"})
    assert 'class="error colours-note"' in page and "colours.json cannot be read" in page
    assert refused.status == 409 and "fix or remove" in refused.json()["error"]
    assert colours_path(root, "llm").read_text() == "{not json"
