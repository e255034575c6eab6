"""Runs and history as tables: nb.runs (one row a run) and nb.history (long form).

`import nuboard` loads this package only when nb.runs or nb.history is called (by
importlib.import_module), as it brings pyarrow and the catalog (SQLAlchemy) with it.
"""
from __future__ import annotations

from .history import HISTORY_SCHEMA, history
from .project import ProjectNotFoundError
from .query_warn import QueryWarning
from .run_columns import RUN_SCHEMA
from .run_records import RunRecord, Runs, runs
from .table_files import write_table

__all__ = ["runs", "history", "Runs", "RunRecord", "ProjectNotFoundError", "QueryWarning", "RUN_SCHEMA",
           "HISTORY_SCHEMA", "write_table"]
