"""TensorBoard's images, histograms and text, read from its Summary values as NuBoard media.

What each kind is in an event file, both forms (the legacy fields torch and tensorboardX write,
the tensors of TF2 and the plugins):

- image: `Summary.Image.encoded_image_string` (PNG, as TensorBoard stores it), or the images
  plugin's string tensor [width, height, image, image, ...]. Each image is kept as the bytes
  stored (nb.Image of PNG or JPEG bytes); several at one tag and step are several entries.
- histogram: `HistogramProto` (min, max, num, sum, bucket_limit: each bucket's right edge,
  bucket: its count), read as TensorBoard's histograms plugin reads it: bucket i spans
  [bucket_limit[i-1], bucket_limit[i]], the first from min, the last to max; or the plugin's
  [k, 3] tensor of (left, right, count). A bucket of no width (torch writes an empty one at the
  left) gives its count to its neighbour, so edges increase strictly as nb.Histogram wants; one
  where every value is the same number is the bin [v - 0.5, v + 0.5].
- text: the text plugin's string tensor: one string as it is, a 1-D tensor its strings a line
  each, a 2-D one a row a line, cells joined by ' | ' (TensorBoard shows a table). Bytes that
  are not UTF-8 are read with U+FFFD in their place.

An entry NuBoard refuses (a GIF, an image over 8,192 px a side, an infinite edge) is left out,
one note per kind with counts and the first reason.
"""
from __future__ import annotations

import math
from typing import Any

from nuboard.media.histogram import MAX_COUNTS_BINS, Histogram
from nuboard.media.image import Image
from nuboard.media.text import Text

from .source_runs import MediaPoint, describe

_LEGACY = {"image": "image", "histo": "histogram"}
_PLUGINS = {"images": "image", "histograms": "histogram", "text": "text"}
_PLURAL = {"image": "images", "histogram": "histograms", "text": "texts"}


def media_kind(kind: str | None, plugin: str) -> str | None:
    """The NuBoard media kind a Summary value is ("image", "histogram", "text"), or None when
    NuBoard does not import it (audio, PR curves, meshes, ...). kind: the value's oneof field."""
    if kind in _LEGACY:
        return _LEGACY[kind]
    if kind == "tensor":
        return _PLUGINS.get(plugin)
    return None


class MediaValues:
    """The media entries of one run as they are read; `points` (MediaPoints in the order read),
    and notes() for those left out."""

    def __init__(self) -> None:
        self.points: list[MediaPoint] = []
        self._refused: dict[str, dict] = {}         # kind -> {"tags": {tag: n}, "reason": first}

    def read(self, kind: str, value: Any, tag: str, step: int, wall: float, session: int = 0) -> None:
        """Add the entries of one Summary value of `kind` (from media_kind), in `session` of
        the NuBoard run."""
        try:
            if kind == "image":
                found = _images(value)
            elif kind == "histogram":
                found = [_histogram(value)]
            else:
                found = [Text(_text(value.tensor))]
        except Exception as exc:            # one odd entry is left out, named; the run goes on
            refused = self._refused.setdefault(kind, {"tags": {}, "reason": describe(exc)})
            refused["tags"][tag] = refused["tags"].get(tag, 0) + 1
            return
        self.points.extend(MediaPoint(tag, step, wall, kind, media, session) for media in found)

    def notes(self) -> list[str]:
        """One line per kind with entries NuBoard refused: how many, in which tags, and why."""
        lines = []
        for kind, refused in sorted(self._refused.items()):
            tags = refused["tags"]
            count, names = sum(tags.values()), sorted(tags)
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
            lines.append(f"{count:,} {kind if count == 1 else _PLURAL[kind]} in {len(names):,} "
                         f"tag{'s' * (len(names) != 1)} ({shown}) left out: NuBoard cannot keep "
                         f"them (the first: {refused['reason']})")
        return lines


def _images(value) -> list[Image]:
    if value.WhichOneof("value") == "image":
        return [Image(value.image.encoded_image_string)]
    strings = value.tensor.string_val            # [width, height, image, ...]
    if len(strings) < 2:
        raise ValueError(f"an images tensor of {len(strings)} strings: it needs a width and a height first")
    return [Image(data) for data in strings[2:]]


