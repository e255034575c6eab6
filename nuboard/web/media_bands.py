"""Histograms as TensorBoard's distributions: the values at fixed percentiles of each step's
counts, which the viewer draws as shaded bands (0-100, 7-93, 16-84, 31-69 around the median).

No Flask and no numpy here: a histogram is the dict its record holds (counts, edges, min, max:
nuboard/media/histogram.py), and a percentile is found by walking the cumulative counts and
interpolating linearly inside the bin it falls in, as TensorBoard's compress_histogram does.
The percentiles are TensorBoard's: the normal distribution's -inf, -1.5, -1, -0.5, 0, 0.5, 1,
1.5 and +inf sigma points, in basis points 0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

PERCENTILES = (0.0, 6.68, 15.87, 30.85, 50.0, 69.15, 84.13, 93.32, 100.0)
"""The percentiles of a distribution, low to high (about 0/7/16/31/50/69/84/93/100)."""
MAX_STEPS = 500
"""A distribution keeps at most this many steps of a run, evenly spread (the last one kept)."""


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def percentiles(histogram: Mapping[str, Any], at: Sequence[float] = PERCENTILES
                ) -> list[float] | None:
    """The values at the percentiles `at` (0..100, increasing) of a histogram's counts; None
    when it counted nothing (or its counts and edges do not fit together).

    Inside bin i, [edges[i], edges[i+1]), the count is taken as spread evenly. Percentile 0 is
    the histogram's min and 100 its max where the record knows them (made from values), else
    the outer edges of the first and last bins holding anything; every value is kept within
    those two.
    """
    counts, edges = histogram.get("counts"), histogram.get("edges")
    if not isinstance(counts, Sequence) or not isinstance(edges, Sequence):
        return None
    if len(counts) == 0 or len(edges) != len(counts) + 1:
        return None
    weights = [max(0.0, _finite(c) or 0.0) for c in counts]
    bounds = [_finite(e) for e in edges]
    if any(b is None for b in bounds):
        return None
    total = math.fsum(weights)
    if not total > 0:
        return None
    filled = [i for i, w in enumerate(weights) if w > 0]
    low = _finite(histogram.get("min"))
    high = _finite(histogram.get("max"))
    low = bounds[filled[0]] if low is None else low
    high = bounds[filled[-1] + 1] if high is None else high
    if high < low:
        low, high = high, low
    out = []
    cumulative = 0.0
    i = 0
    for p in at:
        target = total * min(max(p, 0.0), 100.0) / 100.0
        if p <= 0:
            out.append(low)
            continue
        if p >= 100:
            out.append(high)
            continue
        # the first bin whose cumulative count reaches the target (cumulative: before bin i)
        while i < len(weights) - 1 and cumulative + weights[i] < target:
            cumulative += weights[i]
            i += 1
        weight = weights[i]
        share = (target - cumulative) / weight if weight > 0 else 0.0
        value = bounds[i] + (bounds[i + 1] - bounds[i]) * min(max(share, 0.0), 1.0)
        out.append(min(max(value, low), high))
    return out


def spread_steps(count: int, limit: int = MAX_STEPS) -> list[int]:
    """Indices of `count` items to keep at most `limit` of them, evenly spread, first and last
    kept: what a distribution of a run with thousands of histograms draws."""
    if count <= limit:
        return list(range(count))
    if limit <= 1:
        return [count - 1]
    return sorted({round(k * (count - 1) / (limit - 1)) for k in range(limit)})


def distribution(steps: Sequence[int], histograms: Sequence[Mapping[str, Any]],
                 limit: int = MAX_STEPS) -> dict[str, list]:
    """One run's distribution over steps: {"steps": [...], "bands": [[values at PERCENTILES[0]
    per step], ...]} (len(PERCENTILES) lists, each as long as steps). Histograms that counted
    nothing are left out; at most `limit` steps are kept (spread_steps)."""
    kept = [(s, p) for s, h in zip(steps, histograms) if (p := percentiles(h)) is not None]
    kept = [kept[i] for i in spread_steps(len(kept), limit)]
    bands: list[list[float]] = [[] for _ in PERCENTILES]
    for _, values in kept:
        for band, value in zip(bands, values):
            band.append(value)
    return {"steps": [s for s, _ in kept], "bands": bands}
