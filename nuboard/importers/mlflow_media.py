"""The images, tables and text of an MLflow run, read from its local artifact folder as media.

What MLflow (3.x, and 2.x's older names) leaves in a run's artifacts:

- `mlflow.log_image(image, key=, step=)`: `images/<key>+step+<step>+timestamp+<ms>+<uuid>.png`,
  the key's '/' written '~' (2.x: '%' between the parts and '#' for '/'), beside a smaller
  `...+compressed.webp` copy. Each full PNG is one image entry at its key and step, at its
  timestamp; where one key has several images at one step, the latest is kept (MLflow's UI
  shows that one) and a note counts the others.
- `mlflow.log_table(data, artifact_file)`: a .json file (pandas' orient="split": "columns" and
  "data") or a .parquet file, named in the run's tag `mlflow.loggedArtifacts` as type "table";
  image cells are {"type": "image", "filepath": ...} pointing at a PNG in the artifacts.
  One table entry at step 0.
- `mlflow.log_text(text, artifact_file)`: a file like any other; each .txt and .md file of the
  artifacts (outside images/, table_images/ and logged model folders, those holding an MLmodel)
  is one text entry at step 0.

A table or text entry's key is its artifact path without the extension ('eval/results.json' is
'eval/results'), with the extension where that name is taken by another entry. Its wall time is
the file's modification time. A file whose name is not UTF-8, or a link leading out of the
artifact folder, is not read. Files are read only when the run is written (MediaPoint values are
functions), so a store of many runs is never held in memory at once.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .source_runs import LATEST, MediaPoint, printable

IMAGES = "images"
TABLE_IMAGES = "table_images"
TEXT_SUFFIXES = (".txt", ".md")
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"
LOGGED_IMAGES = "mlflow.loggedImages"
MAX_TABLE_FILE = 256 << 20          # a table file larger than this is left out, with a note
_IMAGE_NAME = re.compile(r"(?P<key>.+?)([+%])step\2(?P<step>\d+)\2timestamp\2(?P<ms>\d+)\2"
                         r"(?P<uuid>[^+%]+)\.png\Z")


def read_media(folder: Path | None, tags: dict, start: float) -> tuple[list[MediaPoint], list[str]]:
    """(the run's media entries, notes on what is left out) from its artifact folder (None:
    not local). start: the run's start, the wall time of a file whose time is not a date."""
    if folder is None:
        return [], []
    notes: list[str] = []
    images, again = _images(folder, notes)
    if again:
        notes.append(f"{again:,} image{'s' * (again != 1)} logged again at a key and step left "
                     "out (the latest of each is kept)")
    taken = {point.name for point in images}
    files = [(path, "table") for path in _tables(folder, tags, notes)]
    files += [(path, "text") for path in _texts(folder)]
    others = []
    for path, kind in sorted(files, key=lambda f: f[0]):
        relative = path.relative_to(folder).as_posix()
        name = relative.rsplit(".", 1)[0]
        if name in taken:
            name = relative
        taken.add(name)
        others.append(MediaPoint(name, 0, _mtime(path, start), kind,
                                 (lambda p=path: _table(p, folder)) if kind == "table"
                                 else (lambda p=path: _text(p))))
    return images + others, notes


def _images(folder: Path, notes: list[str]) -> tuple[list[MediaPoint], int]:
    """The log_image entries (one per key and step, the latest) and how many were left out."""
    found: dict[tuple[str, int], tuple[int, str, Path]] = {}
    again = unnamed = 0
    try:
        names = os.listdir(folder / IMAGES)
    except OSError:
        return [], 0
    for name in sorted(names):
        match = _IMAGE_NAME.match(name)
        if match is None:
            continue
        if printable(name) != name:
            unnamed += 1
            continue
        if not _inside(folder / IMAGES / name, folder):      # a link out of the artifacts
            continue
        sep = "~" if match.group(2) == "+" else "#"
        key = match.group("key").replace(sep, "/")
        step, ms = int(match.group("step")), int(match.group("ms"))
        candidate = (ms, match.group("uuid"), folder / IMAGES / name)
        if (key, step) in found:
            again += 1
            candidate = max(candidate, found[key, step])
        found[key, step] = candidate
    if unnamed:
        notes.append(f"{unnamed:,} image{'s' * (unnamed != 1)} whose file name is not UTF-8 left out")
    points = [MediaPoint(key, step, ms / 1000, "image", lambda p=path: _image(p))
              for (key, step), (ms, _, path) in sorted(found.items())]
    return points, again


