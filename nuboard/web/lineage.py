"""The lineage graph around one artifact version: what made it, and what came of it.

Columns count hops from the centre version: upstream on the left (-1 the run that produced
it, -2 that run's inputs, -3 their producers ...), downstream on the right (+1 the runs that
used it, +2 the versions they produced, +3 the runs that used those ...), up to `depth`.
Runs and versions alternate, so every column holds one kind.

Edges are looked up in every project's catalog that names the projects concerned: each
catalog holds the edges that touch its project (a run's run.json names its inputs and
outputs, a manifest its producer, a use note who used a version), and a use note is missing
where the artifact's project is read-only, so no single catalog is sure to know them all.
Which projects a catalog's edges name is kept (Catalogs.remember) until a sync changes it.

Each column keeps at most `limit` nodes (the newest first) and one "+N more" node for the
rest, which is not followed further, so a dataset used by 10,000 runs still draws at once.
"""
from __future__ import annotations

import heapq
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Iterable

from nuboard.catalog import artifact_reads
from nuboard.files.records import display_status

from .lineage_svg import render_svg

__all__ = ["Node", "Edge", "Graph", "lineage_graph", "graph_json", "render_svg",
           "version_key", "run_key"]

LIMIT = 50


@dataclass
class Node:
    """A version, a run, or the "+N more" node of a column cut at the limit.

    kind: 'version', 'run' or 'more'. key: 'project/name:vN', 'run:project/run_id' or
    'more:<column>'. column: hops from the centre (negative upstream); row: its place in
    the column, top first. missing: the version's or run's folder is gone (an edge still
    names it). count: how many nodes a 'more' node stands for; of: what they are ('run'
    or 'version').
    """
    kind: str
    key: str
    project: str | None = None
    name: str | None = None                  # the artifact's name, or the run's
    version: int | None = None
    run_id: str | None = None
    type: str | None = None
    description: str | None = None
    status: str | None = None                # as shown: 'lost' for a silent running run
    unlinked: bool = False
    missing: bool = False
    column: int = 0
    row: int = 0
    count: int = 0
    of: str | None = None


@dataclass(frozen=True)
class Edge:
    """run -produced-> version, or version -used-> run (source on the left of the data flow)."""
    source: str
    target: str
    kind: str


@dataclass
class Graph:
    """The nodes (each with its column and row) and edges around the centre version's key."""
    centre: str
    depth: int
    limit: int
    nodes: list[Node] = field(default_factory=list)       # by column, then row
    edges: list[Edge] = field(default_factory=list)

    def node(self, key: str) -> Node | None:
        return next((n for n in self.nodes if n.key == key), None)

    def column(self, index: int) -> list[Node]:
        return [n for n in self.nodes if n.column == index]

    @property
    def columns(self) -> list[int]:
        return sorted({n.column for n in self.nodes})


def version_key(project: str, name: str, version: int) -> str:
    """A version node's key: 'datasets/fineweb-edu:v2'."""
    return f"{project}/{name}:v{version}"


def run_key(project: str, run_id: str) -> str:
    """A run node's key: 'run:llm-pretrain/<run_id>'."""
    return f"run:{project}/{run_id}"


