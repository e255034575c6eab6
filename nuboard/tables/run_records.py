"""nb.runs: the runs a query matches, as a sequence of RunRecord with .to_arrow() and .to_pandas()."""
from __future__ import annotations

import contextlib
import datetime as dt
import gc
import os
import time
from pathlib import Path
from typing import Iterator, Sequence, overload

import pyarrow as pa

from nuboard.errors import import_extra
from nuboard.files import layout
from nuboard.files.names import check_project

from .project import check_query, project_root, synced_catalog
from .query_warn import warn_query
from .run_columns import RUN_SCHEMA, SUMMARIES, RunColumns, build_columns, run_configs

REPR_ROWS = 10


class RunRecord:
    """One run as nb.runs gives it: the same values as its row of to_arrow().

    Attributes:
        project, id, name, status ('lost' for a running run whose heartbeat stopped),
        created, ended (aware UTC datetimes; ended None until it ends), duration (seconds; a
        running run's so far), tags (a list), group, host, notes (None when unset).
        config: the flattened config, {'optimizer.lr': 0.001}, values as logged.
        scalars: rank 0's summaries, {'train/loss': {'last': .., 'min': .., 'max': ..}}.
        path: the run's folder (for nb.read_scalars).
    """

    __slots__ = ("project", "id", "name", "status", "created", "ended", "duration", "tags",
                 "group", "host", "notes", "config", "scalars", "path")

    def __init__(self, row: dict, config: dict, scalar_names: list[str], root: Path):
        for field in RUN_SCHEMA.names:
            setattr(self, field, row[field])
        self.config = config
        self.scalars = {name: {kind: row[f"{name}.{kind}"] for kind in SUMMARIES}
                        for name in scalar_names
                        if any(row[f"{name}.{kind}"] is not None for kind in SUMMARIES)}
        self.path = layout.run_dir(root, self.project, self.id)

    def __repr__(self) -> str:
        return (f"RunRecord(id={self.id!r}, name={self.name!r}, status={self.status!r}, "
                f"created={_when(self.created)!r}, tags={self.tags!r})")

    def _repr_html_(self) -> str:
        """The run in a notebook: status, config, last values, a link (nuboard/notebook.py)."""
        from nuboard.notebook import run_html
        return run_html(project=self.project, run_id=self.id, name=self.name,
                        status=self.status, config=self.config, folder=self.path)


class Runs(Sequence[RunRecord]):
    """The runs nb.runs found, newest first: len(), iteration, indexing (slices too: a list),
    .to_arrow() (one row a run) and .to_pandas()."""

    def __init__(self, project: str, query: str | None, columns: RunColumns, root: Path):
        self.project, self.query = project, query
        self._columns, self._table, self._root = columns, columns.table, root
        self._records: list[RunRecord] | None = None

    def to_arrow(self) -> pa.Table:
        """The runs as a pyarrow.Table, one row a run (the columns: docs/tables.md)."""
        return self._table

    def to_pandas(self):
        """The runs as a pandas.DataFrame, one row a run; MissingExtraError without pandas."""
        import_extra("pandas", "pandas", "to_pandas()")
        return self._table.to_pandas()

    def _all(self) -> list[RunRecord]:
        if self._records is None:
            names = self._columns.scalar_names
            self._records = [RunRecord(row, config, names, self._root) for row, config in
                             zip(self._table.to_pylist(), run_configs(self._columns))]
        return self._records

    def __len__(self) -> int:
        return self._table.num_rows

    @overload
    def __getitem__(self, i: int) -> RunRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[RunRecord]: ...

    def __getitem__(self, i):
        return self._all()[i]

    def __iter__(self) -> Iterator[RunRecord]:
        return iter(self._all())

    def _repr_html_(self) -> str:
        """The runs in a notebook: a table of the first 20 (nuboard/notebook.py)."""
        from nuboard.notebook import records_html
        return records_html(self.project, self.query, self[:20], len(self))

    def __repr__(self) -> str:
        query = f", query={self.query!r}" if self.query else ""
        head = f"<Runs of {self.project!r}{query}: {len(self)} run{'s' if len(self) != 1 else ''}"
        if not len(self):
            return head + ">"
        shown = self._table.slice(0, REPR_ROWS).select(["id", "name", "status", "created"]).to_pylist()
        width = max(len(r["name"]) for r in shown)
        lines = [f"  {r['id']}  {r['name']:<{width}}  {r['status']:<8}  {_when(r['created'])}"
                 for r in shown]
        more = [f"  ... and {len(self) - REPR_ROWS} more"] if len(self) > REPR_ROWS else []
        return "\n".join([head] + lines + more) + ">"


def _when(created: dt.datetime | None) -> str:
    return created.strftime("%Y-%m-%d %H:%M:%S") if created is not None else "-"


def runs(project: str, query: str | None = None, dir: "str | os.PathLike[str] | None" = None,
         hidden: bool | None = False) -> Runs:
    """The project's runs that the query matches, newest first (nuboard.runs has the docs).

    hidden: False (the default) leaves out the runs hidden in the viewer (the project's
    hidden.json), True gives only those, None every run. A key no run has, or a lowercase
    and/or no run name holds, is a QueryWarning (the query still runs).
    """
    now = time.time()
    project = check_project(project)
    root = project_root(project, dir)
    query = check_query(query, now)
    if hidden is not None and not isinstance(hidden, bool):
        from nuboard.errors import InvalidTypeError
        raise InvalidTypeError(f"hidden must be True, False or None, not {hidden!r:.80}")
    from nuboard.catalog.table_reads import run_table_rows

    with _no_cyclic_gc(), synced_catalog(root, project) as catalog:
        warn_query(catalog, query)
        rows = with_hidden(run_table_rows(catalog, query, now=now), root, project, hidden)
        columns = build_columns(rows, project, now)
    return Runs(project, query, columns, root)


def with_hidden(rows, root: Path, project: str, hidden: bool | None):
    """A TableRows read narrowed by the hidden mark (files/hidden_runs.py): hidden=False
    leaves the hidden runs out, True keeps only them, None keeps every run."""
    from nuboard.files.hidden_runs import read_hidden
    ids = read_hidden(root, project) if hidden is not None else frozenset()
    if hidden is None or (not ids and not hidden):
        return rows
    kept = [r for r in rows.runs if (r[1] in ids) == hidden]
    if len(kept) == len(rows.runs):
        return rows
    keep = {r[0] for r in kept}
    return type(rows)(kept, *([t for t in part if t[0] in keep]
                              for part in (rows.tags, rows.config, rows.scalars)))


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: the sync and the read make a tuple a catalog row
    (200,000 for 10,000 runs), none of them in a cycle, and each 700 of them would start a collection,
    some of them a full one over the whole heap (40-60 ms of the 0.5 s of 10,000 runs)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
