"""Naming rules of artifacts: names, types, version labels, and 'project/name:vN' specs."""
from __future__ import annotations

import re

from nuboard.errors import InvalidArgumentError, InvalidNameError, InvalidTypeError
from nuboard.files.names import check_project

TYPES = ("dataset", "model", "checkpoint", "report", "other")
MAX_NAME = 128
NAME_RULE = ("an artifact name is one segment of letters, digits, '.', '_' and '-' "
             f"(1-{MAX_NAME} characters, not starting with '.'), such as 'fineweb-edu'")
_NAME = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]*\Z")
_VERSION = re.compile(r"v([1-9][0-9]*)\Z")
MAX_VERSION = 2**63 - 1         # what a catalog (SQLite's int64) can hold


def check_artifact_name(value: object) -> str:
    """Check an artifact name; return it.

    Raises:
        InvalidTypeError: not a str.
        InvalidNameError: anything but one segment of letters, digits, '.', '_', '-'.
    """
    if not isinstance(value, str):
        raise InvalidTypeError(f"artifact name must be a str, not {type(value).__name__} ({value!r:.80})")
    if len(value) > MAX_NAME:
        raise InvalidNameError(f"artifact name {value[:60]!r}... is too long: {NAME_RULE}.")
    if not _NAME.match(value):
        hint = " (give the project separately, or as 'project/name' where a spec is taken)" \
            if "/" in value else ""
        raise InvalidNameError(f"artifact name {value!r} is not valid: {NAME_RULE}{hint}.")
    return value


def check_type(value: object) -> str:
    """Check an artifact type: one of dataset, model, checkpoint, report, other."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"artifact type must be a str, not {type(value).__name__} ({value!r:.80})")
    if value not in TYPES:
        raise InvalidArgumentError(
            f"artifact type {value!r} is not one of {', '.join(TYPES)}; pick the closest, or 'other'.")
    return value


def version_label(number: int) -> str:
    """The label of a version number: 3 -> 'v3'."""
    return f"v{number}"


def parse_version(value: object) -> int:
    """A version as an int from 'v3', 3 or '3'; raises InvalidArgumentError otherwise."""
    if isinstance(value, bool):
        raise InvalidTypeError(f"version must be 'vN' or an int, not {value!r}")
    if isinstance(value, int):
        if 1 <= value <= MAX_VERSION:
            return value
    elif isinstance(value, str):
        match = _VERSION.match(value) or (_VERSION.match("v" + value) if value.isdigit() else None)
        if match and int(match.group(1)) <= MAX_VERSION:
            return int(match.group(1))
    else:
        raise InvalidTypeError(f"version must be 'vN' or an int, not {type(value).__name__} ({value!r:.80})")
    raise InvalidArgumentError(f"version {value!r} is not valid: versions are v1, v2, ... (or 'latest').")


def version_of_folder(name: str) -> int | None:
    """The number of a version folder name ('v3' -> 3), or None for anything else (also for
    a number beyond 2**63-1, which no version ever gets: see folder_problem)."""
    match = _VERSION.match(name)
    if not match or len(match.group(1)) > 19:
        return None
    number = int(match.group(1))
    return number if number <= MAX_VERSION else None


def folder_problem(name: str) -> str | None:
    """Why a folder named like a version ('v99999999999999999999') is not one, or None."""
    if _VERSION.match(name) and version_of_folder(name) is None:
        return f"{name[:40]} is beyond the highest version number (2**63-1)"
    return None


def split_artifact_name(text: object, project: str | None = None) -> tuple[str, str]:
    """Split 'project/name' (project may nest: 'team/llm/name') into (project, name).

    A bare 'name' takes `project`; the part after the last '/' is the name.
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"artifact must be a str, not {type(text).__name__} ({text!r:.80})")
    if "/" in text:
        proj, name = text.rsplit("/", 1)
    elif project is None:
        raise InvalidArgumentError(
            f"artifact {text!r} names no project: write it as 'project/{text}' "
            "(such as 'datasets/fineweb-edu'), or pass project=.")
    else:
        proj, name = project, text
    return check_project(proj), check_artifact_name(name)


def parse_spec(spec: object, project: str | None = None) -> tuple[str, str, int | None]:
    """Parse 'project/name:vN', 'project/name:latest' or 'name:vN' into (project, name, version).

    The version is None for 'latest' (and when no ':' is given).
    """
    if not isinstance(spec, str):
        raise InvalidTypeError(f"artifact spec must be a str, not {type(spec).__name__} ({spec!r:.80})")
    text, sep, tag = spec.rpartition(":")
    if not sep:
        text, tag = spec, "latest"
    proj, name = split_artifact_name(text, project)
    if tag == "latest":
        return proj, name, None
    try:
        return proj, name, parse_version(tag)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"artifact spec {spec!r} has version {tag!r}: write 'project/name:vN' or "
            "'project/name:latest', such as 'datasets/fineweb-edu:v2'.") from None
