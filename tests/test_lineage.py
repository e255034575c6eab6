"""The lineage graph of the Artifacts page: who made a version and what came of it, as an SVG.

On the demo (written once for the module) and on small roots written with the real API.
"""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import QUIET

import nuboard as nb
from nuboard.artifacts import unlink_version
from nuboard.demo import RUNS, write_demo
from nuboard.web.catalogs import Catalogs
from nuboard.web.lineage import graph_json, lineage_graph, render_svg

# Each test runs on both catalog backends: SQLite, and PostgreSQL (team mode).
pytestmark = pytest.mark.usefixtures("backend")

SVG = "{http://www.w3.org/2000/svg}"
TRAINING = {s.name for s in RUNS if s.project == "llm-pretrain" and s.kind == "train"}


def run_url(node) -> str:
    return f"/p/{node.project}/.run/{node.run_id}"


def version_url(node) -> str:
    return f"/p/{node.project}/.artifact/{node.name}/v{node.version}"


def svg_of(graph, **kw) -> str:
    return str(render_svg(graph, run_url=run_url, version_url=version_url, **kw))


def names(graph, column: int) -> set[str]:
    """The run names and 'project/name:vN' of the nodes in a column."""
    return {n.name if n.kind == "run" else n.key for n in graph.column(column)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    written = write_demo(root, progress=lambda s: None)
    catalogs = Catalogs(root)
    yield root, written.runs, catalogs
    catalogs.close()


@pytest.fixture
def fresh(root):
    """Catalogs of `root` opened anew on each call (so each sees the files as they are now)."""
    opened = []

    def open_catalogs() -> Catalogs:
        catalogs = Catalogs(root)
        opened.append(catalogs)
        return catalogs
    yield open_catalogs
    for catalogs in opened:
        catalogs.close()


def data_folder(root: Path, name: str, text: str = "x") -> Path:
    folder = root.parent / "data" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part-0.txt").write_text(text)
    return folder


# -- the demo -------------------------------------------------------------------------------

def test_fineweb_v2_shows_its_producer_the_training_runs_the_checkpoint_and_the_eval(demo):
    root, runs, catalogs = demo
    graph = lineage_graph(catalogs, "datasets", "fineweb-edu", 2)
    assert graph.centre == "datasets/fineweb-edu:v2"
    assert graph.columns == [-1, 0, 1, 2, 3]                     # nothing upstream of prepare-data
    prepare = f"run:llm-pretrain/{runs['llm-pretrain/prepare-data']}"
    assert [n.key for n in graph.column(-1)] == [prepare]
    assert names(graph, 0) == {"datasets/fineweb-edu:v2"}
    assert names(graph, 1) == TRAINING and len(TRAINING) == 12
    assert {n.kind for n in graph.column(1)} == {"run"}
    assert names(graph, 2) == {"llm-pretrain/model:v1"}
    assert names(graph, 3) == {"eval-mmlu"}
    centre = graph.node(graph.centre)
    assert (centre.type, centre.unlinked, centre.missing) == ("dataset", False, False)
    status = {n.name: n.status for n in graph.column(1)}
    assert status["lr1e-2-s1"] == "crashed" and status["lr1e-3-s1"] == "finished"
    assert status["wide-d2048"] == "lost"                       # killed: running, silent heartbeat
    edges = {(e.source, e.kind, e.target) for e in graph.edges}
    run = {name.split("/", 1)[1]: f"run:llm-pretrain/{rid}" for name, rid in runs.items()}
    assert (run["prepare-data"], "produced", "datasets/fineweb-edu:v2") in edges
    assert (run["lr1e-3-s1"], "produced", "llm-pretrain/model:v1") in edges
    assert ("llm-pretrain/model:v1", "used", run["eval-mmlu"]) in edges
    assert {("datasets/fineweb-edu:v2", "used", run[n]) for n in TRAINING} <= edges
    assert len(edges) == 1 + 12 + 1 + 1
    # the checkpoint sits level with the run that saved it, rows follow the names
    rows = {n.name: n.row for n in graph.column(1)}
    assert rows == {name: i for i, name in enumerate(sorted(TRAINING))}


def test_model_v1_has_its_run_and_dataset_upstream_and_the_eval_downstream(demo):
    root, runs, catalogs = demo
    graph = lineage_graph(catalogs, "llm-pretrain", "model", 1)
    assert names(graph, -1) == {"lr1e-3-s1"}
    assert names(graph, -2) == {"datasets/fineweb-edu:v2"}
    assert names(graph, -3) == {"prepare-data"}
    assert names(graph, 1) == {"eval-mmlu"}
    assert graph.columns == [-3, -2, -1, 0, 1]
    # upstream is ancestry only: the other runs that used fineweb-edu:v2 are not drawn
    assert len(graph.nodes) == 5
    shallow = lineage_graph(catalogs, "llm-pretrain", "model", 1, depth=1)
    assert shallow.columns == [-1, 0, 1]


def test_json_twin_lists_nodes_with_their_column_and_the_edges(demo):
    root, runs, catalogs = demo
    doc = graph_json(lineage_graph(catalogs, "datasets", "fineweb-edu", 2))
    doc = json.loads(json.dumps(doc))
    assert doc["centre"] == "datasets/fineweb-edu:v2" and doc["columns"] == [-1, 0, 1, 2, 3]
    by_key = {n["key"]: n for n in doc["nodes"]}
    assert by_key["llm-pretrain/model:v1"]["column"] == 2
    assert by_key["llm-pretrain/model:v1"]["type"] == "checkpoint"
    evaluation = by_key[f"run:llm-pretrain/{runs['llm-pretrain/eval-mmlu']}"]
    assert (evaluation["kind"], evaluation["column"], evaluation["name"]) == ("run", 3, "eval-mmlu")
    assert {"source", "target", "kind"} == set(doc["edges"][0])
    assert len(doc["edges"]) == 15


def test_svg_is_one_link_per_node_to_its_page(demo):
    root, runs, catalogs = demo
    graph = lineage_graph(catalogs, "datasets", "fineweb-edu", 2)
    text = svg_of(graph)
    tree = ET.fromstring(text)                                   # well-formed XML
    assert tree.tag == f"{SVG}svg"
    width, height = float(tree.get("width")), float(tree.get("height"))
    assert tree.get("viewBox") == f"0 0 {tree.get('width')} {tree.get('height')}"
    assert width > 5 * 150 and height > 12 * 30                  # 5 columns, 12 runs high
    links = tree.findall(f".//{SVG}a")
    assert len(links) == len(graph.nodes) == 16
    href = {a.get("data-key"): a.get("href") for a in links}
    assert href["datasets/fineweb-edu:v2"] == "/p/datasets/.artifact/fineweb-edu/v2"
    assert href["llm-pretrain/model:v1"] == "/p/llm-pretrain/.artifact/model/v1"
    rid = runs["llm-pretrain/eval-mmlu"]
    assert href[f"run:llm-pretrain/{rid}"] == f"/p/llm-pretrain/.run/{rid}"
    kinds = {a.get("data-key"): (a.get("data-kind"), a.get("class").split()) for a in links}
    assert kinds["datasets/fineweb-edu:v2"] == ("version", ["node", "version", "centre"])
    assert kinds[f"run:llm-pretrain/{rid}"][0] == "run"
    centre = next(a for a in links if "centre" in a.get("class").split())
    assert centre.get("data-column") == "0"
    # versions are rounded, runs square with a status stripe; every node has a hover title
    shapes = {a.get("data-kind"): a.find(f"{SVG}rect") for a in links}
    assert float(shapes["version"].get("rx")) > float(shapes["run"].get("rx"))
    for a in links:
        assert a[0].tag == f"{SVG}title" and a[0].text
    wide = f"run:llm-pretrain/{runs['llm-pretrain/wide-d2048']}"
    lost = next(a for a in links if a.get("data-key") == wide)
    assert "st-lost" in lost.get("class").split()
    assert "lost" in "".join(lost.itertext())
    assert len(tree.findall(f".//{SVG}path")) == 15               # one curve per edge


# -- small roots written with the real API ---------------------------------------------------

def test_unlinked_and_missing_versions_and_runs_are_marked(root, fresh):
    raw = nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root,
                          type="dataset", reference=True)
    with nb.init("prep", dir=root, run_name="clean", **QUIET) as run:
        run.use_artifact("datasets/raw:v1")
        clean = run.add_artifact("datasets/clean", data_folder(root, "clean"), type="dataset",
                                 reference=True)
    with nb.init("train", dir=root, run_name="fit", **QUIET) as user:
        user.use_artifact("datasets/clean:v1")
    assert (raw.version, clean.version) == (1, 1)
    unlink_version("datasets", "clean", 1, dir=root)

    graph = lineage_graph(fresh(), "datasets", "raw", 1)
    node = graph.node("datasets/clean:v1")
    assert (node.column, node.unlinked, node.missing) == (2, True, False)
    assert names(graph, 1) == {"clean"} and names(graph, 3) == {"fit"}
    tree = ET.fromstring(svg_of(graph))
    a = next(a for a in tree.iter(f"{SVG}a") if a.get("data-key") == "datasets/clean:v1")
    assert "(unlinked)" in "".join(t.text for t in a.iter(f"{SVG}text"))
    assert "unlinked" in a.get("class").split()
    # the unlinked version's own graph still has its producer and its user
    own = lineage_graph(fresh(), "datasets", "clean", 1)
    assert own.node(own.centre).unlinked
    assert names(own, -1) == {"clean"} and names(own, 1) == {"fit"}

    # the producer's folder deleted: the manifest still names it, as missing
    shutil.rmtree(root / "prep" / "runs" / run.id)
    graph = lineage_graph(fresh(), "datasets", "clean", 1)
    producer = graph.node(f"run:prep/{run.id}")
    assert (producer.column, producer.missing, producer.name) == (-1, True, None)
    assert names(graph, 1) == {"fit"}
    # the version's folder deleted: the user's run.json still names it, as missing
    shutil.rmtree(root / "datasets" / "artifacts" / ".unlinked" / "clean")
    graph = lineage_graph(fresh(), "datasets", "clean", 1)
    assert graph.node(graph.centre).missing and graph.columns == [0, 1]
    assert names(graph, 1) == {"fit"}
    tree = ET.fromstring(svg_of(graph))
    centre = next(a for a in tree.iter(f"{SVG}a") if "centre" in a.get("class").split())
    assert "(missing)" in "".join(centre.itertext()) and "missing" in centre.get("class").split()


