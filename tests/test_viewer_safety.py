"""Rows 15-17 of reliability.md over real HTTP: traversal, symlink escape, stored XSS."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers_http import Viewer

import nuboard as nb
from nuboard.web.containment import OutsideError, open_inside, resolve_inside

XSS = "<script>alert(1)</script>"
ATTR = '"><img src=x onerror=alert(2)>'


@pytest.fixture
def run_with_files(root, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE KEY")
    with nb.init("llm", dir=root, run_name="files", system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        run.add_scalar("train/loss", 1.0, step=0)
    files = Path(run.path) / "files"
    files.mkdir(exist_ok=True)
    (files / "report.html").write_text(f"<html><body>{XSS}</body></html>")
    (files / "plot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(3)"/>')
    (files / "sub").mkdir()
    (files / "sub" / "a;b#c.txt").write_text("semicolon")
    os.symlink(secret, files / "ssh")
    os.symlink(secret / "id_rsa", files / "key")
    return run.id, secret


TRAVERSALS = [
    "../../../../etc/passwd", "..%2f..%2f..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/run.json",
    "%252e%252e%252f%252e%252e%252fetc%252fpasswd", "..%5c..%5cetc%5cpasswd", "..\\..\\etc\\passwd",
    "%2fetc%2fpasswd", "/etc/passwd", "files/..%2f..%2f..%2f..%2fsecret%2fid_rsa",
    "files%00.txt", "files/report.html%00", "..;/..;/etc/passwd", "files/../../../x",
    "files/ssh/id_rsa", "files/key", "files/./report.html", "files//report.html",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_paths_outside_the_run_folder_are_refused(root, run_with_files, path):
    run_id, _secret = run_with_files
    with Viewer(root) as v:
        for suffix in ("", "?download=1"):
            reply = v.get(f"/p/llm/.run/{run_id}/files/{path}{suffix}")
            assert reply.status in (400, 404), (path, reply.status)
            assert b"PRIVATE KEY" not in reply.body and b"root:" not in reply.body
        api = v.get(f"/api/p/llm/.run/{run_id}/files/{path}")
        assert api.status in (400, 404)


def test_files_inside_are_served_as_downloads(root, run_with_files):
    run_id, _ = run_with_files
    with Viewer(root) as v:
        listing = v.get(f"/api/p/llm/.run/{run_id}/files/files/").json()
        names = {e["name"]: e for e in listing["entries"]}
        assert names["ssh"]["link"] and names["key"]["link"] and names["sub"]["dir"]
        html = v.get(f"/p/llm/.run/{run_id}/files/files/report.html?download=1")
        assert html.status == 200 and html.body.startswith(b"<html>")
        assert html.headers["content-type"] == "application/octet-stream"
        assert html.headers["content-disposition"].startswith("attachment;")
        assert html.headers["x-content-type-options"] == "nosniff"
        assert html.headers["content-security-policy"] == "default-src 'none'; sandbox"
        svg = v.get(f"/p/llm/.run/{run_id}/files/files/plot.svg?download=1")
        assert svg.headers["content-type"] == "application/octet-stream"
        odd = v.get(f"/p/llm/.run/{run_id}/files/files/sub/a%3Bb%23c.txt?download=1")
        assert odd.status == 200 and odd.body == b"semicolon"
        preview = v.get(f"/p/llm/.run/{run_id}/files/files/report.html")
        assert XSS not in preview.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in preview.text


def test_console_and_overview_do_not_follow_links_out(root, tmp_path):
    with nb.init("llm", dir=root, run_name="linked", system_metrics=False, capture_console=False,
                 capture_env=False) as run:
        run.add_scalar("train/loss", 1.0, step=0)
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    files = Path(run.path) / "files"
    files.mkdir(exist_ok=True)
    for name in ("output.log", "command.txt", "requirements.txt", "git.patch"):
        os.symlink(secret, files / name)
    with Viewer(root) as v:
        for path in (f"/p/llm/.run/{run.id}", f"/p/llm/.run/{run.id}?tab=console",
                     f"/api/p/llm/.run/{run.id}", f"/api/p/llm/.run/{run.id}/console",
                     f"/p/llm/.run/{run.id}/console"):
            reply = v.get(path)
            assert reply.status == 200 and b"PRIVATE KEY" not in reply.body, path


def test_a_link_swapped_in_after_the_check_is_not_followed(tmp_path):
    base = tmp_path / "run"
    (base / "files").mkdir(parents=True)
    (base / "files" / "log.txt").write_text("ok")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "log.txt").write_text("SECRET")
    real = resolve_inside(base, "files/log.txt")
    os.rename(base / "files", base / "old")
    os.symlink(outside, base / "files")
    with pytest.raises(OutsideError):
        open_inside(base, real)
    with pytest.raises(OutsideError):
        resolve_inside(base, "files/log.txt")


def test_what_users_wrote_shows_as_text(root):
    with nb.init("llm", dir=root, run_name=XSS, tags=[XSS, ATTR], notes=f"{XSS} javascript:alert(4)",
                 group=ATTR, config={XSS: ATTR, "k": XSS}, system_metrics=False,
                 capture_env=False) as run:
        run.add_scalar(f"train/{ATTR}", 1.0, step=0)
        print(f"\x1b[31m{XSS}\x1b[0m")
    with Viewer(root) as v:
        cols = f"status,name,tags,group,config:{XSS},scalar:train/{ATTR}"
        from urllib.parse import quote
        pages = [v.get("/p/llm?cols=" + quote(cols)), v.get(f"/p/llm/.run/{run.id}"),
                 v.get(f"/p/llm/.run/{run.id}?tab=console"), v.get(f"/p/llm/.charts?runs={run.id}")]
        for page in pages:
            assert page.status == 200
            assert XSS not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[0].text
        assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in pages[1].text
        data = v.get(f"/api/p/llm/.chart?name={quote('train/' + ATTR)}&runs={run.id}")
        assert data.headers["content-type"].startswith("application/json")
