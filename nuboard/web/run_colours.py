"""One colour per run, the same on every page: a stable pick from a palette by the run's id.

The palette holds 20 colours chosen to stay apart from each other and to read on both the light
and the dark theme. A run's ranks are shades of its colour (rank 0 the colour itself).
"""
from __future__ import annotations

import zlib

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#3b5bdb", "#f59f00", "#0ca678", "#c2255c", "#6741d9",
    "#e8590c", "#1098ad", "#5c940d", "#a61e4d", "#495057",
)


def run_colour(run_id: str) -> str:
    """The run's colour, '#rrggbb': the same for the same id in every process and on every page."""
    return PALETTE[zlib.crc32(run_id.encode("utf-8")) % len(PALETTE)]


def rank_colour(run_id: str, rank: int) -> str:
    """Rank `rank` of the run: rank 0 is the run's colour; later ranks alternate lighter and darker
    shades of it, each step a little further from the base."""
    base = run_colour(run_id)
    if rank <= 0:
        return base
    step = (rank + 1) // 2
    amount = min(0.7, 0.22 * step)
    toward = (255, 255, 255) if rank % 2 else (0, 0, 0)
    channels = [int(base[i:i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(c + (t - c) * amount) for c, t in zip(channels, toward)]
    return "#" + "".join(f"{c:02x}" for c in mixed)
