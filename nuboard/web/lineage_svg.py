"""The lineage graph drawn as an SVG: columns by hops from the centre, curves between them.

Pure: a Graph (nuboard/web/lineage.py) in, markup out. Every text and attribute is escaped
(run and artifact names, types and descriptions are user input); each node is an `<a>` with
its `<title>` for hover and `class`, `data-kind`, `data-key` and `data-column` for tests and
scripts. No colour is written here: the boxes (`box`), texts (`name`, `detail`), a run's status
bar (`status`, under the node's `st-<status>` class) and the edges (`edge`, `near` for the centre's)
are coloured by static/nuboard.css through the theme's variables, in light and dark alike.
"""
from __future__ import annotations

import re
from typing import Callable

from markupsafe import Markup, escape

NODE_W = 196
NODE_H = 40
COL_GAP = 64
ROW_GAP = 10
PAD = 10
LINE1 = (12.5, 1.06)        # font size (px) and how much wider bold text runs
LINE2 = (11.0, 1.0)
TEXT_ROOM = NODE_W - 14 - 10  # from the inset to a little before the right edge

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def render_svg(graph, *, run_url: Callable, version_url: Callable,
               more_url: Callable | None = None) -> Markup:
    """The graph as an inline SVG element (safe to put in a page as it is).

    Args:
        graph: a Graph from lineage_graph.
        run_url, version_url: node -> the href of a run's page or a version's page (the
            version page recentres the graph on it).
        more_url: node -> an href for a "+N more" node; without it that node is no link.
    """
    columns = graph.columns or [0]
    tallest = max(len(graph.column(c)) for c in columns) or 1
    height = 2 * PAD + tallest * NODE_H + (tallest - 1) * ROW_GAP
    width = 2 * PAD + len(columns) * NODE_W + (len(columns) - 1) * COL_GAP
    spot = _positions(graph, columns, height)
    centre = graph.node(graph.centre)
    label = _label_of(centre) if centre is not None else graph.centre
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lineage-graph" '
           f'viewBox="0 0 {width} {height:g}" width="{width}" height="{height:g}" '
           f'font-family="system-ui, -apple-system, sans-serif" '
           f'aria-label="{_x("Lineage of " + label)}">',
           '<g class="edges" fill="none" stroke-width="1.4">']
    for edge in graph.edges:
        if edge.source in spot and edge.target in spot:
            out.append(_edge(edge, spot, graph.centre))
    out.append('</g><g class="nodes">')
    for node in graph.nodes:
        out.append(_node(node, spot[node.key], node.key == graph.centre, run_url, version_url,
                         more_url))
    out.append("</g></svg>")
    return Markup("".join(out))


def _positions(graph, columns: list[int], height: float) -> dict[str, tuple[float, float]]:
    """Each node's top-left corner: the centre column centred, every other node as level
    as it can be with its neighbours nearer the centre, in row order, without overlaps."""
    step = NODE_H + ROW_GAP
    neighbours: dict[str, list[str]] = {}
    for e in graph.edges:
        neighbours.setdefault(e.source, []).append(e.target)
        neighbours.setdefault(e.target, []).append(e.source)
    column_of = {n.key: n.column for n in graph.nodes}
    tops: dict[str, float] = {}
    for c in sorted(columns, key=abs):
        nodes = graph.column(c)
        inner = c - 1 if c > 0 else c + 1
        stack = len(nodes) * step - ROW_GAP
        middle = PAD + (height - 2 * PAD - stack) / 2
        wish = []
        for i, node in enumerate(nodes):
            near = [tops[k] for k in neighbours.get(node.key, ())
                    if k in tops and column_of[k] == inner]
            wish.append(sum(near) / len(near) if near and c else middle + i * step)
        for i in range(1, len(wish)):                       # push down what overlaps
            wish[i] = max(wish[i], wish[i - 1] + step)
        over = wish[-1] - (height - PAD - NODE_H) if wish else 0
        if over > 0:                                        # then up what falls off the end
            wish[-1] -= over
            for i in range(len(wish) - 2, -1, -1):
                wish[i] = min(wish[i], wish[i + 1] - step)
        for node, top in zip(nodes, wish):
            tops[node.key] = max(PAD, top)
    first = columns[0]
    return {n.key: (PAD + (n.column - first) * (NODE_W + COL_GAP), tops[n.key])
            for n in graph.nodes}


def _edge(edge, spot: dict, centre: str) -> str:
    (sx, sy), (tx, ty) = spot[edge.source], spot[edge.target]
    x1, y1, x2, y2 = sx + NODE_W, sy + NODE_H / 2, tx, ty + NODE_H / 2
    bend = max(COL_GAP / 2, (x2 - x1) / 2)
    near = centre in (edge.source, edge.target)
    return (f'<path class="edge {_x(edge.kind)}{" near" if near else ""}" data-source="{_x(edge.source)}" '
            f'data-target="{_x(edge.target)}" '
            f'd="M{x1:g},{y1:g} C{x1 + bend:g},{y1:g} {x2 - bend:g},{y2:g} {x2:g},{y2:g}"/>')