def _tables(folder: Path, tags: dict, notes: list[str]) -> list[Path]:
    """The table files the run's mlflow.loggedArtifacts tag names that are in its folder."""
    try:
        logged = json.loads(tags.get(LOGGED_ARTIFACTS) or "[]")
    except ValueError:
        notes.append(f"tables left out: its tag {LOGGED_ARTIFACTS} is not JSON")
        return []
    out = []
    for item in logged if isinstance(logged, list) else []:
        if not isinstance(item, dict) or item.get("type") != "table" or not isinstance(item.get("path"), str):
            continue
        path = folder / item["path"]
        if _inside(path, folder) and path.is_file() and printable(item["path"]) == item["path"]:
            out.append(path)
        else:
            notes.append(f"table {item['path']!r} left out: it is not in the artifact folder")
    return out


def _texts(folder: Path) -> list[Path]:
    """The .txt and .md files of the artifacts, those of images, table images and models aside."""
    out = []
    for current, subdirs, files in os.walk(folder):
        here = Path(current)
        if "MLmodel" in files:
            subdirs[:] = []
            continue
        if here == folder:
            subdirs[:] = [d for d in subdirs if d not in (IMAGES, TABLE_IMAGES)]
        subdirs.sort()
        out += [here / f for f in sorted(files) if f.lower().endswith(TEXT_SUFFIXES)
                and printable(str(here / f)) == str(here / f) and _inside(here / f, folder)
                and (here / f).is_file()]
    return out


def _image(path: Path):
    from nuboard.media.image import Image
    return Image(path)


def _text(path: Path):
    from nuboard.media.text import MAX_BYTES, Text
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"the text file {path.name!r} has {size:,} bytes: NuBoard keeps text "
                         f"of at most {MAX_BYTES:,}")
    return Text(path.read_bytes().decode("utf-8", "replace"))


def _table(path: Path, folder: Path):
    """A log_table file as an nb.Table: its columns and rows, image cells as nb.Image."""
    from nuboard.media.table import Table
    size = path.stat().st_size
    if size > MAX_TABLE_FILE:
        raise ValueError(f"the table file {path.name!r} has {size:,} bytes: at most {MAX_TABLE_FILE:,}")
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq
        found = pq.read_table(path)
        columns = [str(c) for c in found.column_names]
        rows = [list(row.values()) for row in found.to_pylist()]
    else:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("columns"), list) \
                or not isinstance(doc.get("data"), list):
            raise ValueError(f"the table file {path.name!r} has no 'columns' and 'data' lists")
        columns = [str(c) for c in doc["columns"]]
        rows = doc["data"]
    return Table(columns=columns, data=[[_cell(cell, folder) for cell in row] for row in rows])


def _cell(cell: Any, folder: Path) -> Any:
    """A table cell: an image cell as nb.Image of its full PNG; a list or dict as its JSON."""
    if isinstance(cell, dict) and cell.get("type") == "image" and isinstance(cell.get("filepath"), str):
        path = folder / cell["filepath"]
        if not _inside(path, folder):
            raise ValueError(f"an image cell points outside the artifacts: {cell['filepath']!r}")
        return _image(path)
    if isinstance(cell, (dict, list)):
        return json.dumps(cell, ensure_ascii=False, default=str)
    return cell


def _inside(path: Path, folder: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))
    except OSError:
        return False


def _mtime(path: Path, start: float) -> float:
    try:
        seconds = path.stat().st_mtime
    except OSError:
        return start
    return seconds if 0 <= seconds < LATEST else start
