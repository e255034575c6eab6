"""Caps on what is read from a file: a field larger than the API lets anyone write is cut to the
API's limit when it is indexed or shown, and a note says what was cut.

The API refuses 1,001 tags or a name of 300 characters, but a run.json or a manifest is a file
anyone can write: a million tags made every page that listed them take tens of seconds. Each
helper here takes the list `notes` and appends one line to it when it cuts something, such as
"tags: the first 1,000 of 1,000,000".
"""
from __future__ import annotations

import json
from typing import Any

CUT_TOO_DEEP = "(cut: nested too deep)"
MAX_NOTE = 200          # characters of one line of a "what was cut" note
MAX_NOTE_LINES = 20     # lines of such a note; the rest are counted


def count(n: int) -> str:
    return f"{n:,}"


def cap_notes(notes: list[str]) -> list[str]:
    """The notes of what was cut, themselves capped: the first MAX_NOTE_LINES lines, each cut to
    MAX_NOTE characters (a note names keys anyone can write), then how many more there were."""
    out = [n if len(n) <= MAX_NOTE else n[:MAX_NOTE - 3] + "..." for n in notes[:MAX_NOTE_LINES]]
    if len(notes) > MAX_NOTE_LINES:
        out.append(f"and {count(len(notes) - MAX_NOTE_LINES)} more fields cut")
    return out


def cap_text(value: str, limit: int, what: str, notes: list[str]) -> str:
    """A text of at most `limit` characters."""
    if len(value) <= limit:
        return value
    notes.append(f"{what}: the first {count(limit)} of {count(len(value))} characters")
    return value[:limit]


def cap_list(value: list, limit: int, what: str, notes: list[str], *, last: bool = False) -> list:
    """A list of at most `limit` items: the first ones, or the last ones with `last`."""
    if len(value) <= limit:
        return value
    notes.append(f"{what}: the {'last' if last else 'first'} {count(limit)} of {count(len(value))}")
    return value[-limit:] if last else value[:limit]


def cap_tags(value: list, limit: int, length: int, notes: list[str]) -> list[str]:
    """The first `limit` distinct tags, each cut to `length` characters; items that are not
    text are skipped. Stops reading once it has `limit`, so a million tags cost microseconds."""
    kept: dict[str, None] = {}
    long = 0
    for tag in value:
        if not isinstance(tag, str):
            continue
        if len(tag) > length:
            long += 1
            tag = tag[:length]
        kept[tag] = None
        if len(kept) >= limit:
            break
    if len(kept) >= limit and len(value) > limit:
        notes.append(f"tags: the first {count(limit)} of {count(len(value))}")
    if long:
        notes.append(f"tags: {count(long)} cut to {count(length)} characters")
    return list(kept)


def depth_of(value: Any, stop: int) -> int:
    """How deep lists and dicts nest in value (a scalar is 0), without recursion; the count
    stops once past `stop`. Only containers are looked into, so a list of a million numbers
    costs one pass over it."""
    deepest = 0
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        if len(children) > 64 and not any(issubclass(kind, (dict, list))    # at C speed: a long
                                          for kind in set(map(type, children))):  # list of numbers
            continue
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def cut_below(value: Any, depth: int) -> Any:
    """A copy of value in which what nests deeper than `depth` levels is CUT_TOO_DEEP."""
    if not isinstance(value, (dict, list)):
        return value
    if depth <= 0:
        return CUT_TOO_DEEP
    if isinstance(value, dict):
        return {k: cut_below(v, depth - 1) for k, v in value.items()}
    return [cut_below(v, depth - 1) for v in value]


def cap_object(value: dict, max_bytes: int, max_depth: int, what: str, notes: list[str], *,
               size_hint: int | None = None) -> dict:
    """An object at most `max_depth` levels deep and `max_bytes` as JSON: deeper parts become
    CUT_TOO_DEEP, and top-level keys past the size are left out.

    size_hint: an upper bound of its size (the file it came from); at most max_bytes, the
    size is not measured.
    """
    if depth_of(value, max_depth) > max_depth:
        value = cut_below(value, max_depth)
        notes.append(f"{what}: nested deeper than {max_depth} levels, cut below that")
    if size_hint is not None and size_hint <= max_bytes:
        return value
    kept: dict = {}
    size = 2
    for key, item in value.items():
        size += len(json.dumps({key: item}, ensure_ascii=False, default=str).encode("utf-8",
                                                                                   "replace")) - 1
        if size > max_bytes:
            notes.append(f"{what}: the first {count(len(kept))} of {count(len(value))} keys "
                         f"({max_bytes >> 20} MB as JSON)")
            return kept
        kept[key] = item
    return value
