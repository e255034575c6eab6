"""Naming rules: projects, run ids, scalar names, tags, prefixes; and new run ids."""
from __future__ import annotations

import hashlib
import os
import time
from typing import Iterable

from nuboard.errors import InvalidNameError, InvalidTypeError

from .layout import PROJECT_ENTRIES, nfc

MAX_SEGMENT = 128          # a project segment or a run id
MAX_SCALAR_NAME = 256
MAX_LABEL = 256            # run_name, group
MAX_TAG = 128
MAX_TAGS = 1000
MAX_NOTES = 1_000_000
RESERVED_DEFAULTS = ("system", "timing")
# Characters that reorder the text around them: refused in a run id or a project segment.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")


def _bad_chars(text: str) -> str | None:
    """Say what is wrong with the characters of a name, or None."""
    for ch in text:
        if ord(ch) < 32 or ord(ch) == 127:
            return "has a control character"
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return "is not valid UTF-8 (it has a lone surrogate)"
    return None


def _short(value: str) -> str:
    """A repr of a possibly huge string, cut so a message stays one readable line."""
    return repr(value) if len(value) <= 80 else repr(value[:60]) + f"... ({len(value)} characters)"


def check_folder_name(value: object, what: str) -> str:
    """Check one folder-name segment (a run id, a project segment); return it.

    Raises:
        InvalidTypeError: not a str.
        InvalidNameError: empty, '.', '..', a leading dot, '/', '\\', a control character,
            a bidirectional-formatting character, spaces at its ends, or over 128 characters.
    """
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str, not {type(value).__name__} ({value!r:.80})")
    if len(value) > MAX_SEGMENT:
        raise InvalidNameError(f"{what} {_short(value)} is too long: at most {MAX_SEGMENT} characters.")
    problem = None
    if not value:
        problem = "is empty"
    elif value in (".", ".."):
        problem = "is a relative folder name"
    elif value.startswith("."):
        problem = "starts with a dot"
    elif "/" in value or "\\" in value:
        problem = "has a '/' or '\\'"
    else:
        problem = _bad_chars(value) or _misleading(value)
    if problem:
        raise InvalidNameError(
            f"{what} {_short(value)} {problem}: it must be a safe folder name "
            f"(1-{MAX_SEGMENT} characters, no '/', '\\', control or bidirectional-formatting "
            "characters, leading dot, or spaces at its ends).")
    return value


def _misleading(text: str) -> str | None:
    """Say why a folder name would display as something it is not, or None."""
    if text.strip() != text:
        return "has spaces at its ends"
    for ch in text:
        if ch in BIDI_CONTROLS:
            return f"has a bidirectional-formatting character (U+{ord(ch):04X})"
    return None


def check_project(value: object) -> str:
    """Check a project name and return it in Unicode NFC; '/' nests projects, each segment a
    safe folder name.

    NFC and NFD spellings of one name ('café' typed on Linux or on a Mac) are one project:
    the name comes back in NFC, the spelling its folder has (layout.project_dir). A segment
    may not be a name the layout uses inside a project (runs, artifacts, ..., compared without
    case, as a case-insensitive file system would): 'llm/runs' would be a folder of project
    'llm' itself.
    """
    if not isinstance(value, str):
        raise InvalidTypeError(f"project must be a str, not {type(value).__name__} ({value!r:.80})")
    value = nfc(value)
    if len(value) > 4 * MAX_SEGMENT:
        raise InvalidNameError(f"project {_short(value)} is too long: at most {4 * MAX_SEGMENT} characters.")
    if not value:
        raise InvalidNameError("project '' is empty: pass a name such as 'llm' or 'team/llm'.")
    segments = value.split("/")
    for i, segment in enumerate(segments):
        if not segment:
            raise InvalidNameError(
                f"project {value!r} has an empty segment: use 'team/llm', without a leading, "
                "trailing or doubled '/'.")
        check_folder_name(segment, "project" if segment == value else f"project {value!r}: segment")
        if segment.lower() in PROJECT_ENTRIES:
            raise InvalidNameError(
                f"project {value!r} has the segment {segment!r}, a name NuBoard uses inside a "
                f"project folder ({', '.join(PROJECT_ENTRIES)}): pick another name, such as "
                f"{'/'.join(segments[:i] + [segment + '-1'] + segments[i + 1:])!r}.")
    return value


