"""nb.Table (issue 32, item 1): what it accepts, what it refuses, and that the Parquet it encodes
reads back, through pyarrow.parquet, cell for cell as given."""
from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Media
from nuboard.media.image import Image
from nuboard.media.table import Table


def image(value: int = 0, size: tuple[int, int] = (2, 3)) -> Image:
    return Image(np.full((*size, 3), value, dtype=np.uint8))


def read(table: Table, store_image=None) -> tuple[pa.Table, list[str], dict]:
    """The encoded file read back by pyarrow.parquet: the table, each column's kind (from the
    schema's b"nuboard" metadata) and Encoded.meta."""
    encoded = table.encode(store_image) if store_image else table.encode()
    assert encoded.ext == "parquet"
    back = pq.read_table(io.BytesIO(encoded.data))
    described = json.loads(back.schema.metadata[b"nuboard"])
    assert described["format"] == 1
    assert [c["name"] for c in described["columns"]] == back.column_names
    return back, [c["kind"] for c in described["columns"]], encoded.meta


def rows_of(table: Table, store_image=None) -> list[list]:
    """The cells read back, decoded by their column's kind (a mixed column's JSON text parsed)."""
    back, kinds, _ = read(table, store_image)
    columns = []
    for kind, values in zip(kinds, back.columns):
        values = values.to_pylist()
        if kind == "mixed":
            values = [None if v is None else json.loads(v) for v in values]
        columns.append(values)
    return [list(row) for row in zip(*columns)]


