"""nb.Table: rows of cells (numbers, text, images) logged as one Parquet file (issue 32).

    table = Table(columns=["prompt", "answer", "score"], data=[["2+2", "4", 1.0], ["1+1", "3", 0.0]])
    table = Table(dataframe=df)                     # a pandas DataFrame; its index is not kept

The constructor (on the training thread) checks every cell and copies the rows, so a caller
may change its lists afterwards; `encode()` (on the writer thread) writes the Parquet file
with pyarrow. A cell is None, a bool, an int (within int64), a float (NaN and infinities are
kept), a str (at most 1 MiB) or an nb.Image; numpy scalars become the Python value they hold.

Each column keeps one type in the file. A column whose cells are all of one kind (Nones aside)
is stored as that type: bool, int64, float64, string, or, for images, the text reference the
writer gives each image's own PNG file. ints beside floats make a float64 column when every
int is exact as a float (|i| <= 2**53). Any other mixture (a str beside a number, a bool beside
an int, an image beside a str) is a "mixed" column: each cell is stored as its JSON text
(`1`, `1.5`, `NaN`, `true`, `"a"`, `{"image": "<reference>"}`), so no value and no type is
lost. The Parquet schema's metadata holds, under b"nuboard", the JSON
{"format": 1, "columns": [{"name": ..., "kind": ...}, ...]} where kind is "null" (every cell
None), "bool", "int", "float", "string", "image" or "mixed", so a reader can tell an image
column from a text one and decode a mixed one.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media
from nuboard.media.image import Image

MAX_COLUMNS = 1_000
MAX_CELLS = 1_000_000
MAX_STR_BYTES = 1 << 20                 # one cell's text, UTF-8
MAX_TEXT_BYTES = 256 << 20              # all the table's text together, UTF-8
MAX_NAME_CHARS = 1_000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
EXACT_FLOAT_INT = 1 << 53               # ints up to this size are exact as float64
FORMAT = 1
SCHEMA_KEY = b"nuboard"

CELL_TYPES = "None, a bool, an int, a float, a str or an nb.Image"
KINDS = ("null", "bool", "int", "float", "string", "image", "mixed")


class Table(Media):
    """A table of rows logged as one Parquet file: `Table(columns=, data=)` or `Table(dataframe=)`.

    Args:
        columns: the column names, distinct non-empty strs (at most 1,000).
        data: the rows, a list of lists or tuples, each with one cell per column (or a 2-D
            numpy array). Without data the table has no rows.
        dataframe: a pandas DataFrame instead of columns and data; its column names are made
            strs, its index is dropped, and pandas' missing markers (None, pd.NA, NaT, NaN in a
            column that is not float) become None. NaN in a float column stays NaN.

    Raises:
        InvalidTypeError: an argument or a cell of a type a table cannot hold.
        InvalidArgumentError: a value outside its rule (duplicate or empty column names, a row of
            the wrong length, an int outside int64, a str over 1 MiB, over 1,000,000 cells).
    """
    kind = "table"
    in_log = False

    def __init__(self, columns: list[str] | None = None, data: Any = None, *, dataframe: Any = None) -> None:
        if dataframe is not None:
            if columns is not None or data is not None:
                raise InvalidArgumentError(
                    "nb.Table: give either dataframe= or columns= and data=, not both")
            names, cells = _from_dataframe(dataframe)
        else:
            if columns is None:
                if data is not None:
                    raise InvalidArgumentError(
                        "nb.Table: data= was given without columns=: name the columns, "
                        "e.g. nb.Table(columns=['a', 'b'], data=[[1, 2]])")
                raise InvalidArgumentError(
                    "nb.Table: give columns= and data=, or dataframe= (a pandas DataFrame)")
            names = _check_columns(columns, "columns=")
            cells = _from_rows(names, data)
        self._columns: tuple[str, ...] = names
        self._cells: list[list[Any]] = cells          # column-major, already checked and copied
        self._rows = len(cells[0])
        self._kinds: tuple[str, ...] = tuple(_column_kind(column) for column in cells)
        self._images = _distinct_images(cells, self._kinds, self._rows)

    # -- what it holds -----------------------------------------------------------------------
    @property
    def columns(self) -> tuple[str, ...]:
        """The column names, in order."""
        return self._columns

    @property
    def kinds(self) -> tuple[str, ...]:
        """Each column's kind: "null", "bool", "int", "float", "string", "image" or "mixed"."""
        return self._kinds

    @property
    def num_rows(self) -> int:
        """The number of rows."""
        return self._rows

    def images(self) -> list[Any]:
        """The images of the table's cells, each once (a cell that repeats an image holds the
        same object), in row-major order of first appearance (row 0's left to right, then row
        1's...): the n-th is the one `encode()` without store_image references as "image:<n>"."""
        return list(self._images)

    def __repr__(self) -> str:
        return f"nb.Table({len(self._columns)} columns, {self._rows} rows)"

    # -- the file ----------------------------------------------------------------------------
    def encode(self, store_image: Callable[[Any], str] | None = None) -> Encoded:
        """The table as Parquet bytes (written with pyarrow), "parquet", and
        {"columns": <count>, "rows": <count>, "images": <count>}.

        Args:
            store_image: called once per image (as `images()` lists them) with the nb.Image;
                returns the text the cell holds (the writer stores the image as a PNG file of
                its own and returns its path relative to the run folder). Without it the n-th
                image cell holds "image:<n>", the n-th of `images()`.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        refs: dict[int, str] = {}
        for n, image in enumerate(self._images):
            ref = store_image(image) if store_image is not None else f"image:{n}"
            if not isinstance(ref, str):
                raise InvalidTypeError(
                    f"nb.Table.encode: store_image returned a {type(ref).__name__}, not a str")
            refs[id(image)] = ref
        arrays = [_arrow_column(pa, column, kind, refs) for column, kind in zip(self._cells, self._kinds)]
        described = {"format": FORMAT, "columns": [{"name": name, "kind": kind}
                                                   for name, kind in zip(self._columns, self._kinds)]}
        schema = pa.schema([pa.field(name, array.type) for name, array in zip(self._columns, arrays)],
                           metadata={SCHEMA_KEY: json.dumps(described, ensure_ascii=False).encode()})
        sink = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), sink, compression="zstd")
        return Encoded(sink.getvalue().to_pybytes(), "parquet",
                       {"columns": len(self._columns), "rows": self._rows, "images": len(self._images)})


# -- checking what the user gave ---------------------------------------------------------------
def _check_columns(columns: Any, where: str) -> tuple[str, ...]:
    """The column names as a tuple, or the error naming the first bad one."""
    if not isinstance(columns, (list, tuple)):
        raise InvalidTypeError(
            f"nb.Table: {where} is a {_type_name(columns)}: give a list of column names (strs)")
    if not columns:
        raise InvalidArgumentError(f"nb.Table: {where} is empty: a table needs at least one column")
    if len(columns) > MAX_COLUMNS:
        raise InvalidArgumentError(
            f"nb.Table: {len(columns):,} columns is over the limit of {MAX_COLUMNS:,} columns")
    seen: set[str] = set()
    for j, name in enumerate(columns):
        if not isinstance(name, str):
            raise InvalidTypeError(
                f"nb.Table: column {j} is named by a {_type_name(name)} ({name!r}): column names are strs")
        if not name:
            raise InvalidArgumentError(f"nb.Table: column {j} has an empty name: give each column a name")
        if len(name) > MAX_NAME_CHARS:
            raise InvalidArgumentError(
                f"nb.Table: column {j}'s name has {len(name):,} characters, over the limit of "
                f"{MAX_NAME_CHARS:,}: {name[:40]!r}...")
        _check_unicode(name, f"nb.Table: column {j}'s name {name[:40]!r}")
        if name in seen:
            raise InvalidArgumentError(
                f"nb.Table: column name {name!r} appears twice (column {j}): column names must be distinct")
        seen.add(name)
    return tuple(str(name) for name in columns)


def _check_cells_count(rows: int, columns: int) -> None:
    if rows * columns > MAX_CELLS:
        raise InvalidArgumentError(
            f"nb.Table: {rows:,} rows x {columns:,} columns is {rows * columns:,} cells, over the limit "
            f"of {MAX_CELLS:,} cells: log a sample of the rows, or several tables")


def _from_rows(names: tuple[str, ...], data: Any) -> list[list[Any]]:
    """Checked, copied, column-major cells of `data`, a list of rows."""
    if data is None:
        data = []
    elif type(data).__module__ == "numpy" and type(data).__name__ == "ndarray":
        if data.ndim != 2:
            raise InvalidArgumentError(
                f"nb.Table: data= is a numpy array of shape {tuple(data.shape)}: give a 2-D array "
                "(rows x columns) or a list of rows")
        data = data.tolist()
    elif not isinstance(data, (list, tuple)):
        raise InvalidTypeError(
            f"nb.Table: data= is a {_type_name(data)}: give a list of rows, each a list or tuple of cells")
    width = len(names)
    _check_cells_count(len(data), width)
    for i, row in enumerate(data):
        if not isinstance(row, (list, tuple)):
            raise InvalidTypeError(
                f"nb.Table: row {i} is a {_type_name(row)}: give each row as a list or tuple of cells")
        if len(row) != width:
            raise InvalidArgumentError(
                f"nb.Table: row {i} has {len(row)} cells but there are {width} columns "
                f"{_short_names(names)}: give each row one cell per column")
    cells: list[list[Any]] = [[row[j] for row in data] for j in range(width)]   # the copy
    budget = _TextBudget()
    for j, column in enumerate(cells):
        _check_column(column, names[j], budget, missing_nan=False)
    return cells


def _from_dataframe(df: Any) -> tuple[tuple[str, ...], list[list[Any]]]:
    """Names and checked, copied, column-major cells of a pandas DataFrame."""
    cls = type(df)
    if not (cls.__module__.split(".")[0] == "pandas" and cls.__name__ == "DataFrame"):
        hint = ": convert it with .to_pandas()" if hasattr(df, "to_pandas") else ""
        raise InvalidTypeError(f"nb.Table: dataframe= takes a pandas DataFrame, not a {_type_name(df)}{hint}")
    rows, width = df.shape
    names = _check_columns([str(name) for name in df.columns], "the DataFrame's columns")
    _check_cells_count(rows, width)
    budget = _TextBudget()
    cells = []
    for j, name in enumerate(names):
        series = df.iloc[:, j]
        column = series.tolist()                   # Python scalars for numpy dtypes; a new list
        _check_column(column, name, budget, missing_nan=series.dtype.kind != "f")
        cells.append(column)
    return names, cells


class _TextBudget:
    """The UTF-8 bytes of all the table's text so far, against MAX_TEXT_BYTES."""
    def __init__(self) -> None:
        self.used = 0

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > MAX_TEXT_BYTES:
            raise InvalidArgumentError(
                f"nb.Table: the table's text is over {MAX_TEXT_BYTES >> 20} MiB in all: log fewer rows, "
                "or shorter text")


