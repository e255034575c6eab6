"""Moved: the reader now lives in nuboard.eventlog (reader, source). This name keeps old imports working."""
from __future__ import annotations

from nuboard.eventlog.reader import RunReader, Scalar
from nuboard.eventlog.source import read_scalars

__all__ = ["RunReader", "Scalar", "read_scalars"]
