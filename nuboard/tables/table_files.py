"""A table written to a .parquet or .csv file, whole or not at all (`nuboard export`)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from nuboard.errors import InvalidArgumentError
from nuboard.files.csv_cells import escape_formula
from nuboard.files.jsonfile import TEMP_PREFIX

SUFFIXES = (".parquet", ".csv")


def check_suffix(path: "str | os.PathLike[str]") -> str:
    """The file's suffix, lowercase: .parquet or .csv; else InvalidArgumentError."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidArgumentError(
            f"cannot tell the format of {str(path)!r}: name the file .parquet or .csv")
    return suffix


def csv_ready(table: pa.Table) -> pa.Table:
    """The table as CSV holds it: each list column (the run table's tags) as JSON text
    ('["a", "b"]'); each text cell and column name a spreadsheet would run as a formula with a
    leading "'" (files/csv_cells.py); numbers, times and every other cell as they are."""
    for i, field in enumerate(table.schema):
        if pa.types.is_list(field.type):
            text = [None if v is None else json.dumps(v, ensure_ascii=False)
                    for v in table.column(i).to_pylist()]
            table = table.set_column(i, pa.field(field.name, pa.string()), pa.array(text, pa.string()))
    for i, field in enumerate(table.schema):
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            column = table.column(i)
            if pa.types.is_dictionary(field.type):
                column = column.cast(kind)
            table = table.set_column(i, pa.field(field.name, kind), _escaped(column))
    names = [escape_formula(name) for name in table.column_names]
    return table.rename_columns(names) if names != table.column_names else table


def _escaped(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A text column with escape_formula applied to the cells that need it (few, usually:
    pyarrow finds them, Python rewrites only those)."""
    if not pc.any(pc.match_substring_regex(column, r"^[=+\-@\t\r]")).as_py():
        return column
    return pa.chunked_array([pa.array([None if v is None else escape_formula(v)
                                       for v in column.to_pylist()], column.type)])


def write_table(table: pa.Table, path: "str | os.PathLike[str]") -> Path:
    """Write the table to `path` (.parquet or .csv, by its suffix) through a temporary file in
    the same folder, renamed over it at the end: an interrupted write leaves no half file."""
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    path = Path(path)
    suffix = check_suffix(path)
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(3).hex()}")
    try:
        if suffix == ".parquet":
            pq.write_table(table, tmp, compression="zstd")
        else:
            csv.write_csv(csv_ready(table), tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