def _histogram(value) -> Histogram:
    """A legacy HistogramProto or the plugin's [k, 3] tensor as an nb.Histogram (via its record,
    so that a legacy histogram's min, max and sum are kept)."""
    if value.WhichOneof("value") == "histo":
        histo = value.histo
        limits, counts = list(histo.bucket_limit), list(histo.bucket)
        if len(limits) != len(counts):
            raise ValueError(f"a histogram of {len(limits)} bucket limits and {len(counts)} counts")
        if not counts:
            return _from_buckets([], None, None, None)
        lefts, rights = [histo.min, *limits[:-1]], [*limits[:-1], histo.max]
        return _from_buckets(list(zip(lefts, rights, counts)), histo.min, histo.max, histo.sum)
    from tensorboard.util import tensor_util
    array = tensor_util.make_ndarray(value.tensor)
    if array.size == 0:
        return _from_buckets([], None, None, None)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"a histograms tensor of shape {list(array.shape)}, not [k, 3]")
    return _from_buckets([tuple(row) for row in array.astype(float).tolist()], None, None, None)


def _from_buckets(buckets: list, low, high, total) -> Histogram:
    """nb.Histogram of (left, right, count) buckets as TensorBoard draws them.

    Empty buckets of no width are dropped (torch writes one left of the first value); where
    the rest follow each other, their edges are TensorBoard's. Otherwise (a bucket of no width
    that counts, buckets that overlap) each bucket ending left of the edges so far gives its
    count to its neighbour, so that the edges increase strictly."""
    buckets = [b for b in buckets if b[1] > b[0] or b[2]]
    if buckets and all(right > left for left, right, _ in buckets) and \
            all(buckets[i][0] == buckets[i - 1][1] for i in range(1, len(buckets))):
        kept_edges, kept = [buckets[0][0], *(r for _, r, _ in buckets)], [c for _, _, c in buckets]
    else:
        kept_edges, kept = _merged(buckets)
    while len(kept) > MAX_COUNTS_BINS:          # pairs of buckets merged: every count kept
        kept = [sum(kept[i:i + 2]) for i in range(0, len(kept), 2)]
        kept_edges = kept_edges[::2] + ([kept_edges[-1]] if len(kept_edges) % 2 == 0 else [])
    finite = [v if v is not None and math.isfinite(v) else None for v in (low, high, total)]
    if finite[0] is not None and finite[1] is not None and kept_edges and \
            not kept_edges[0] <= finite[0] <= finite[1] <= kept_edges[-1]:
        finite[0] = finite[1] = None
    return Histogram.from_record({"counts": kept, "edges": kept_edges, "min": finite[0],
                                  "max": finite[1], "sum": finite[2], "count": sum(kept), "dropped": 0})


def _merged(buckets: list) -> tuple[list, list]:
    """(edges, counts) of buckets whose edges repeat or go back, each count kept."""
    if not buckets:
        return [], []
    edges, counts, carry = [buckets[0][0]], [], 0.0
    for _, right, count in buckets:
        if right > edges[-1]:
            edges.append(right)
            counts.append(count + carry)
            carry = 0.0
        elif counts:
            counts[-1] += count
        else:
            carry += count                      # no bucket yet: it goes to the next one
    if not counts:
        return (_one_bin(buckets[0][0]), [carry]) if carry else ([], [])
    counts[-1] += carry
    return edges, counts


def _one_bin(value: float) -> list[float]:
    """[v - 0.5, v + 0.5], as nb.Histogram makes the bin of values all equal to v."""
    low, high = value - 0.5, value + 0.5
    return [low if low < value else math.nextafter(value, -math.inf),
            high if high > value else math.nextafter(value, math.inf)]


def _text(tensor) -> str:
    """The text plugin's string tensor as one str."""
    strings = [s.decode("utf-8", "replace") for s in tensor.string_val]
    shape = [d.size for d in tensor.tensor_shape.dim]
    if len(shape) == 2 and shape[1] > 0 and len(strings) == shape[0] * shape[1]:
        width = shape[1]
        return "\n".join(" | ".join(strings[i:i + width]) for i in range(0, len(strings), width))
    return "\n".join(strings)
