"""The viewer's media (issue 32, item 4) over HTTP: the media file route serves only files under
a run's media/ folder, each as its real type with nosniff (never HTML or SVG), the panels
escape what a user logged and show each run's nearest step, tables sort and page, and a
histogram's percentile bands are right. One folder of runs logged with the real API serves
every test here (module scope)."""
from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET
from helpers_http import Viewer

import nuboard as nb
from nuboard.web.media_bands import PERCENTILES, distribution, percentiles, spread_steps
from nuboard.web.media_entries import nearest_step, union_steps
from nuboard.web.media_files import content_type
from nuboard.web.media_tables import sorted_rows

EVIL = "<script>alert(1)</script>"
LONG_TEXT = "a long generation\n" * 4_000          # over 64 KiB: a .txt file of its own


def jpeg_bytes() -> bytes:
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGB", (20, 10), (200, 30, 30)).save(out, format="JPEG")
    return out.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Runs 'a' (images at steps 0, 10, 20; histograms, text, a table, audio, a JPEG) and 'b'
    (images at 5 and 15) of project llm, files planted under a's media/, and a Viewer."""
    root = tmp_path_factory.mktemp("media") / "experiments"
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(b"\x89PNG\r\n\x1a\nsecret")
    with nb.init("llm", dir=root, run_name="a", **QUIET) as run:
        for step in (0, 10, 20):
            run.log({"val/samples": nb.Image(np.full((16, 24, 3), step * 10, np.uint8),
                                             caption=EVIL if step == 10 else f"sample {step}"),
                     "weights": nb.Histogram(np.arange(1000) + step)}, step=step)
        run.log({"notes": "<b>bold</b> & short", "essay": LONG_TEXT,
                 "photo": nb.Image(jpeg_bytes()),
                 "preds": nb.Table(columns=["score", "label", "pic"],
                                   data=[[i * 1.5, f"row {i}" if i != 3 else EVIL,
                                          nb.Image(np.full((4, 4), i * 9, np.uint8))]
                                         for i in range(25)]),
                 "clip": nb.Audio(np.zeros(8000, np.float32), 8000, caption="silence")}, step=3)
    a = Path(run.path)
    with nb.init("llm", dir=root, run_name="b", **QUIET) as other:
        for step in (5, 15):
            other.log({"val/samples": nb.Image(np.full((16, 24, 3), 200, np.uint8))}, step=step)
    with nb.init("llm", dir=root, run_name="plain", **QUIET) as plain:
        plain.add_scalar("loss", 1.0, step=0)
    media = a / "media"
    (media / "evil.html").write_text("<html><script>alert(1)</script></html>")
    (media / "evil.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>')
    (media / "fake.png").write_text("<html><script>alert(1)</script></html>")
    os.symlink(outside / "secret.png", media / "link.png")
    os.symlink(outside, media / "linkdir")
    os.symlink(a, media / "up")                     # a link back to the run folder itself
    os.mkfifo(media / "pipe.png")
    with Viewer(root) as viewer:
        viewer.a, viewer.b, viewer.plain = a.name, Path(other.path).name, Path(plain.path).name
        viewer.folder_a = a
        yield viewer


def panel(viewer, key: str, *runs: str, api: bool = True, **args) -> object:
    query = "&".join([f"runs={','.join(runs)}", f"key={key}"] + [f"{k}={v}" for k, v in args.items()])
    reply = viewer.get(f"{'/api' if api else ''}/p/llm/.media?{query}")
    assert reply.status == 200, reply.text
    return reply.json() if api else reply.text


def file_of(viewer, key: str, run: str) -> str:
    return panel(viewer, key, run)["runs"][0]["entries"][0]["url"]


# -- the media file route ---------------------------------------------------------------------

@pytest.mark.parametrize("key, kind", [("val/samples", "image/png"), ("photo", "image/jpeg"),
                                       ("clip", "audio/wav"), ("essay", "text/plain; charset=utf-8")])
def test_a_media_file_is_served_as_its_own_kind_with_nosniff(served, key, kind):
    url = file_of(served, key, served.a)
    reply = served.get(url)
    assert reply.status == 200
    assert reply.headers["content-type"] == kind
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert "attachment" not in reply.headers.get("content-disposition", "")
    assert "sandbox" in reply.headers["content-security-policy"]
    if key == "essay":
        assert reply.text == LONG_TEXT


def test_a_table_file_is_an_attachment(served):
    url = file_of(served, "preds", served.a)
    assert url.endswith(".parquet")
    reply = served.get(url)
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/octet-stream"
    assert reply.headers["content-disposition"].startswith("attachment")
    assert reply.body[:4] == b"PAR1"


@pytest.mark.parametrize("name", ["evil.html", "evil.svg", "fake.png"])
def test_html_svg_or_a_disguised_file_is_never_served_inline(served, name):
    reply = served.get(f"/p/llm/.run/{served.a}/media/{name}")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/octet-stream"
    assert reply.headers["content-disposition"].startswith("attachment")
    assert reply.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("sub", [
    "../run.json", "%2e%2e/run.json", "..%2frun.json", "%252e%252e%252frun.json",
    "val/../../run.json", "link.png", "linkdir/secret.png", "up/run.json", "pipe.png",
    "nosuch.png", "val", "%2fetc%2fpasswd", "..%5crun.json"])
def test_a_path_outside_media_a_link_out_or_not_a_file_is_refused(served, sub):
    reply = served.get(f"/p/llm/.run/{served.a}/media/{sub}")
    assert 400 <= reply.status < 500, (sub, reply.status)
    assert b"secret" not in reply.body and b'"run_id"' not in reply.body


def test_an_audio_file_answers_a_range(served):
    url = file_of(served, "clip", served.a)
    reply = served.get(url, headers={"Range": "bytes=0-11"})
    assert reply.status == 206
    assert reply.body[:4] == b"RIFF" and len(reply.body) == 12
    etag = served.get(url).headers["etag"]
    assert served.get(url, headers={"If-None-Match": etag}).status == 304


def test_content_type_needs_the_extension_and_the_bytes_to_agree():
    assert content_type("a.png", b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert content_type("a.PNG", b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert content_type("a.jpg", b"\x89PNG\r\n\x1a\n....") is None
    assert content_type("a.wav", b"RIFF\0\0\0\0WAVEfmt ") == "audio/wav"
    assert content_type("a.svg", b"<svg") is None
    assert content_type("a.html", b"<html>") is None
    assert content_type("a.parquet", b"PAR1") is None


# -- panels -----------------------------------------------------------------------------------

def test_each_run_shows_its_nearest_step_at_or_before_else_its_first(served):
    a, b = served.a, served.b
    data = panel(served, "val/samples", a, b, step=12)
    assert data["kind"] == "image" and data["steps"] == [0, 5, 10, 15, 20]
    shown = {c["run"]: c["step"] for c in data["runs"]}
    assert shown == {a: 10, b: 5}
    early = {c["run"]: c["step"] for c in panel(served, "val/samples", a, b, step=2)["runs"]}
    assert early == {a: 0, b: 5}                    # b logged nothing before 2: its first
    last = panel(served, "val/samples", a, b)       # no step: the last of the union
    assert last["step"] == 20 and last["index"] == 4
    by_index = panel(served, "val/samples", a, b, i=1)
    assert by_index["step"] == 5
    url = by_index["runs"][0]["entries"][0]["url"]
    assert url.endswith("/media/val/samples/0-0.png") and f"/.run/{a}/" in url


def test_the_step_fragment_names_each_runs_step_and_picture(served):
    html = served.get(f"/p/llm/.media/step?runs={served.a},{served.b}&key=val/samples&i=3").text
    assert "<label" not in html                                 # the body only, no slider
    steps = re.findall(r'data-run="([^"]+)" data-step="(\d+)"', html)
    assert steps == [(served.a, "10"), (served.b, "15")]
    assert f"/.run/{served.b}/media/val/samples/15-0.png" in html


def test_captions_text_and_table_cells_are_escaped(served):
    images = panel(served, "val/samples", served.a, api=False, step=10)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in images
    assert EVIL not in images
    text = panel(served, "notes", served.a, api=False)
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; short" in text and "<b>bold" not in text
    table = panel(served, "preds", served.a, api=False)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in table and EVIL not in table


def test_a_long_text_is_folded_and_a_short_one_is_not(served):
    essay = panel(served, "essay", served.a, api=False)
    assert "<details" in essay and "a long generation" in essay
    assert f"({len(LONG_TEXT):,} characters)" in essay
    assert "<details" not in panel(served, "notes", served.a, api=False)


def test_a_panel_of_a_slider_with_its_steps_and_histogram_data(served):
    html = panel(served, "weights", served.a, api=False, anchor="media-7")
    assert 'data-steps=\'[0, 10, 20]\'' in html
    assert 'hx-target="#media-7-body"' in html and 'id="media-7-body"' in html
    assert "data-dist=" in html and "data-hist=" in html
    hostile = panel(served, "weights", served.a, api=False, anchor='x%22%20onclick%3D%22alert(1)')
    assert "onclick" not in hostile and 'id="media-panel-body"' in hostile


def test_audio_is_a_player_of_its_file(served):
    html = panel(served, "clip", served.a, api=False)
    src = re.search(r'<audio controls preload="metadata" src="([^"]+)"', html).group(1)
    assert src.endswith(".wav")
    assert "1.00 s · 8000 Hz" in html and "silence" in html


def test_a_table_sorts_and_pages(served):
    base = f"/api/p/llm/.media/table?run={served.a}&key=preds&step=3"
    first = served.get(base).json()
    assert first["total"] == 25 and first["pages"] == 2 and len(first["rows"]) == 20
    assert [c["name"] for c in first["columns"]] == ["score", "label", "pic"]
    assert first["rows"][0][0]["text"] == "0"
    assert first["rows"][0][2]["image"].endswith(".png")
    desc = served.get(base + "&sort=0&desc=1").json()
    assert [r[0]["text"] for r in desc["rows"][:3]] == ["36", "34.5", "33"]
    second = served.get(base + "&sort=0&desc=1&page=1").json()
    assert second["first"] == 21 and [r[0]["text"] for r in second["rows"]] == ["6", "4.5", "3", "1.5", "0"]
    thumb = served.get(first["rows"][0][2]["image"])
    assert thumb.status == 200 and thumb.headers["content-type"] == "image/png"
    html = served.get(base.replace("/api", "") + "&sort=0&desc=0").text
    assert 'aria-sort="ascending"' in html and "sort=0&amp;desc=1" in html      # again: the other way
    assert served.get(base.replace("step=3", "step=4")).status == 404


def test_the_distribution_bands_follow_the_histograms(served):
    reply = served.get(f"/api/p/llm/.media/distribution?runs={served.a}&key=weights").json()
    assert reply["percentiles"] == list(PERCENTILES)
    run = reply["runs"][0]
    assert run["steps"] == [0, 10, 20]
    medians = run["bands"][4]
    assert [round(m) for m in medians] == [500, 510, 520]        # arange(1000) + step
    assert run["bands"][0] == [0, 10, 20] and run["bands"][-1] == [999, 1009, 1019]


def test_bad_arguments_are_a_400(served):
    assert served.get(f"/api/p/llm/.media?runs={served.a}").status == 400               # no key
    assert served.get(f"/api/p/llm/.media?runs={served.a}&key=w&step=x").status == 400
    assert served.get(f"/api/p/llm/.media?runs={served.a}&key=w&rank=-1").status == 400
    gone = served.get("/api/p/llm/.media?runs=nosuch&key=w").json()
    assert gone["runs"] == [] and gone["kind"] is None


# -- the pages --------------------------------------------------------------------------------

def test_the_run_page_has_a_media_tab_listing_its_keys(served):
    html = served.get(f"/p/llm/.run/{served.a}?tab=media").text
    assert 'class="active">Media</a>' in html
    keys = re.findall(r'class="media-panel media-(\w+)" id="media-\d+" data-key="([^"]+)"', html)
    assert keys == [("audio", "clip"), ("text", "essay"), ("text", "notes"), ("image", "photo"),
                    ("table", "preds"), ("image", "val/samples"), ("histogram", "weights")]
    assert "This run logged no media." in served.get(f"/p/llm/.run/{served.plain}?tab=media").text


def test_the_charts_page_has_a_media_section_for_the_chosen_runs(served):
    html = served.get(f"/p/llm/.charts?runs={served.a},{served.b}").text
    assert '<h2 id="media-title">Media</h2>' in html
    assert f"runs={served.a},{served.b}&amp;key=val/samples" in html
    twin = served.get(f"/api/p/llm/.charts?runs={served.b}").json()
    assert twin["media_keys"] == [{"key": "val/samples", "kind": "image", "count": 2, "runs": 1}]
    assert "media-title" not in served.get(f"/p/llm/.charts?runs={served.plain}").text


# -- the pure parts ---------------------------------------------------------------------------

def test_percentiles_interpolate_inside_the_bin():
    hist = {"counts": [0, 10, 0], "edges": [0.0, 1.0, 2.0, 3.0], "min": None, "max": None}
    assert percentiles(hist, [0, 50, 100]) == [1.0, 1.5, 2.0]
    hist = {"counts": [5, 5], "edges": [0.0, 1.0, 2.0], "min": 0.2, "max": 1.7}
    assert percentiles(hist, [0, 25, 50, 75, 100]) == [0.2, 0.5, 1.0, 1.5, 1.7]
    assert percentiles({"counts": [], "edges": []}) is None
    assert percentiles({"counts": [0, 0], "edges": [0, 1, 2]}) is None
    assert percentiles({"counts": [1], "edges": [0, 1, 2]}) is None


def test_a_distribution_keeps_at_most_its_limit_of_steps():
    hists = [{"counts": [1, 1], "edges": [s, s + 1, s + 2]} for s in range(1000)]
    shape = distribution(list(range(1000)), hists, limit=10)
    assert len(shape["steps"]) == 10 and shape["steps"][0] == 0 and shape["steps"][-1] == 999
    assert len(shape["bands"]) == len(PERCENTILES) and all(len(b) == 10 for b in shape["bands"])
    assert spread_steps(3, 10) == [0, 1, 2]


def test_steps_union_and_nearest():
    assert union_steps([[0, 10], [5, 10]]) == [0, 5, 10]
    assert nearest_step([5, 15], 12) == 5
    assert nearest_step([5, 15], 2) == 5
    assert nearest_step([5, 15], 99) == 15
    assert nearest_step([], 3) is None


def test_rows_sort_numbers_before_text_and_empty_cells_last():
    rows = [[None], ["b"], [2], [float("nan")], [1], ["a"]]
    assert [r[0] for r in sorted_rows(rows, 0, False)][:3] == [1, 2, rows[3][0]]
    assert [r[0] for r in sorted_rows(rows, 0, False)][3:] == ["a", "b", None]
    assert sorted_rows(rows, 0, True)[-1] == [None]


def test_the_panels_are_listed_from_either_catalog(backend, root):
    with nb.init("llm", dir=root, run_name="one", **QUIET) as run:
        run.log({"val/samples": nb.Image(np.zeros((4, 4), np.uint8)), "notes": "hi"}, step=1)
    with Viewer(root) as viewer:
        twin = viewer.get(f"/api/p/llm/.charts?runs={Path(run.path).name}").json()
        assert [(m["key"], m["kind"]) for m in twin["media_keys"]] == [("notes", "text"),
                                                                       ("val/samples", "image")]
        html = viewer.get(f"/p/llm/.run/{Path(run.path).name}?tab=media").text
        assert html.count('class="media-panel ') == 2


def test_the_files_tab_previews_a_png_and_never_a_fake_one(served):
    """A PNG under the run's files shows as a picture (served inline as image/png, nosniff);
    a .png that holds HTML shows no picture, and its inline URL is still an attachment."""
    base = f"/p/llm/.run/{served.a}/files/media"
    real = next(p for p in os.listdir(served.folder_a / "media" / "val" / "samples") if p.endswith(".png"))
    page = served.get(f"{base}/val/samples/{real}")
    assert page.status == 200 and 'class="file-image"' in page.text and "A binary file" not in page.text
    shown = served.get(f"{base}/val/samples/{real}?inline=1")
    assert shown.status == 200 and shown.headers["content-type"] == "image/png"
    assert shown.headers["x-content-type-options"] == "nosniff"
    assert shown.headers["content-disposition"].startswith("inline") and shown.body.startswith(b"\x89PNG")
    fake = served.get(f"{base}/fake.png")
    assert 'class="file-image"' not in fake.text and "&lt;script&gt;" in fake.text
    sent = served.get(f"{base}/fake.png?inline=1")
    assert sent.headers["content-type"] == "application/octet-stream"
    assert sent.headers["content-disposition"].startswith("attachment")


def test_a_run_that_never_logged_the_key_is_one_line_not_an_empty_cell(served):
    html = panel(served, "val/samples", served.a, served.plain, api=False)
    assert f'class="media-run" data-run="{served.a}"' in html
    assert f'class="media-run" data-run="{served.plain}"' not in html
    assert "Not logged by" in html and f'class="media-run-absent" data-run="{served.plain}"' in html