def _node(node, at: tuple[float, float], is_centre: bool, run_url, version_url, more_url) -> str:
    x, y = at
    classes = ["node", node.kind]
    if is_centre:
        classes.append("centre")
    if node.missing:
        classes.append("missing")
    if node.unlinked:
        classes.append("unlinked")
    if node.kind == "run" and node.status:
        classes.append(f"st-{node.status}")
    rx = f"{NODE_H / 2 - 4:g}" if node.kind == "version" else "2"
    shape = f'<rect class="box" x="{x:g}" y="{y:g}" width="{NODE_W}" height="{NODE_H}" rx="{rx}"/>'
    first, second = _lines(node)
    inset = 14 if node.kind == "version" else 12
    parts = [f"<title>{_x(_title(node))}</title>", shape]
    if node.kind == "run":
        parts.append(f'<rect class="status" x="{x:g}" y="{y:g}" width="5" height="{NODE_H}"/>')
    parts.append(f'<text class="name" x="{x + inset:g}" y="{y + 16:g}" font-size="12.5" '
                 f'font-weight="600">{_x(first)}</text>')
    if second:
        parts.append(f'<text class="detail" x="{x + inset:g}" y="{y + 31:g}" font-size="11">'
                     f'{_x(second)}</text>')
    attrs = (f'class="{_x(" ".join(classes))}" data-kind="{_x(node.kind)}" '
             f'data-key="{_x(node.key)}" data-column="{node.column}"')
    if node.kind == "more":
        href = more_url(node) if more_url is not None else None
    else:
        href = (run_url if node.kind == "run" else version_url)(node)
    if href is None:
        return f"<g {attrs}>{''.join(parts)}</g>"
    return f'<a href="{_x(str(href))}" {attrs}>{"".join(parts)}</a>'


def _lines(node) -> tuple[str, str]:
    """A node's two lines of text, each cut to what fits ('(unlinked)' is never cut off)."""
    if node.kind == "more":
        noun = "run" if node.of == "run" else "version"
        return f"+{node.count:,} more {noun}{'' if node.count == 1 else 's'}", "not shown"
    mark = " (missing)" if node.missing else " (unlinked)" if node.unlinked else ""
    if node.kind == "run":
        name = node.name or node.run_id or "?"
        detail = node.status or "run"
    else:
        name = f"{node.name}:v{node.version}"
        detail = node.type or "version"
    size, bold = LINE1
    room = TEXT_ROOM / (size * bold) - text_width(mark)
    return (ellipsize(name, room) + mark,
            ellipsize(f"{detail} · {node.project}", TEXT_ROOM / LINE2[0]))


def _title(node) -> str:
    """The hover text: the full name, then what it is."""
    if node.kind == "more":
        return f"{node.count:,} more {node.of}s, not shown"
    if node.kind == "run":
        state = "missing (its folder is gone)" if node.missing else node.status
        return f"{node.project}/{node.name or node.run_id}\nrun {node.run_id} · {state}"
    state = ("missing (its folder is gone)" if node.missing else
             "unlinked" if node.unlinked else None)
    lines = [_label_of(node), " · ".join(s for s in (node.type or "version", state) if s)]
    if node.description:
        lines.append(node.description)
    return "\n".join(lines)


def _label_of(node) -> str:
    if node.kind == "version":
        return f"{node.project}/{node.name}:v{node.version}"
    if node.kind == "run":
        return f"{node.project}/{node.name or node.run_id}"
    return node.key


def text_width(text: str) -> float:
    """A text's width in em, roughly, for a sans-serif font (no font metrics on the server)."""
    return sum(_char_width(c) for c in text)


def _char_width(c: str) -> float:
    if c in _NARROW:
        return 0.32
    if c in "mwMW@%":
        return 0.95
    if ord(c) >= 0x1100:                     # CJK, emoji and other wide characters
        return 1.05
    if c.isupper():
        return 0.74
    return 0.63                              # DejaVu Sans, the widest usual default


_NARROW = set("iljtfrI1.,:;'|!()[]{} ")


def ellipsize(text: str, room: float) -> str:
    """text cut in the middle to about `room` em (its start and end both stay readable)."""
    if text_width(text) <= room:
        return text
    room -= 1.0                                    # the ellipsis
    head, tail, used = 0, 0, 0.0
    while head + tail < len(text):                 # take from the front and the back in turn
        take_head = head <= tail
        c = text[head] if take_head else text[len(text) - 1 - tail]
        if used + _char_width(c) > room:
            break
        used += _char_width(c)
        head, tail = (head + 1, tail) if take_head else (head, tail + 1)
    return text[:head] + "…" + (text[len(text) - tail:] if tail else "")


def _x(text: str) -> str:
    """Text escaped for XML text and double-quoted attributes (what XML forbids becomes U+FFFD)."""
    return str(escape(_NOT_XML.sub("\ufffd", text)))