def lineage_graph(catalogs, project: str, name: str, version: int, *, depth: int = 3,
                  limit: int = LIMIT, now: float | None = None) -> Graph:
    """The graph around project/name:v<version>, `depth` hops each way.

    Args:
        catalogs: the viewer's Catalogs (`.get(project)`, `.projects()`).
        depth: how many columns on each side (run and version hops alike).
        limit: the most nodes a column shows; the rest become one "+N more" node.
        now: the time 'lost' is judged at (epoch seconds); defaults to now.

    Returns:
        A Graph whose nodes carry their column and row; a centre the catalogs do not know is
        there, marked missing.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit!r}")
    now = time.time() if now is None else now
    known = set(catalogs.projects())
    centre = Node("version", version_key(project, name, version), project=project, name=name,
                  version=version)
    graph = Graph(centre=centre.key, depth=depth, limit=limit)
    placed: dict[str, Node] = {centre.key: centre}
    _fill(catalogs, known, [centre], now)
    edges: set[Edge] = set()
    for side in (-1, 1):
        frontier = [centre]
        for step in range(1, depth + 1):
            if not frontier:
                break
            frontier = _expand(catalogs, known, frontier, side * step, side, placed, edges,
                               limit, now)
    _order(placed, edges)
    graph.nodes = sorted(placed.values(), key=lambda n: (n.column, n.row))
    graph.edges = sorted(edges, key=lambda e: (e.source, e.target, e.kind))
    return graph


def graph_json(graph: Graph) -> dict:
    """The graph as the page's JSON twin shows it: nodes with column and row, and edges."""
    return {
        "centre": graph.centre, "depth": graph.depth, "limit": graph.limit,
        "columns": graph.columns,
        "nodes": [asdict(n) for n in graph.nodes],
        "edges": [asdict(e) for e in graph.edges],
    }


# -- building -----------------------------------------------------------------------------

def _expand(catalogs, known: set[str], frontier: list[Node], column: int, side: int,
            placed: dict[str, Node], edges: set[Edge], limit: int, now: float) -> list[Node]:
    """Place the neighbours of `frontier` in `column`; return the new nodes to follow.

    Neighbours stay plain tuples until they are kept, so 10,000 users of a version cost
    one tuple each, not one Node.
    """
    from_versions = frontier[0].kind == "version"
    # upstream of a version: its producers; downstream: its users. Of a run: its inputs, outputs.
    wanted = ("produced" if side < 0 else "used") if from_versions else \
        ("used" if side < 0 else "produced")
    found = _edges(catalogs, known, frontier, wanted)
    # (here, there): the frontier's end and the neighbour's, as (run_project, run_id) and
    # (artifact_project, artifact_name, version)
    pairs = [((r[2], r[3], r[4]), (r[0], r[1])) if from_versions else
             ((r[0], r[1]), (r[2], r[3], r[4])) for r in found]
    make = _run_node if from_versions else _version_node
    fresh = _fresh(pairs, placed)
    if from_versions:              # newest first: default run ids start with the time
        ranked = heapq.nlargest(limit, fresh, key=lambda t: (t[1], t[0]))
    else:                          # each artifact's newest versions first
        ranked = heapq.nsmallest(limit, fresh, key=lambda t: (t[0], t[1], -t[2]))
    kept = {t: make(t, column) for t in ranked}
    more = None
    if len(fresh) > len(kept):
        more = Node("more", f"more:{column}", column=column, count=len(fresh) - len(kept),
                    of="run" if from_versions else "version")
        placed[more.key] = more
    here_key = _version_key_of if from_versions else _run_key_of
    there_key = _run_key_of if from_versions else _version_key_of
    to_more: set = set()
    for here, there in pairs:
        if there in kept:
            target = kept[there].key
        elif there in fresh:
            to_more.add(here)
            continue
        else:
            target = there_key(there)
        edges.add(_edge(here_key(here), target, wanted, from_versions))
    for here in to_more:
        edges.add(_edge(here_key(here), more.key, wanted, from_versions))
    nodes = list(kept.values())
    _fill(catalogs, known, nodes, now)
    placed.update((n.key, n) for n in nodes)
    return nodes


def _fresh(pairs: list, placed: dict[str, Node]) -> set:
    """The neighbours not placed yet (the graph holds few nodes: test those, not every pair)."""
    fresh = {there for _, there in pairs}
    for node in placed.values():
        fresh.discard((node.project, node.run_id) if node.kind == "run" else
                      (node.project, node.name, node.version))
    return fresh


def _edge(here: str, there: str, kind: str, from_versions: bool) -> Edge:
    """run -produced-> version, version -used-> run, whichever end the frontier is."""
    run_end, version_end = (there, here) if from_versions else (here, there)
    return Edge(run_end, version_end, kind) if kind == "produced" else \
        Edge(version_end, run_end, kind)


def _run_node(t: tuple, column: int) -> Node:
    return Node("run", run_key(*t), project=t[0], run_id=t[1], column=column)


