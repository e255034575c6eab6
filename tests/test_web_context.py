"""web/context.py: the URL's project and run checked once per request (load_project) on every
blueprint, the --read-only rule as one decorator, JSON twins as second routes, and data
modules that do not import Flask."""
from __future__ import annotations

import ast
import html
from pathlib import Path

import pytest
from helpers import loss_run

WEB = Path(__file__).resolve().parent.parent / "nuboard" / "web"
DATA_MODULES = ("artifact_data", "catalogs", "chartdata", "console_text", "containment",
                "downsampling", "lineage", "lineage_svg", "run_details", "runs_table",
                "timeline_data", "version_form", "views")
FILL = {"run_id": "r1", "name": "model", "number": 1, "sub": "x.txt"}


@pytest.fixture
def app(root):
    from nuboard.web.app import create_app
    run_id = loss_run(root, steps=2)
    app = create_app(root, edit_artifacts=True)
    app.config["TEST_RUN_ID"] = run_id
    return app


def _text(reply) -> str:
    return html.unescape(reply.get_data(as_text=True))


def _send(client, app, method: str, path: str):
    if method == "GET":
        return client.get(path)
    return client.post(path, data={"csrf_token": app.config["NUBOARD_CSRF"]},
                       headers={"Origin": "http://localhost"})


def _routes(app, *, needs: str):
    """(method, rule) for each route whose URL has the argument `needs`."""
    found = []
    for rule in app.url_map.iter_rules():
        if needs in rule.arguments:
            method = "POST" if "POST" in rule.methods else "GET"
            found.append((method, rule))
    assert found
    return found


def test_unknown_project_is_a_404_from_every_blueprint(app):
    client = app.test_client()
    blueprints = set()
    with app.test_request_context():
        from flask import url_for
        for method, rule in _routes(app, needs="project"):
            values = {k: FILL.get(k, "nosuch") for k in rule.arguments}
            path = url_for(rule.endpoint, **values)
            reply = _send(client, app, method, path)
            assert reply.status_code == 404, (method, path, reply.status_code)
            assert "no project 'nosuch'" in _text(reply), path
            blueprints.add(rule.endpoint.split(".")[0])
    assert blueprints >= {"runs", "run", "files", "charts", "timeline", "artifacts",
                          "artifact_edit"}


def test_unknown_run_is_a_404_and_a_bad_run_id_a_400(app):
    client = app.test_client()
    with app.test_request_context():
        from flask import url_for
        for method, rule in _routes(app, needs="run_id"):
            values = {k: "llm" if k == "project" else FILL.get(k) for k in rule.arguments}
            missing = url_for(rule.endpoint, **dict(values, run_id="nosuch"))
            reply = _send(client, app, method, missing)
            assert reply.status_code == 404, missing
            assert "Run 'nosuch' not found in project 'llm'" in _text(reply)
            bad = url_for(rule.endpoint, **dict(values, run_id="..."))
            assert _send(client, app, method, bad).status_code == 400, bad


def test_project_and_run_are_in_g(app):
    from flask import g
    run_id = app.config["TEST_RUN_ID"]
    with app.test_request_context(f"/p/llm/.run/{run_id}"):
        app.preprocess_request()
        assert (g.project, g.run_id) == ("llm", run_id)
        from nuboard.web.context import project_catalog
        assert project_catalog() is g.catalog


def test_read_only_refuses_each_edit_route_with_its_403(root):
    from nuboard.web.app import create_app
    run_id = loss_run(root, steps=2)
    app = create_app(root, read_only=True)
    client = app.test_client()
    refused = {f"/p/llm/.run/{run_id}/notes": "notes cannot be edited",
               "/p/llm/.views": "views cannot be saved",
               "/p/llm/.views/delete": "views cannot be deleted"}
    for path, what in refused.items():
        reply = _send(client, app, "POST", path)
        assert reply.status_code == 403, path
        assert (f"This viewer was started with --read-only: {what}."
                in _text(reply)), path
    assert client.get(f"/p/llm/.run/{run_id}").status_code == 200


def test_a_foreign_host_or_post_is_refused_before_the_project_is_looked_up(app):
    client = app.test_client()
    assert client.get("/p/nosuch", headers={"Host": "evil.example"}).status_code == 403
    assert client.post("/p/nosuch/.views", data={"name": "v"}).status_code == 403


def test_a_json_twin_answers_as_its_page_with_format_json(app):
    client = app.test_client()
    run_id = app.config["TEST_RUN_ID"]
    for page, twin in ((f"/p/llm/.run/{run_id}", f"/api/p/llm/.run/{run_id}"),
                       ("/p/llm", "/api/p/llm/runs"), ("/", "/api/projects")):
        as_json = client.get(page + "?format=json").get_json()
        assert as_json == client.get(twin).get_json(), twin
        assert as_json


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", DATA_MODULES)
def test_data_modules_do_not_import_flask(module):
    imported = _imports(WEB / f"{module}.py")
    assert not imported & {"flask", "werkzeug"}, module


def test_pages_do_not_import_the_factory():
    for path in WEB.glob("*.py"):
        if path.name != "app.py":
            text = path.read_text()
            assert "from .app import" not in text and "nuboard.web.app" not in text, path.name