def test_a_use_is_found_without_the_use_note(root, fresh):
    """A read-only datasets project gets no use note; the run's own record still counts."""
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset",
                    reference=True)
    with nb.init("train", dir=root, run_name="fit", **QUIET) as run:
        run.use_artifact("datasets/raw:v1")
    shutil.rmtree(root / "datasets" / "artifacts" / ".uses")
    graph = lineage_graph(fresh(), "datasets", "raw", 1)
    assert [n.key for n in graph.column(1)] == [f"run:train/{run.id}"]


def test_user_text_is_escaped(root, fresh):
    evil = "<script>alert(1)</script>"
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset",
                    reference=True, description='<script>alert(2)</script> & "quotes"')
    with nb.init("train", dir=root, run_name=evil, **QUIET) as run:
        run.use_artifact("datasets/raw:v1")
    long_name = "a-very-long-run-name-" * 8
    with nb.init("train", dir=root, run_name=long_name, **QUIET) as other:
        other.use_artifact("datasets/raw:v1")
    # a hand-edited manifest: the type is user text too
    manifest = root / "datasets" / "artifacts" / "raw" / "v1" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["type"] = "<script>alert(3)</script>"
    manifest.write_text(json.dumps(doc))

    graph = lineage_graph(fresh(), "datasets", "raw", 1)
    assert graph.node(graph.centre).type == "<script>alert(3)</script>"
    text = svg_of(graph)
    assert "<script" not in text.lower()
    tree = ET.fromstring(text)
    titles = ["".join(t.itertext()) for t in tree.iter(f"{SVG}title")]
    assert any(evil in t for t in titles)                         # shown as text, whole
    assert any('<script>alert(2)</script> & "quotes"' in t for t in titles)
    assert any("<script>alert(3)</script>" in t for t in titles)
    labels = {a.get("data-key"): [t.text for t in a.iter(f"{SVG}text")]
              for a in tree.iter(f"{SVG}a")}
    short = labels[f"run:train/{other.id}"][0]
    head, tail = short.split("…")                                # cut in the middle
    assert long_name.startswith(head) and long_name.endswith(tail) and len(short) < 40
    assert any(long_name in t for t in titles)
    # an href that tries to break out of its attribute stays one attribute
    tree = ET.fromstring(str(render_svg(graph, run_url=lambda n: 'x" onclick="alert(4)',
                                        version_url=version_url)))
    run_link = next(a for a in tree.iter(f"{SVG}a") if a.get("data-kind") == "run")
    assert run_link.get("href") == 'x" onclick="alert(4)' and run_link.get("onclick") is None