def _check_column(column: list[Any], name: str, budget: _TextBudget, missing_nan: bool,
                  first_row: int = 0) -> None:
    """Check (and, in place, make plain) each cell of one column: numpy scalars become Python
    values, pandas' missing markers None; NaN becomes None where `missing_nan`. Errors name
    the row as `first_row` plus the cell's index."""
    for i, value in enumerate(column, first_row):
        kind = type(value)
        if value is None or kind is bool:
            continue
        if kind is float:
            if missing_nan and value != value:
                column[i - first_row] = None
            continue
        if kind is int:
            if not INT64_MIN <= value <= INT64_MAX:
                raise InvalidArgumentError(f"nb.Table: row {i}, column {name!r}: {value} is outside int64 "
                                           f"(-2**63 to 2**63-1): give it as a float or a str")
            continue
        if kind is str:
            budget.spend(_check_text(value, i, name))
            continue
        if isinstance(value, Image):
            continue
        column[i - first_row] = _plain_cell(value, i, name, budget, missing_nan)


def _plain_cell(value: Any, i: int, name: str, budget: _TextBudget, missing_nan: bool) -> Any:
    """A cell that is not of a plain type, made plain (a numpy scalar, a subclass of int, float
    or str, a pandas missing marker), or the error naming it."""
    module = type(value).__module__.split(".")[0]
    if module == "pandas" and type(value).__name__ in ("NAType", "NaTType"):
        return None
    if module == "numpy":
        import numpy as np
        plain = value.item() if isinstance(value, np.generic) else value     # np.float32(0.5) -> 0.5
        if type(plain) in (bool, int, float, str):      # not a datetime, complex, bytes, longdouble
            column = [plain]
            _check_column(column, name, budget, missing_nan, first_row=i)
            return column[0]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _plain_int(int(value), i, name)
    if isinstance(value, float):
        plain = float(value)
        return None if missing_nan and math.isnan(plain) else plain
    if isinstance(value, str):
        plain = str(value)
        budget.spend(_check_text(plain, i, name))
        return plain
    if isinstance(value, Media):
        raise InvalidTypeError(
            f"nb.Table: row {i}, column {name!r}: an nb.{type(value).__name__} cannot be a table cell: "
            f"a cell is {CELL_TYPES}")
    raise InvalidTypeError(
        f"nb.Table: row {i}, column {name!r}: a {_type_name(value)} cannot be a table cell: a cell is "
        f"{CELL_TYPES} (convert it, e.g. with str())")