def _version_node(t: tuple, column: int) -> Node:
    return Node("version", version_key(*t), project=t[0], name=t[1], version=t[2], column=column)


def _run_key_of(t: tuple) -> str:
    return run_key(*t)


def _version_key_of(t: tuple) -> str:
    return version_key(*t)


def _edges(catalogs, known: set[str], frontier: list[Node], kind: str) -> set[tuple]:
    """DISTINCT (run_project, run_id, artifact_project, artifact_name, version) of the edges of
    `kind` touching the frontier, from every catalog whose edges name the frontier's projects."""
    if frontier[0].kind == "version":
        keys = {(n.project, n.name, n.version) for n in frontier}
        read = artifact_reads.edges_of_versions
    else:
        keys = {(n.project, n.run_id) for n in frontier}
        read = artifact_reads.edges_of_runs
    side = 0 if frontier[0].kind == "version" else 1
    concerned = {n.project for n in frontier}
    found: set[tuple] = set()
    for project in sorted(known):
        if concerned & _touched(catalogs, project)[side]:
            found.update(read(catalogs.get(project), kind, keys))
    return found


def _touched(catalogs, project: str) -> tuple[frozenset, frozenset]:
    """The artifact projects and the run projects a project's lineage edges name, kept by
    the Catalogs until a sync changes the project, so only catalogs that may hold an edge
    are asked."""
    remember = getattr(catalogs, "remember", None)
    if remember is None:
        return artifact_reads.lineage_projects(catalogs.get(project))
    return remember(project, "lineage.touched", artifact_reads.lineage_projects)


def _fill(catalogs, known: set[str], nodes: Iterable[Node], now: float) -> None:
    """Read each node's row from its own project's catalog; a node without one is missing."""
    by_project: dict[tuple[str, str], list[Node]] = {}
    for node in nodes:
        by_project.setdefault((node.kind, node.project), []).append(node)
    for (kind, project), group in by_project.items():
        if project not in known:
            for node in group:
                node.missing = True
            continue
        catalog = catalogs.get(project)
        if kind == "version":
            rows = artifact_reads.version_summaries(catalog, [(n.name, n.version) for n in group])
            for node in group:
                row = rows.get((node.name, node.version))
                if row is None:
                    node.missing = True
                else:
                    node.type, node.description, node.unlinked = row
        else:
            rows = artifact_reads.run_summaries(catalog, [n.run_id for n in group])
            for node in group:
                row = rows.get(node.run_id)
                if row is None:
                    node.missing = True
                else:
                    node.name, status, heartbeat, lost_after = row
                    node.status = display_status(status, heartbeat, now, lost_after)


# -- layout -------------------------------------------------------------------------------

def _order(placed: dict[str, Node], edges: set[Edge]) -> None:
    """Rows: each column sorted by where its neighbours nearer the centre sit, then by label."""
    neighbours: dict[str, set[str]] = {}
    for e in edges:
        neighbours.setdefault(e.source, set()).add(e.target)
        neighbours.setdefault(e.target, set()).add(e.source)
    columns: dict[int, list[Node]] = {}
    for node in placed.values():
        columns.setdefault(node.column, []).append(node)
    rows: dict[str, int] = {}
    for index in sorted(columns, key=abs):
        inner = index - 1 if index > 0 else index + 1
        def place(node: Node, inner=inner) -> tuple:
            near = [rows[k] for k in neighbours.get(node.key, ())
                    if k in rows and placed[k].column == inner]
            centre = sum(near) / len(near) if near else 0.0
            return (node.kind == "more", centre, _natural(_label(node)), node.key)
        for row, node in enumerate(sorted(columns[index], key=place)):
            node.row = row
            rows[node.key] = row


def _natural(text: str) -> list:
    """A sort key that puts run-9 before run-10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", text.lower()) if part]


def _label(node: Node) -> str:
    if node.kind == "run":
        return node.name or node.run_id or ""
    if node.kind == "version":
        return f"{node.name}:v{node.version}"
    return ""