def test_a_column_keeps_the_newest_runs_and_counts_the_rest(root, fresh):
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset",
                    reference=True)
    total, limit = 120, 10
    ids = [f"20260101T{i // 60:02d}{i % 60:02d}-{i:08x}" for i in range(total)]
    for i, run_id in enumerate(ids):
        with nb.init("sweep", dir=root, run_name=f"r{i:03d}", run_id=run_id, **QUIET) as run:
            run.use_artifact("datasets/raw:v1")
            if i in (0, total - 1):                 # the oldest (cut) and the newest (kept)
                run.add_artifact(f"model-{i}", data_folder(root, f"m{i}"), type="model")
    graph = lineage_graph(fresh(), "datasets", "raw", 1, limit=limit)
    runs = [n for n in graph.column(1) if n.kind == "run"]
    assert {n.run_id for n in runs} == set(ids[-limit:])          # the newest ten
    more = graph.node("more:1")
    assert (more.kind, more.count, more.of, more.row) == ("more", total - limit, "run", limit)
    assert any(e.source == graph.centre and e.target == "more:1" and e.kind == "used"
               for e in graph.edges)
    # a kept run's output is followed, a cut run's is not
    assert names(graph, 2) == {f"sweep/model-{total - 1}:v1"}
    text = svg_of(graph)
    tree = ET.fromstring(text)
    assert len(tree.findall(f".//{SVG}a")) == limit + 2           # ten runs, centre, model
    group = next(g for g in tree.iter(f"{SVG}g") if g.get("data-key") == "more:1")
    assert "+110 more runs" in "".join(group.itertext())
    linked = ET.fromstring(str(render_svg(graph, run_url=run_url, version_url=version_url,
                                          more_url=lambda n: "/more")))
    assert len(linked.findall(f".//{SVG}a")) == limit + 3
    default = lineage_graph(fresh(), "datasets", "raw", 1)
    assert len(default.column(1)) == 50 + 1 and default.node("more:1").count == total - 50


