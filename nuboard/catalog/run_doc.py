"""The fields of run.json that the catalog and the viewer read, checked by type.

A run.json that parses but holds a field of the wrong type (a `start_time` that is a number,
an input whose project is null) or that is nested deeper than MAX_DEPTH is not indexed: the
sync skips the run with the reason `check_run_doc` gives, and the viewer shows that reason
instead of the run. Fields nobody reads are not checked.
"""
from __future__ import annotations

from pathlib import Path

from nuboard.files import runjson

MAX_DEPTH = 100                  # deeper documents are skipped: nothing recursive can fail later

TEXT_FIELDS = ("name", "project", "group", "notes", "host", "python", "platform", "status",
               "start_time", "end_time")
OBJECT_FIELDS = ("config", "env", "parent", "prefixes")
LIST_FIELDS = ("sessions", "inputs", "outputs")
INT_FIELDS = ("world_size", "dropped_points")


def nesting_depth(doc, stop: int = MAX_DEPTH) -> int:
    """How deep lists and dicts nest in doc (a scalar is 0), counted without recursion;
    the count stops once past `stop`."""
    deepest = 0
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value) -> bool:
    return isinstance(value, str)


def _is_dict(value) -> bool:
    return isinstance(value, dict)


def _is_list(value) -> bool:
    return isinstance(value, list)


def _wrong(field: str, value, rule: str) -> str:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"run.json field {field!r} is {shown}, not {rule}"


def read_run_doc(folder: Path):
    """The run folder's run.json, parsed (any JSON value: check it with check_run_doc).

    Raises:
        FileNotFoundError: there is no run.json.
        OSError: it cannot be read (or is not a regular file).
        ValueError: it is not JSON, or nests too deep to parse.
    """
    return runjson.read_run(folder)


def check_run_doc(doc: dict) -> str | None:
    """Why a parsed run.json cannot be indexed or shown (None when its fields are usable)."""
    if nesting_depth(doc) > MAX_DEPTH:
        return f"run.json is nested more than {MAX_DEPTH} levels deep"
    for fields, usable, rule in ((TEXT_FIELDS, _is_str, "a string"), (OBJECT_FIELDS, _is_dict, "an object"),
                                 (LIST_FIELDS, _is_list, "a list"), (INT_FIELDS, _is_int, "a whole number")):
        for field in fields:
            value = doc.get(field)
            if value is not None and not usable(value):
                return _wrong(field, value, rule)
    tags = doc.get("tags")
    if tags is not None and not isinstance(tags, (str, list)):
        return _wrong("tags", tags, "a list of strings")
    for field in ("inputs", "outputs"):
        for i, ref in enumerate(doc.get(field) or []):
            why = _check_ref(ref)
            if why is not None:
                return f"run.json {field}[{i}] {why}"
    for i, session in enumerate(doc.get("sessions") or []):
        if not isinstance(session, dict):
            return _wrong(f"sessions[{i}]", session, "an object")
    parent = doc.get("parent") or {}
    if parent.get("run_id") is not None and not isinstance(parent["run_id"], str):
        return _wrong("parent.run_id", parent["run_id"], "a string")
    if parent.get("step") is not None and not _is_int(parent["step"]):
        return _wrong("parent.step", parent["step"], "a whole number")
    return None


def _check_ref(ref) -> str | None:
    """Why an entry of inputs/outputs is not {project: str, name: str, version: int}."""
    if not isinstance(ref, dict):
        return f"is {ref!r:.60}, not an object"
    for key in ("project", "name"):
        if not isinstance(ref.get(key), str):
            return f"has {key} {ref.get(key)!r:.60}, not a string"
    if not _is_int(ref.get("version")):
        return f"has version {ref.get('version')!r:.60}, not a whole number"
    return None