def same(a, b) -> bool:
    """Equal cells: NaN equals NaN; otherwise equal value and type."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def assert_rows(got: list[list], want: list[list]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w)
        for j, (a, b) in enumerate(zip(g, w)):
            assert same(a, b), f"row {i}, column {j}: read {a!r}, logged {b!r}"


# -- round trips -----------------------------------------------------------------------------------
def test_each_kind_round_trips_exactly_with_its_parquet_type():
    rows = [
        [True, 0, 0.5, "plain", None],
        [False, 2**63 - 1, math.nan, "ünïcødé 漢字 🚀 e\u0301", None],
        [None, -(2**63), math.inf, "", None],
        [True, None, -math.inf, None, None],
        [False, 7, None, "x" * 1000, None],
    ]
    table = Table(columns=["b", "i", "f", "s", "n"], data=rows)
    back, kinds, meta = read(table)
    assert kinds == ["bool", "int", "float", "string", "null"] == list(table.kinds)
    assert back.schema.types == [pa.bool_(), pa.int64(), pa.float64(), pa.string(), pa.null()]
    assert meta == {"columns": 5, "rows": 5, "images": 0}
    assert_rows(rows_of(table), rows)
    assert back.column("f").null_count == 1          # NaN is kept as NaN, not made null


def test_ints_beside_floats_make_a_float_column_when_exact():
    table = Table(columns=["x"], data=[[0], [0.5], [2**53], [-(2**53)], [None]])
    back, kinds, _ = read(table)
    assert kinds == ["float"]
    assert back.column("x").to_pylist() == [0.0, 0.5, float(2**53), -float(2**53), None]


@pytest.mark.parametrize("cells", [
    [1, "1", None],                                  # a number beside text
    [True, 1, 0],                                    # a bool beside ints: True is not 1 here
    [2**53 + 1, 0.5],                                # an int no float holds exactly
    [1.5, "1.5", math.nan, math.inf, -math.inf, True, "ü"],
])
def test_a_mixed_column_keeps_each_value_and_type(cells):
    table = Table(columns=["m"], data=[[c] for c in cells])
    back, kinds, _ = read(table)
    assert kinds == ["mixed"] and back.schema.types == [pa.string()]
    assert_rows(rows_of(table), [[c] for c in cells])


def test_an_empty_table_has_its_columns_and_no_rows():
    back, kinds, meta = read(Table(columns=["a", "b"]))
    assert back.column_names == ["a", "b"] and back.num_rows == 0
    assert kinds == ["null", "null"] and meta == {"columns": 2, "rows": 0, "images": 0}


def test_numpy_scalars_and_arrays_become_python_values():
    rows = [[np.int64(3), np.float32(0.25), np.bool_(True), np.str_("s"), np.uint8(255)],
            [np.int8(-1), np.float64("nan"), np.bool_(False), np.str_("t"), np.uint64(2**63 - 1)]]
    table = Table(columns=list("abcde"), data=rows)
    assert table.kinds == ("int", "float", "bool", "string", "int")
    assert_rows(rows_of(table), [[3, 0.25, True, "s", 255], [-1, math.nan, False, "t", 2**63 - 1]])
    grid = Table(columns=["x", "y"], data=np.arange(6, dtype=np.int32).reshape(3, 2))
    assert_rows(rows_of(grid), [[0, 1], [2, 3], [4, 5]])


def test_subclasses_of_the_plain_types_are_stored_as_their_plain_value():
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    class Tag(str):
        pass

    table = Table(columns=["level", "tag"], data=[[Level.HIGH, Tag("t")]])
    assert_rows(rows_of(table), [[3, "t"]])


# -- image cells -----------------------------------------------------------------------------------
def test_image_cells_hold_the_reference_store_image_returns():
    cat, dog = image(10), image(20)
    table = Table(columns=["name", "picture"], data=[["cat", cat], ["none", None], ["dog", dog], ["cat", cat]])
    stored = []

    def store_image(img):
        stored.append(img)
        return f"media/t/0-{len(stored) - 1}.png"

    back, kinds, meta = read(table, store_image)
    assert kinds == ["string", "image"] and back.schema.types == [pa.string(), pa.string()]
    assert stored == [cat, dog] and table.images() == [cat, dog]      # a repeated image is stored once
    assert back.column("picture").to_pylist() == ["media/t/0-0.png", None, "media/t/0-1.png", "media/t/0-0.png"]
    assert meta == {"columns": 2, "rows": 4, "images": 2}
    png = stored[0].encode()
    assert png.ext == "png" and png.data.startswith(b"\x89PNG")


def test_without_store_image_images_are_numbered_in_row_major_order():
    a, b, c = image(1), image(2), image(3)
    table = Table(columns=["left", "right"], data=[[a, b], [None, c]])
    assert table.images() == [a, b, c]
    assert rows_of(table) == [["image:0", "image:1"], [None, "image:2"]]


def test_an_image_beside_text_is_a_mixed_cell_naming_its_reference():
    pic = image()
    table = Table(columns=["m"], data=[["caption"], [pic], [None]])
    assert table.kinds == ("mixed",)
    assert rows_of(table, lambda img: "media/m/1-0.png") == [["caption"], [{"image": "media/m/1-0.png"}], [None]]


def test_store_image_must_return_a_str():
    table = Table(columns=["p"], data=[[image()]])
    with pytest.raises(InvalidTypeError, match="store_image returned a int"):
        table.encode(lambda img: 3)


# -- a pandas DataFrame ----------------------------------------------------------------------------
def test_a_dataframe_round_trips_with_its_columns_made_str():
    df = pd.DataFrame({
        "text": ["a", None, "ü"],
        1: [1, 2, 3],
        "score": [0.5, math.nan, 1.5],
        "ok": [True, False, True],
        "count": pd.array([1, None, 3], dtype="Int64"),
        "obj": [np.int64(5), "five", None],
    }, index=[10, 20, 30])
    table = Table(dataframe=df)
    assert table.columns == ("text", "1", "score", "ok", "count", "obj")
    assert table.kinds == ("string", "int", "float", "bool", "int", "mixed")
    assert_rows(rows_of(table), [["a", 1, 0.5, True, 1, 5],
                                 [None, 2, math.nan, False, None, "five"],
                                 ["ü", 3, 1.5, True, 3, None]])


def test_a_dataframe_with_no_rows():
    table = Table(dataframe=pd.DataFrame({"a": pd.Series([], dtype="int64")}))
    back, kinds, meta = read(table)
    assert back.column_names == ["a"] and meta["rows"] == 0


# -- copies ----------------------------------------------------------------------------------------
def test_changing_the_rows_after_construction_changes_nothing():
    rows = [[1, "a"], [2, "b"]]
    table = Table(columns=["n", "s"], data=rows)
    before = rows_of(table)
    rows[0][0] = 99
    rows[1][1] = "changed"
    rows.append([3, "c"])
    assert rows_of(table) == before == [[1, "a"], [2, "b"]]


def test_changing_the_dataframe_after_construction_changes_nothing():
    df = pd.DataFrame({"n": [1, 2], "s": ["a", "b"]})
    table = Table(dataframe=df)
    df.loc[0, "n"] = 99
    df["s"] = ["x", "y"]
    df["new"] = [0, 0]
    assert rows_of(table) == [[1, "a"], [2, "b"]]


def test_changing_the_array_after_construction_changes_nothing():
    grid = np.zeros((2, 2), dtype=np.int64)
    table = Table(columns=["a", "b"], data=grid)
    grid[:] = 7
    assert rows_of(table) == [[0, 0], [0, 0]]


# -- refusals --------------------------------------------------------------------------------------
class Point:
    pass


BAD = [
    (dict(), InvalidArgumentError, "give columns= and data=, or dataframe="),
    (dict(data=[[1]]), InvalidArgumentError, "data= was given without columns="),
    (dict(columns=["a"], dataframe="df"), InvalidArgumentError, "either dataframe= or columns="),
    (dict(columns="abc", data=[]), InvalidTypeError, "columns= is a str: give a list of column names"),
    (dict(columns=[], data=[]), InvalidArgumentError, "columns= is empty"),
    (dict(columns=["a", 2]), InvalidTypeError, r"column 1 is named by a int \(2\)"),
    (dict(columns=["a", ""]), InvalidArgumentError, "column 1 has an empty name"),
    (dict(columns=["a", "b", "a"]), InvalidArgumentError, "column name 'a' appears twice"),
    (dict(columns=[f"c{i}" for i in range(1001)]), InvalidArgumentError, "1,001 columns is over the limit of 1,000"),
    (dict(columns=["x" * 1001]), InvalidArgumentError, "1,001 characters, over the limit of 1,000"),
    (dict(columns=["a\ud800"]), InvalidArgumentError, "lone surrogate"),
    (dict(columns=["a"], data={"a": [1]}), InvalidTypeError, "data= is a dict: give a list of rows"),
    (dict(columns=["a"], data=np.zeros(3)), InvalidArgumentError, r"shape \(3,\): give a 2-D array"),
    (dict(columns=["a"], data=[[1], 2]), InvalidTypeError, "row 1 is a int: give each row as a list or tuple"),
    (dict(columns=["a", "b"], data=[[1, 2], [1, 2], [3]]), InvalidArgumentError,
     r"row 2 has 1 cells but there are 2 columns \('a', 'b'\)"),
    (dict(columns=["a"], data=[[0]] * 1_000_001), InvalidArgumentError,
     "1,000,001 cells, over the limit of 1,000,000"),
    (dict(columns=["a", "n"], data=[[0, 1], [0, 2**63]]), InvalidArgumentError,
     "row 1, column 'n': 9223372036854775808 is outside int64"),
    (dict(columns=["n"], data=[[-(2**63) - 1]]), InvalidArgumentError, "outside int64"),
    (dict(columns=["n"], data=[[np.uint64(2**64 - 1)]]), InvalidArgumentError,
     "row 0, column 'n': 18446744073709551615 is outside int64"),
    (dict(columns=["s"], data=[["ok"], ["é" * (1 << 19) + "x"]]), InvalidArgumentError,
     "row 1, column 's': a str of 1,048,577 bytes"),
    (dict(columns=["s"], data=[["a\udc80b"]]), InvalidArgumentError,
     r"row 0, column 's': the str holds a lone surrogate '\\udc80' at index 1"),
    (dict(columns=["a", "c"], data=[[1, None], [2, {"k": 1}]]), InvalidTypeError,
     "row 1, column 'c': a dict cannot be a table cell"),
    (dict(columns=["c"], data=[[[1, 2]]]), InvalidTypeError, "row 0, column 'c': a list cannot be a table cell"),
    (dict(columns=["c"], data=[[b"png"]]), InvalidTypeError, "a bytes cannot be a table cell"),
    (dict(columns=["c"], data=[[1 + 2j]]), InvalidTypeError, "a complex cannot be a table cell"),
    (dict(columns=["c"], data=[[Point()]]), InvalidTypeError, "a test_media_table.Point cannot be a table cell"),
    (dict(columns=["c"], data=[[np.zeros(3)]]), InvalidTypeError, "a numpy.ndarray cannot be a table cell"),
    (dict(columns=["c"], data=[[None], [np.datetime64("2026-01-01")]]), InvalidTypeError,
     "row 1, column 'c': a numpy.datetime64 cannot be a table cell"),
    (dict(columns=["c"], data=[[np.complex64(1)]]), InvalidTypeError, "a numpy.complex64 cannot be a table cell"),
    (dict(columns=["c"], data=[[Table(columns=["x"])]]), InvalidTypeError, "an nb.Table cannot be a table cell"),
    (dict(dataframe={"a": [1]}), InvalidTypeError, "dataframe= takes a pandas DataFrame, not a dict"),
    (dict(dataframe=pd.Series([1])), InvalidTypeError, "not a pandas.Series"),
    (dict(dataframe=pd.DataFrame([[1, 2]], columns=[1, "1"])), InvalidArgumentError,
     "column name '1' appears twice"),
    (dict(dataframe=pd.DataFrame(index=[0, 1])), InvalidArgumentError, "the DataFrame's columns is empty"),
    (dict(dataframe=pd.DataFrame({"when": pd.to_datetime(["2026-01-01"])})), InvalidTypeError,
     "row 0, column 'when': a pandas.Timestamp cannot be a table cell"),
]


@pytest.mark.parametrize("kwargs, error, message", BAD, ids=[m[:40] for _, _, m in BAD])
def test_each_bad_input_is_one_clear_error(kwargs, error, message):
    with pytest.raises(error, match=message) as raised:
        Table(**kwargs)
    assert str(raised.value).startswith("nb.Table: ")


def test_a_table_over_256_mib_of_text_is_refused():
    cell = "x" * (1 << 20)                                       # 1 MiB: the most a cell holds
    with pytest.raises(InvalidArgumentError, match="the table's text is over 256 MiB"):
        Table(columns=["s"], data=[[cell]] * 257)


# -- the property: nothing logged is lost ----------------------------------------------------------
CELLS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
)


@given(st.integers(min_value=1, max_value=4).flatmap(
    lambda width: st.lists(st.lists(CELLS, min_size=width, max_size=width), max_size=12)
    .map(lambda rows: (width, rows))))
def test_any_cells_read_back_as_logged(shape):
    width, rows = shape
    table = Table(columns=[f"c{j}" for j in range(width)], data=rows)
    got = rows_of(table)
    for j, kind in enumerate(table.kinds):
        if kind == "float":                     # ints beside floats, each exact as a float
            for row in rows:
                if type(row[j]) is int:
                    row[j] = float(row[j])
    assert_rows(got, rows)


# -- import cost and speed -------------------------------------------------------------------------
def test_importing_the_table_module_pulls_no_heavy_library():
    probe = ("import sys, nuboard.media.table; "
             "print(sorted(m for m in ('numpy', 'pandas', 'PIL', 'torch', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_1000_by_10_table_is_made_and_encoded_quickly(capsys):
    rows = [[i, i * 0.5, f"row {i}", i % 2 == 0, None, -i, i / 3, "é" * 10, i > 500, 2**40 + i]
            for i in range(1000)]
    start = time.perf_counter()
    table = Table(columns=[f"c{j}" for j in range(10)], data=rows)
    made = time.perf_counter()
    encoded = table.encode()
    done = time.perf_counter()
    with capsys.disabled():
        print(f"\nnb.Table 1,000 x 10: constructed in {(made - start) * 1000:.1f} ms, encoded in "
              f"{(done - made) * 1000:.1f} ms, {len(encoded.data):,} bytes of Parquet")
    assert pq.read_table(io.BytesIO(encoded.data)).num_rows == 1000


def test_a_table_is_a_media_kept_in_a_file_of_its_own():
    table = Table(columns=["a"], data=[[1]])
    assert isinstance(table, Media) and table.kind == "table" and table.in_log is False
    assert table.columns == ("a",) and table.num_rows == 1
    with pytest.raises(NotImplementedError):
        table.record()
