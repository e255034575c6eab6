"""The Console tab: the end of files/output.log, rendered as a terminal would show it.

A carriage return goes back to the start of the line and later characters overwrite, so a
progress bar redrawn a thousand times shows once, in its final state; cursor-up (used by tqdm
for nested bars) goes back a line; erase-in-line erases; colours and every other escape
sequence are dropped. The output is plain text: escaping it for HTML is the template's job.
"""
from __future__ import annotations

import os
import re
from typing import BinaryIO, NamedTuple

from nuboard.files.jsonfile import NotRegularFileError, open_regular

DEFAULT_LIMIT = 2 * 1024 * 1024

# Dropped before rendering: escape sequences that neither move the cursor nor erase
# (colours and other CSI, OSC strings ended by BEL or ST or cut off by the end of the text,
# other escapes), then C0 and C1 controls other than tab, line feed, CR and backspace.
_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@H-JL-~]"
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|(?!\[[0-?]*[ -/]*[A-GK])[ -/]*[0-~]?)"
)
_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
# Rendered one by one: line feeds, backspaces, cursor moves (A-G) and erase in line (K).
# Carriage returns stay inside the text between them and are applied as a whole (_write).
_STEPS = re.compile(r"(\n|\x08|\x1b\[[0-?]*[ -/]*[A-GK])")


class ConsoleView(NamedTuple):
    """What the Console tab shows: lines of plain text and where they came from.

    Attributes:
        lines: the rendered lines, oldest first (no trailing empty line).
        size: the file's size in bytes when it was read (0 when it does not exist).
        truncated: earlier output was cut (only the last `limit` bytes were read).
        start: the byte offset in the file where the shown text starts.
        exists: the file exists (a script that printed nothing leaves none).
    """
    lines: list[str]
    size: int
    truncated: bool
    start: int = 0
    exists: bool = True


def read_console(path: "str | os.PathLike[str]", limit: int = DEFAULT_LIMIT) -> ConsoleView:
    """Read the last `limit` bytes of a console log and render them as a terminal would.

    When the file is longer, the text starts after the first line feed of that window (or,
    when it holds none, after its first carriage return), so no half line is shown. Bytes
    that are not UTF-8 become U+FFFD. A missing file gives no lines and exists=False.
    """
    try:
        with open_regular(path) as fh:
            return read_console_file(fh, limit)
    except FileNotFoundError:
        return ConsoleView([], 0, False, 0, False)
    except NotRegularFileError:               # a FIFO or device there: nothing to show
        return ConsoleView([], 0, False, 0, False)


def read_console_file(fh: BinaryIO, limit: int = DEFAULT_LIMIT) -> ConsoleView:
    """read_console of a file already open for reading in binary mode."""
    size = os.fstat(fh.fileno()).st_size
    start = max(0, size - limit)
    fh.seek(start)
    data = fh.read(size - start)
    truncated = start > 0
    if truncated:
        cut = data.find(b"\n")
        if cut < 0:
            cut = data.find(b"\r")
        if cut >= 0:
            data = data[cut + 1:]
            start += cut + 1
    return ConsoleView(render_console(data.decode("utf-8", errors="replace")), size, truncated,
                       start, True)


def render_console(text: str) -> list[str]:
    """Render terminal output to the lines a terminal would show (pure; no escaping).

    Handles '\\r' (back to column 0, later text overwrites), '\\n' ('\\r\\n' too), backspace,
    CSI erase in line (K: 0 to the end, 1 to the start, 2 the whole line), cursor up/down
    (A/B, E/F), forward/back (C/D) and to a column (G); drops colours, other CSI and OSC
    sequences, other escapes and other control characters.
    """
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub("", text)
    if "\x1b" not in text and "\x08" not in text:     # no cursor moves: line by line
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if "\r" in line:
                lines[i] = _write("", 0, line)[0]
        if lines[-1] == "":
            lines.pop()
        return lines
    parts = _STEPS.split(text)     # text, step, text, step, ..., text
    lines = []                     # the lines other than the cursor's, by row
    row = 0                        # the cursor's line; `cur` holds its text while we are on it
    cur = ""
    col = 0
    for i in range(0, len(parts) - 1, 2):
        if parts[i]:
            cur, col = _write(cur, col, parts[i])
        step = parts[i + 1]
        if step == "\n":                             # next line, column 0
            _store(lines, row, cur)
            row += 1
            cur = lines[row] if row < len(lines) else ""
            col = 0
        elif step == "\x08":                         # backspace
            if col:
                col -= 1
        else:                                         # CSI: erase in line, cursor moves
            final = step[-1]
            count = _number(step[2:-1])
            if final == "K":
                if not count:
                    cur = cur[:col]
                elif count == 1:
                    cur = " " * min(col + 1, len(cur)) + cur[col + 1:]
                elif count == 2:
                    cur = ""
            elif final in "ABEF":
                _store(lines, row, cur)
                if final in "AF":
                    row = max(0, row - max(1, count))
                else:
                    row = min(max(len(lines) - 1, row), row + max(1, count))
                cur = lines[row] if row < len(lines) else ""
                if final in "EF":
                    col = 0
            elif final == "C":
                col += max(1, count)
            elif final == "D":
                col = max(0, col - max(1, count))
            elif final == "G":
                col = max(0, count - 1)
    if parts[-1]:
        cur, col = _write(cur, col, parts[-1])
    _store(lines, row, cur)
    if lines and lines[-1] == "":
        lines.pop()                                   # the cursor's empty line after a final \n
    return lines


def _write(cur: str, col: int, seg: str) -> tuple[str, int]:
    """Write text at a column of a line; a '\\r' in it goes back to column 0.

    Returns the line and the new column. A run of carriage returns (a progress bar redrawn a
    thousand times) is folded first: the last part wins, and an earlier, longer part shows
    past its end, as on a terminal.
    """
    if "\r" in seg:
        parts = seg.split("\r")
        if parts[0]:
            cur, col = _put(cur, col, parts[0])
        last = parts[-1]
        over = last
        for part in reversed(parts[1:-1]):
            if len(part) > len(over):
                over += part[len(over):]
        cur, _ = _put(cur, 0, over)
        return cur, len(last)
    return _put(cur, col, seg)


def _put(cur: str, col: int, seg: str) -> tuple[str, int]:
    """Overwrite the line from a column with plain text (padding with spaces past its end)."""
    n = len(cur)
    if col == n:
        cur += seg
    elif col > n:
        cur += " " * (col - n) + seg
    else:
        cur = cur[:col] + seg + cur[col + len(seg):]
    return cur, col + len(seg)


def _store(lines: list[str], row: int, text: str) -> None:
    """Put the cursor line's text back in its row."""
    if row < len(lines):
        lines[row] = text
    else:
        lines.extend([""] * (row - len(lines)))
        lines.append(text)


def _number(params: str) -> int:
    """The first numeric parameter of a CSI sequence; 0 when it has none."""
    first = params.split(";", 1)[0]
    return int(first) if first.isdigit() else 0
