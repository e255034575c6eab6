"""A table written to a .parquet or .csv file, whole or not at all (`nuboard export`)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

from nuboard.errors import InvalidArgumentError
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
    """The table with each list column (the run table's tags) as JSON text ('["a", "b"]'),
    which CSV can hold; every other column as it is."""
    for i, field in enumerate(table.schema):
        if pa.types.is_list(field.type):
            text = [None if v is None else json.dumps(v, ensure_ascii=False)
                    for v in table.column(i).to_pylist()]
            table = table.set_column(i, pa.field(field.name, pa.string()), pa.array(text, pa.string()))
    return table


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
