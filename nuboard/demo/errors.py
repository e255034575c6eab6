"""Errors of `nuboard demo`."""
from __future__ import annotations

from nuboard.errors import NuBoardError


class DemoConflictError(NuBoardError, FileExistsError):
    """The folder already holds something the demo would write over."""


class DemoFailedError(NuBoardError, RuntimeError):
    """One of the demo's runs ended other than as its story says."""
