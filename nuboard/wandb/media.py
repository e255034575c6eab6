"""W&B's media types on NuBoard's media (nuboard/media/): wandb.Image, wandb.Histogram,
wandb.Audio and wandb.Html are nb.Image, nb.Histogram, nb.Audio and nb.Text made from W&B's
arguments; wandb.Table collects rows (add_data, add_column) and becomes an nb.Table when logged.

W&B's rules kept: an array or tensor given to Image is scaled as W&B scales it (a minimum below
0 shifts and stretches the values to [0, 1]; a maximum of at most 1 is multiplied by 255; then
clipped to 0..255), a numpy array is height x width x channels and a torch tensor channels x
height x width. Html is kept as the text of its HTML source and shown escaped, never rendered.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media.audio import Audio as _Audio
from nuboard.media.histogram import Histogram as _Histogram
from nuboard.media.image import Image as _Image
from nuboard.media.table import Table as _Table
from nuboard.media.text import Text as _Text

from .unsupported import Unsupported

MAX_BINS = 512                  # W&B's own limit of num_bins


class Image(_Image):
    """wandb.Image(data_or_path, mode=None, caption=None, ..., normalize=True): an array, a
    tensor, a PIL image, or the path of a PNG or JPEG file. boxes, masks and classes (W&B's
    overlays) are not supported."""

    def __init__(self, data_or_path: Any, mode: str | None = None, caption: str | None = None,
                 grouping: Any = None, classes: Any = None, boxes: Any = None, masks: Any = None,
                 file_type: str | None = None, normalize: bool = True) -> None:
        for name, value in (("classes", classes), ("boxes", boxes), ("masks", masks)):
            if value is not None:
                raise Unsupported(f"wandb.Image({name}=...) is not supported by nuboard.wandb: "
                                  "log the overlay drawn into the image, or as an image of its own.")
        data, layout = _pixels(data_or_path, normalize)
        super().__init__(data, caption, dataformats=layout)


def _pixels(data: Any, normalize: bool) -> tuple[Any, str | None]:
    """An array or tensor as W&B reads it: (uint8 array in HWC or HW, its layout); anything
    else as it is."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        arr = data.detach().cpu().numpy()
        if arr.ndim == 3:
            arr = arr.transpose(1, 2, 0)              # W&B: a tensor is CHW
    else:
        np = sys.modules.get("numpy")
        if np is None or not isinstance(data, np.ndarray):
            return data, None
        arr = data
    if arr.ndim not in (2, 3):
        return arr, None                              # nb.Image says what shapes it takes
    if normalize and arr.dtype.kind in "biuf" and arr.size:
        arr = _to_uint8(arr)
    return arr, "HWC" if arr.ndim == 3 else "HW"


def _to_uint8(arr):
    """W&B's Image.to_uint8: shift a negative range to [0, 1], scale [0, 1] by 255, clip."""
    import numpy as np
    arr = arr.astype(np.float64)
    low = np.nanmin(arr)
    if low < 0:
        span = np.nanmax(arr) - low
        arr = (arr - low) / span if span else arr - low
    if np.nanmax(arr) <= 1.0:
        arr = arr * 255
    return np.nan_to_num(arr, nan=0.0).clip(0, 255).astype(np.uint8)


class Histogram(_Histogram):
    """wandb.Histogram(sequence=None, np_histogram=None, num_bins=64): values counted in
    num_bins equal bins (at most 512), or np_histogram's (counts, edges) as they are."""

    def __init__(self, sequence: Any = None, np_histogram: Any = None, num_bins: int = 64) -> None:
        if np_histogram is not None:
            if not isinstance(np_histogram, (tuple, list)) or len(np_histogram) != 2:
                raise InvalidTypeError("wandb.Histogram: np_histogram must be the (counts, edges) "
                                       f"pair numpy.histogram returns, not {np_histogram!r:.80}")
            counts, edges = np_histogram
            super().__init__(counts=counts, edges=edges)
            return
        if sequence is None:
            raise InvalidArgumentError("wandb.Histogram needs sequence= (the values) or np_histogram=")
        if isinstance(num_bins, int) and not isinstance(num_bins, bool) and num_bins > MAX_BINS:
            raise InvalidArgumentError(f"wandb.Histogram: num_bins {num_bins} is over {MAX_BINS}, "
                                       "W&B's limit too")
        super().__init__(sequence, num_bins)


