"""Where a run's scalars are read from: data.parquet when it is current, else the event logs.

The one place that makes that choice (read_scalars, the catalog's summaries); the Charts
cache asks parquet.current_parquet_meta itself, as it slices data.parquet lazily.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from nuboard.files import layout

from .reader import RunReader, Scalar


def rank_scalars(run_dir: Path, rank: int = 0, keys: Iterable[str] | None = None, *,
                 parquet: bool = True) -> dict[str, Scalar]:
    """One rank's scalars (keys, or all): from data.parquet when it is present and was built
    from exactly the logs on disk (and `parquet` is True), else from the event logs."""
    if parquet and (run_dir / layout.PARQUET).is_file():
        from .parquet import read_parquet_if_current  # imported (with pyarrow) when one is read
        found = read_parquet_if_current(run_dir, keys, rank)
        if found is not None:
            return found
    reader = RunReader(run_dir, rank)
    reader.refresh()
    return reader.scalars(keys)


def read_scalars(path: "str | os.PathLike[str]", keys: "str | Iterable[str] | None" = None,
                 rank: int = 0) -> dict[str, Scalar]:
    """Read a run's scalars: {name: Scalar(steps, wall_times, values)}.

    Reads data.parquet when it is present and was built from exactly the logs on disk,
    else the event logs (also of a run that is still being written).

    Args:
        path: the run folder (run.path): one with a run.json or an event log.
        keys: the scalar names wanted (a str is one name); None for all.
        rank: which rank's logs.

    Raises:
        RunNotFoundError (a ValueError): path is missing or not a run folder.
        TypeError: keys that are not a str or an iterable of str; a rank that is not an int.
        ValueError: a negative rank.
    """
    path, keys = _check_read_args(path, keys, rank)
    return rank_scalars(path, rank, keys)


def read_media(path: "str | os.PathLike[str]", keys: "str | Iterable[str] | None" = None,
               rank: int = 0) -> list:
    """Read a run's media entries: a list of MediaEntry (eventlog/media_read.py), ordered by
    key, then step, then as logged, with the resume rule applied per key.

    Each entry has key, step, wall_time and kind ("image", "histogram", "text", "table",
    "audio"); path (the absolute path of its file: images, audio, tables, long text), value
    (the text, the histogram {"counts", "edges", "min", "max", "sum", "count", "dropped"},
    the table {"columns", "kinds", "rows"}; None for images and audio), caption, width,
    height and sample_rate (None where they do not apply).

    Args and Raises: as read_scalars (keys are media keys).
    """
    from .media_read import loaded, rank_media
    path, keys = _check_read_args(path, keys, rank)
    return loaded(rank_media(path, rank, keys))


def check_rank(rank: object) -> int:
    """A rank argument: an int from 0 (InvalidTypeError, InvalidArgumentError otherwise)."""
    from nuboard.errors import InvalidArgumentError, InvalidTypeError
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InvalidTypeError(f"rank must be an int, not {type(rank).__name__} ({rank!r:.80})")
    if rank < 0:
        raise InvalidArgumentError(f"rank {rank} is negative: ranks count from 0.")
    return rank


def check_keys(keys) -> list[str] | None:
    """`keys` of read_scalars and nb.history as a list of names (a str is one name), or None.

    Raises InvalidTypeError for keys that are not a str or an iterable of str.
    """
    from nuboard.errors import InvalidTypeError
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    try:
        keys = list(keys)
    except TypeError:
        raise InvalidTypeError(
            f"keys must be a scalar name or a list of names, not {type(keys).__name__} "
            f"({keys!r:.80}).") from None
    for key in keys:
        if not isinstance(key, str):
            raise InvalidTypeError(f"keys entry {key!r:.80} must be a str, not {type(key).__name__}.")
    return keys


def _check_read_args(path, keys, rank) -> tuple[Path, list[str] | None]:
    """read_scalars' arguments checked: the run folder, and keys as a list (or None)."""
    from nuboard.errors import InvalidTypeError, RunNotFoundError
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or a path, not {type(path).__name__} ({path!r:.80})")
    check_rank(rank)
    keys = check_keys(keys)
    path = Path(path)
    where = "Pass a run's folder (run.path, <dir>/<project>/runs/<run_id>)."
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise RunNotFoundError(f"no run folder {str(path)!r}: it {what}. {where}")
    if not (path / layout.RUN_JSON).exists() and not layout.list_logs(path):
        if (path / "runs").is_dir():
            where = f"It is a project folder: pass one of its runs, {str(path / 'runs')!r}/<run_id>."
        raise RunNotFoundError(
            f"{str(path)!r} is not a run folder: it has no {layout.RUN_JSON} and no event log. {where}")
    return path, keys
