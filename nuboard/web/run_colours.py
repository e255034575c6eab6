"""One colour per run, the same on every page: given per project in the order the runs were
made, from a palette whose colours stay apart and read on both themes; a colour the user set
(the project's colours.json, files/colours.py) wins.

The palette: 20 colours, no two closer than ΔE76 28 (CIELAB, D65), each at least 3.15:1
against the chart background of both themes (--card: #ffffff and #1b1f27, static/nuboard.css),
ordered so that each next colour is the farthest from those before it (the first runs of a
project get the most distinct ones). Runs take them in creation order, each the least used
colour so far (ties: palette order), so two runs share a colour only past the palette's size.
A palette colour near a user-set colour (closer than AVOID) starts as used once per such run,
so the other runs keep away from it as far as the palette allows. A run's ranks are shades of
its colour (rank 0 the colour itself). Groups on a chart take the palette in their order.

project_colours(project) is what pages use: computed once per catalog state (Catalogs.remember)
and colours.json's stamp, so a Runs page of 10,000 runs pays a dict lookup per run.
"""
from __future__ import annotations

import heapq
import itertools
import math
import zlib
from collections.abc import Iterable, Mapping

from nuboard.catalog import run_reads
from nuboard.files import colours as colour_file

from .context import catalogs, root_dir

PALETTE = (
    "#2378b4", "#cd7d0f", "#00a569", "#f55091", "#af73e6",
    "#a08c6e", "#829b00", "#0073e6", "#eb6441", "#009baf",
    "#b97d91", "#37785f", "#7d5fa0", "#b9379b", "#826e0a",
    "#646e7d", "#237d0f", "#be4b55", "#789650", "#a55f32",
)
AVOID = 20.0           # ΔE76: a palette colour this close to a user's colour counts as taken


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def rgb(colour: str) -> tuple[int, int, int]:
    """'#rrggbb' as (r, g, b)."""
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def luminance(colour: str) -> float:
    """WCAG's relative luminance of '#rrggbb'."""
    r, g, b = (_linear(c) for c in rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two colours (1 to 21)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def lab(colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB '#rrggbb'."""
    r, g, b = (_linear(c) for c in rgb(colour))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116
    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e(a: str, b: str) -> float:
    """ΔE76: the distance of two colours in CIELAB."""
    return math.dist(lab(a), lab(b))


def assign(order: Iterable[str], chosen: Mapping[str, str]) -> dict[str, str]:
    """Each run's colour, runs taken in `order` (creation order): a user's colour where
    `chosen` has one, else the least used palette colour (ties: palette order), palette
    colours near a user's colour counting as used once per such run of `order`."""
    order = list(order)
    if not chosen.keys() & set(order):          # the common case: the palette round and round
        return dict(zip(order, itertools.cycle(PALETTE)))
    used = [0] * len(PALETTE)
    near: dict[str, list[int]] = {}
    for run_id in order:
        colour = chosen.get(run_id)
        if colour is not None:
            if colour not in near:
                here = lab(colour)
                near[colour] = [i for i, mine in enumerate(_PALETTE_LAB)
                                if math.dist(here, mine) < AVOID]
            for i in near[colour]:
                used[i] += 1
    heap = [(n, i) for i, n in enumerate(used)]
    heapq.heapify(heap)
    out = {}
    for run_id in order:
        colour = chosen.get(run_id)
        if colour is None:
            n, i = heap[0]
            heapq.heapreplace(heap, (n + 1, i))
            colour = PALETTE[i]
        out[run_id] = colour
    return out


_PALETTE_LAB = [lab(c) for c in PALETTE]


def shade(colour: str, rank: int) -> str:
    """Rank `rank` of a run of this colour: rank 0 is the colour; later ranks alternate lighter
    and darker shades of it, each step a little further from it."""
    if rank <= 0:
        return colour
    step = (rank + 1) // 2
    amount = min(0.7, 0.22 * step)
    toward = (255, 255, 255) if rank % 2 else (0, 0, 0)
    mixed = [round(c + (t - c) * amount) for c, t in zip(rgb(colour), toward)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


class ProjectColours:
    """The colours of one project's runs (what project_colours returns)."""

    def __init__(self, order: Iterable[str], chosen: Mapping[str, str], note: str | None = None):
        """order: the run ids in creation order; chosen: colours.json's; note: what of
        colours.json was ignored (None when nothing)."""
        self._chosen = dict(chosen)
        self._colours = assign(order, self._chosen)
        self.note = note

    def run(self, run_id: str) -> str:
        """The run's colour, '#rrggbb' (a run the catalog does not hold yet: its user colour,
        else a palette colour picked by its id)."""
        found = self._colours.get(run_id) or self._chosen.get(run_id)
        if found is not None:
            return found
        return PALETTE[zlib.crc32(run_id.encode("utf-8", "surrogatepass")) % len(PALETTE)]

    def rank(self, run_id: str, rank: int) -> str:
        """The colour of the run's rank `rank`: a shade of the run's colour (shade)."""
        return shade(self.run(run_id), rank)

    def chosen(self, run_id: str) -> bool:
        """Whether the run's colour was set by a user."""
        return run_id in self._chosen


def _run_order(catalog) -> tuple[str, ...]:
    return tuple(r["run_id"] for r in run_reads.find_runs(
        catalog, None, now=0.0, sort="start", desc=False, fields=("run_id",), hidden=None))


def project_colours(project: str) -> ProjectColours:
    """The project's run colours (inside a request of the viewer): computed again only when
    a sync changed the catalog or colours.json was replaced."""
    from flask import current_app
    order = catalogs().remember(project, "run_colours.order", _run_order)
    root = root_dir()
    stamp = colour_file.stamp(root, project)
    cache = current_app.extensions.setdefault("nuboard_run_colours", {})
    found = cache.get(project)
    if found is not None and found[0] is order and found[1] == stamp:
        return found[2]
    chosen, note = colour_file.read_colours_noted(root, project)
    colours = ProjectColours(order, chosen, note)
    cache[project] = (order, stamp, colours)
    return colours


def group_colours(labels: list[str]) -> list[str]:
    """A colour for each group, in the order given: the palette's, shared only past its size."""
    return [PALETTE[i % len(PALETTE)] for i in range(len(labels))]