def check_prefix(value: object, what: str) -> str:
    """Check a system or timing prefix: one segment of a scalar name, without '/'."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str, not {type(value).__name__} ({value!r:.80})")
    if len(value) > 64:
        raise InvalidNameError(f"{what} {_short(value)} is too long: at most 64 characters.")
    problem = _bad_chars(value)
    if problem:
        raise InvalidNameError(f"{what} {_short(value)} {problem}: use one plain segment such as 'perf'.")
    if not value or "/" in value or value.strip() != value:
        raise InvalidNameError(
            f"{what} {_short(value)} is not one segment: it must be 1-64 characters, "
            "without '/' or spaces at its ends (such as 'perf').")
    return value


def check_scalar_name(value: object, reserved: Iterable[str]) -> str:
    """Check a scalar name: '/'-separated non-empty segments, not under a reserved prefix."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"scalar name must be a str, not {type(value).__name__} ({value!r:.80})")
    if len(value) > MAX_SCALAR_NAME:
        raise InvalidNameError(
            f"scalar name {_short(value)} is too long: at most {MAX_SCALAR_NAME} characters.")
    problem = _bad_chars(value)
    if not value:
        problem = "is empty"
    elif problem is None and "" in value.split("/"):
        problem = "has an empty segment"
    if problem:
        raise InvalidNameError(
            f"scalar name {_short(value)} {problem}: use '/'-separated segments such as 'train/loss'.")
    head = value.split("/", 1)[0]
    if head in reserved:
        raise InvalidNameError(
            f"scalar name {value!r} starts with {head!r}, which this run reserves for its own "
            f"scalars; pick another name, or pass system_prefix=/timing_prefix= to nb.init.")
    return value


def safe_scalar_name(text: str) -> str:
    """Any text as a name on the scalar naming rule, the same every time (another tracker's tag,
    a trainer's metric key): a control character or lone surrogate becomes '_', empty segments
    are dropped ('/a//b/' is 'a/b', '' is '_'), and a name over 256 characters keeps its first
    240 and ends in '~' and 8 hex digits of the text's SHA-1. A name the rule takes is kept."""
    clean = "".join("_" if ord(ch) < 32 or ord(ch) == 127 or 0xD800 <= ord(ch) <= 0xDFFF else ch
                    for ch in text)
    name = "/".join(part for part in clean.split("/") if part) or "_"
    if len(name) > MAX_SCALAR_NAME:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = name[:MAX_SCALAR_NAME - 16].rstrip("/") + "~" + digest
    return name


def check_label(value: object, what: str, limit: int = MAX_LABEL) -> str:
    """Check free text shown as a label (run_name, group, notes)."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str, not {type(value).__name__} ({value!r:.80})")
    if len(value) > limit:
        raise InvalidNameError(f"{what} {_short(value)} is too long: at most {limit} characters.")
    if what != "notes" and _bad_chars(value):
        raise InvalidNameError(f"{what} {_short(value)} {_bad_chars(value)}: use printable text.")
    if what == "notes":
        for ch in value:
            if 0xD800 <= ord(ch) <= 0xDFFF:
                raise InvalidNameError(f"notes {_short(value)} is not valid UTF-8 (a lone surrogate).")
    return value


def check_tags(value: object) -> list[str]:
    """Check a list of tags; return it without duplicates, in order."""
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidTypeError(
            f"tags must be a list of str, not {type(value).__name__} ({value!r:.80}); "
            "write tags=['baseline'].")
    if len(value) > MAX_TAGS:
        raise InvalidNameError(f"tags has {len(value)} tags: at most {MAX_TAGS}.")
    out: list[str] = []
    for tag in value:
        if not isinstance(tag, str):
            raise InvalidTypeError(f"tag {tag!r:.80} must be a str, not {type(tag).__name__}.")
        if len(tag) > MAX_TAG:
            raise InvalidNameError(f"tag {_short(tag)} is too long: at most {MAX_TAG} characters.")
        if _bad_chars(tag):
            raise InvalidNameError(f"tag {_short(tag)} {_bad_chars(tag)}: use printable text.")
        if not tag or tag.strip() != tag:
            raise InvalidNameError(
                f"tag {_short(tag)} is not a valid tag: 1-{MAX_TAG} characters, no control "
                "characters or spaces at its ends.")
        if tag not in out:
            out.append(tag)
    return out


def new_run_id(now: float | None = None) -> str:
    """A fresh run id: <YYYYMMDDTHHMM> in UTC, a dash, 8 random hex digits."""
    stamp = time.strftime("%Y%m%dT%H%M", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.urandom(4).hex()}"