def _plain_int(value: int, i: int, name: str) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidArgumentError(f"nb.Table: row {i}, column {name!r}: {value} is outside int64 "
                                   f"(-2**63 to 2**63-1): give it as a float or a str")
    return value


def _check_text(text: str, i: int, name: str) -> int:
    """The UTF-8 size of one cell's text, or the error for text too long or not valid Unicode."""
    if text.isascii():
        size = len(text)
    else:
        size = len(_check_unicode(text, f"nb.Table: row {i}, column {name!r}: the str"))
    if size > MAX_STR_BYTES:
        raise InvalidArgumentError(
            f"nb.Table: row {i}, column {name!r}: a str of {size:,} bytes (UTF-8) is over the limit of "
            f"{MAX_STR_BYTES:,} bytes (1 MiB) per cell: shorten it, or log it as nb.Text")
    return size


def _check_unicode(text: str, what: str) -> bytes:
    """`text` as UTF-8, or the error for a lone surrogate (which no file can hold)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} holds a lone surrogate {text[exc.start]!r} at index {exc.start}: text must be "
            "valid Unicode (decode bytes with errors='replace')") from None


# -- kinds and the file ------------------------------------------------------------------------
def _cell_kind(value: Any) -> str:
    kind = type(value)
    if kind is bool:
        return "bool"
    if kind is int:
        return "int"
    if kind is float:
        return "float"
    if kind is str:
        return "string"
    return "image"                      # the one other kind a checked cell can be


def _column_kind(column: list[Any]) -> str:
    """One column's kind from its (plain) cells: see the module's docstring."""
    kinds = {_cell_kind(value) for value in column if value is not None}
    if not kinds:
        return "null"
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"int", "float"} and all(-EXACT_FLOAT_INT <= value <= EXACT_FLOAT_INT
                                         for value in column if type(value) is int):
        return "float"
    return "mixed"


def _arrow_column(pa: Any, column: list[Any], kind: str, refs: dict[int, str]) -> Any:
    """One column as a pyarrow array of its kind's type (None is null in each)."""
    if kind == "null":
        return pa.nulls(len(column))
    if kind == "bool":
        return pa.array(column, pa.bool_())
    if kind == "int":
        return pa.array(column, pa.int64())
    if kind == "float":
        return pa.array([None if value is None else float(value) for value in column], pa.float64())
    if kind == "string":
        return pa.array(column, pa.string())
    if kind == "image":
        return pa.array([None if value is None else refs[id(value)] for value in column], pa.string())
    return pa.array([None if value is None else _json_cell(value, refs) for value in column], pa.string())


def _json_cell(value: Any, refs: dict[int, str]) -> str:
    """A mixed column's cell as JSON text: 1, 1.5, NaN, Infinity, true, "a", {"image": "<ref>"}."""
    if _cell_kind(value) == "image":
        return json.dumps({"image": refs[id(value)]}, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _distinct_images(cells: list[list[Any]], kinds: tuple[str, ...], rows: int) -> list[Any]:
    """The image cells, each object once, in row-major order of first appearance."""
    columns = [column for column, kind in zip(cells, kinds) if kind in ("image", "mixed")]
    seen: set[int] = set()
    images = []
    for i in range(rows):
        for column in columns:
            value = column[i]
            if value is not None and _cell_kind(value) == "image" and id(value) not in seen:
                seen.add(id(value))
                images.append(value)
    return images


def _type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__name__ if module == "builtins" else f"{module.split('.')[0]}.{cls.__name__}"


def _short_names(names: tuple[str, ...]) -> str:
    shown = ", ".join(repr(name) for name in names[:5])
    return f"({shown}{', ...' if len(names) > 5 else ''})"