def test_an_unknown_version_is_one_missing_node_and_writes_nothing(root, fresh):
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset",
                    reference=True)
    catalogs = fresh()
    graph = lineage_graph(catalogs, "nowhere", "raw", 1)
    assert [(n.key, n.missing) for n in graph.nodes] == [("nowhere/raw:v1", True)]
    assert not (root / "nowhere").exists()
    graph = lineage_graph(catalogs, "datasets", "raw", 7)
    assert [(n.key, n.missing) for n in graph.nodes] == [("datasets/raw:v7", True)]
    ET.fromstring(svg_of(graph))
    with pytest.raises(ValueError, match="limit"):
        lineage_graph(catalogs, "datasets", "raw", 1, limit=0)


def test_a_fork_lists_its_parents_inputs_so_lineage_goes_through_it(root, fresh):
    """The parent trained on datasets/raw:v1; a fork of it goes on from those weights, so the
    dataset's users include the fork, and the fork's checkpoint has the dataset upstream."""
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset")
    with nb.init("train", dir=root, run_name="parent", **QUIET) as parent:
        parent.use_artifact("datasets/raw:v1")
        for step in range(5):
            parent.add_scalar("loss", 1.0 / (step + 1), step=step)
    weights = root.parent / "fork.bin"
    weights.write_bytes(b"w")
    with nb.init("train", dir=root, run_name="fork", fork_from=(parent.id, 2), **QUIET) as fork:
        fork.add_artifact("ckpt", weights, type="checkpoint")
    inputs = json.loads((Path(fork.path) / "run.json").read_text())["inputs"]
    assert [(i["project"], i["name"], i["version"], i["from_parent"]) for i in inputs] == \
        [("datasets", "raw", 1, parent.id)]
    users = lineage_graph(fresh(), "datasets", "raw", 1)
    assert {n.name for n in users.column(1)} == {"parent", "fork"}
    assert "train/ckpt:v1" in names(users, 2)
    upstream = lineage_graph(fresh(), "train", "ckpt", 1)
    assert names(upstream, -1) == {"fork"} and names(upstream, -2) == {"datasets/raw:v1"}


def test_a_fork_leaves_out_a_hand_edited_input_that_is_not_a_version(root, fresh):
    """A parent's inputs entry edited into a path ('../..') is not copied, nor followed when
    the fork notes its uses."""
    nb.add_artifact("datasets", "raw", data_folder(root, "raw"), dir=root, type="dataset")
    with nb.init("train", dir=root, run_name="parent", **QUIET) as parent:
        parent.use_artifact("datasets/raw:v1")
        parent.add_scalar("loss", 1.0, step=0)
    doc_path = Path(parent.path) / "run.json"
    doc = json.loads(doc_path.read_text())
    doc["inputs"].append({"project": "../..", "name": "../../../escape", "version": 1})
    doc["inputs"].append({"project": "datasets", "name": "raw", "version": "1"})
    doc_path.write_text(json.dumps(doc))
    with nb.init("train", dir=root, run_name="fork", fork_from=(parent.id, 0), **QUIET) as fork:
        pass
    inputs = json.loads((Path(fork.path) / "run.json").read_text())["inputs"]
    assert [(i["project"], i["name"], i["version"]) for i in inputs] == [("datasets", "raw", 1)]
    assert not list(root.parent.rglob("escape*"))