class Audio(_Audio):
    """wandb.Audio(data, sample_rate, caption=None): samples (a 1-D mono or 2-D array or
    tensor) and their rate. A file path (W&B reads any audio file) is not supported."""

    def __init__(self, data_or_path: Any, sample_rate: int | None = None,
                 caption: str | None = None) -> None:
        if isinstance(data_or_path, (str, os.PathLike)):
            raise Unsupported("wandb.Audio(path) is not supported by nuboard.wandb: read the file "
                              "and pass its samples and sample_rate.")
        if sample_rate is None:
            raise InvalidArgumentError("wandb.Audio needs sample_rate= with an array of samples")
        super().__init__(data_or_path, sample_rate, caption)


class Html(_Text):
    """wandb.Html(data): HTML source (a str, an open file, or the path of a .html file), kept
    as text and shown escaped: the viewer never renders a page a run logged."""

    def __init__(self, data: Any, inject: bool = True, data_is_not_path: bool = False) -> None:
        if hasattr(data, "read"):
            data = data.read()
        elif (isinstance(data, str) and not data_is_not_path and data.lower().endswith(".html")
              and os.path.isfile(data)):
            with open(data, encoding="utf-8", errors="replace") as fh:
                data = fh.read()
        if not isinstance(data, str):
            raise InvalidTypeError(f"wandb.Html takes a str of HTML, an open file or the path of "
                                   f"a .html file, not {type(data).__name__}")
        super().__init__(data)


class Table:
    """wandb.Table(columns=None, data=None, rows=None, dataframe=None, ...): rows of cells
    (numbers, text, None, wandb.Image) that add_data and add_column extend; it becomes an
    nb.Table (checked then) when logged."""

    def __init__(self, columns: Any = None, data: Any = None, rows: Any = None,
                 dataframe: Any = None, dtype: Any = None, optional: Any = True,
                 allow_mixed_types: bool = False) -> None:
        if dataframe is not None:
            self.columns = [str(c) for c in dataframe.columns]
            self.data = [list(row) for row in dataframe.itertuples(index=False)]
            return
        rows = data if data is not None else rows
        self.data = [list(row) for row in rows] if rows is not None else []
        if columns is None:
            width = len(self.data[0]) if self.data else 3
            columns = ["Input", "Output", "Expected"] if width == 3 else [f"c{i}" for i in range(width)]
        self.columns = list(columns)

    def add_data(self, *row: Any) -> None:
        """Append one row: a cell per column."""
        if len(row) != len(self.columns):
            raise InvalidArgumentError(f"wandb.Table.add_data: {len(row)} cells for "
                                       f"{len(self.columns)} columns {self.columns!r:.120}")
        self.data.append(list(row))

    def add_column(self, name: str, data: Any, optional: bool = False) -> None:
        """Add a column: its name and a cell per row."""
        data = list(data)
        if self.data and len(data) != len(self.data):
            raise InvalidArgumentError(f"wandb.Table.add_column {name!r}: {len(data)} cells for "
                                       f"{len(self.data)} rows")
        if not self.data:
            self.data = [[] for _ in data]
        self.columns.append(name)
        for row, cell in zip(self.data, data):
            row.append(cell)

    def get_column(self, name: str) -> list:
        """The cells of one column."""
        i = self.columns.index(name)
        return [row[i] for row in self.data]

    def to_media(self) -> _Table:
        """The nb.Table logged: every cell checked now."""
        return _Table(columns=self.columns, data=self.data)

    def __repr__(self) -> str:
        return f"wandb.Table({len(self.columns)} columns, {len(self.data)} rows)"
