"""The form of `nuboard artifact add` and of the viewer's New version: checks, metadata, review.

Shared by the flag path (check_all reports every problem at once) and the wizard (one field
at a time). Nothing here prints or prompts; the only disk access is reading, through the
artifact API, what a name's next version would be and what a path holds.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Iterable, NamedTuple

from nuboard.errors import NuBoardError
from nuboard.files.layout import project_dir
from nuboard.remote.urls import is_url, shown

from . import TYPES, SourceInfo, inspect_source, split_artifact_name
from . import version_folders as folders

# How each field is named in the messages of check_all (the flags and arguments of the command).
FLAGS = {"target": "NAME", "path": "PATH", "store": "--ref/--copy", "type": "--type",
         "description": "--description", "checksum": "--checksum", "metadata": "--meta"}
STORES = ("copy", "reference")
META_TYPES = ("text", "int", "float", "bool", "json")     # as shown; 'str' is taken for 'text'
SIZE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")
EXAMPLE_TARGET = "datasets/fineweb-edu"
_ANY_PROJECT = "_"           # stands in for a project not known yet when a path is checked
_WHOLE = re.compile(r"[+-]?[0-9]+\Z")
_NUMBER = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")


class FieldError(ValueError):
    """One field's value is wrong; str() is the message shown after '  ✗ '."""


@dataclass
class AddForm:
    """The answers of `nuboard artifact add`, from flags or the wizard; None is not given yet."""
    target: str | None = None        # 'project/name' (project may nest: 'team/llm/name')
    path: str | None = None          # as the user wrote it (~ and $VARS kept)
    store: str | None = None         # 'copy' or 'reference'
    type: str | None = None          # dataset | model | checkpoint | report | other
    description: str | None = None
    checksum: bool | None = None
    metadata: list[tuple[str, object, str]] = field(default_factory=list)  # (key, value, typename) in entry order
    # The check of `path` (for the project and store above), kept so that add_artifact writes
    # its listing instead of listing the folder again; set by check_form and the wizard.
    source: SourceInfo | None = field(default=None, compare=False, repr=False)


class Target(NamedTuple):
    """What a 'project/name' resolves to: the number the new version would get."""
    project: str
    name: str
    next_version: int
    existing: bool                   # the name already has versions


# --- the fields ----------------------------------------------------------------------------------

def check_target(text: str, root: Path) -> Target:
    """Check 'project/name' and peek at the number its new version would get (nothing is claimed).

    Raises:
        FieldError: no project, a bad project or name, or a version given.
    """
    text = (text or "").strip()
    if not text:
        raise FieldError(f"give the project and the name, as in {EXAMPLE_TARGET}")
    if "/" not in text:
        raise FieldError(f"give the project too, as in {EXAMPLE_TARGET}")
    head, colon, tag = text.rpartition(":")
    if colon and "/" not in tag:
        raise FieldError(f"leave out ':{tag}': the new version is numbered for you "
                         f"(write {head!r}, as in {EXAMPLE_TARGET})")
    try:
        project, name = split_artifact_name(text)
    except NuBoardError as exc:
        raise FieldError(str(exc)) from None
    project_path = project_dir(Path(root), project)
    return Target(project, name, folders.next_version(project_path, name),
                  bool(folders.list_versions(project_path, name)))


def check_path(text: str, root: Path, project: str | None, *, reference: bool = False) -> SourceInfo:
    """Check a file or folder as add_artifact would, without writing; list what it holds.

    A relative path is relative to the current folder, as on the command line. With no
    project known yet, the checks that need one (a run's files) are left for later.

    Raises:
        FieldError: the path is empty, missing, unreadable, holds no files, or is refused.
    """
    text = (text or "").strip()
    if not text:
        raise FieldError("give the path of the file or folder to add")
    try:
        return inspect_source(project or _ANY_PROJECT, text, reference=reference, dir=root)
    except NuBoardError as exc:
        raise FieldError(str(exc)) from None
    except OSError as exc:
        raise FieldError(f"cannot read {text!r}: {exc.strerror or exc}; "
                         "give a file or folder you can read") from None


def url_copy_refused(path: str | None) -> str:
    """Why a URL cannot be copied: the line the form and the wizard show."""
    return (f"{shown(path or '')!r} is an object-store URL: it can only be referenced (give "
            "--ref); its objects' sizes, ETags and version ids are recorded")


def parse_store(text: str) -> str:
    """'copy' or 'reference' (also 'c', 'r', 'ref'), any case."""
    value = (text or "").strip().lower()
    if value in ("c", "copy"):
        return "copy"
    if value in ("r", "ref", "reference"):
        return "reference"
    raise FieldError(f"{text!r} is not copy or reference (copy copies the files into the "
                     "version; reference leaves them where they are)")


def parse_type(text: str) -> str:
    """One of dataset, model, checkpoint, report, other (any case)."""
    value = (text or "").strip().lower()
    if value in TYPES:
        return value
    if not value:
        raise FieldError(f"give a type: one of {', '.join(TYPES)}")
    raise FieldError(f"{text.strip()!r} is not one of {', '.join(TYPES)}")


def parse_description(text: str) -> str:
    """A description that says something (surrounding spaces dropped)."""
    value = (text or "").strip()
    if not value:
        raise FieldError("give a description: say in a few words what this version is")
    return value


def parse_yes_no(text: str, default: bool) -> bool:
    """y/yes/n/no (any case); an empty answer is the default."""
    value = (text or "").strip().lower()
    if not value:
        return default
    if value in ("y", "yes"):
        return True
    if value in ("n", "no"):
        return False
    raise FieldError(f"{text.strip()!r} is not y or n")


# --- metadata ------------------------------------------------------------------------------------

def parse_meta(text: str) -> tuple[str, object, str]:
    """'key=value' (typed as entered) or 'key:int=5' (typed as said) to (key, value, typename).

    As entered: whole numbers are int, other numbers float, true and false bool, the rest
    text. key:str=, key:int=, key:float=, key:bool= and key:json= set the type.

    Raises:
        FieldError: no '=', an empty key, an unknown type, or a value that is not of its type.
    """
    text = (text or "").strip()
    key, eq, raw = text.partition("=")
    if not eq:
        raise FieldError(f"{text!r} has no '=': write key=value, such as rows=1200000")
    key, raw = key.strip(), raw.strip()
    typename = None
    if ":" in key:
        base, _, wanted = key.rpartition(":")
        wanted = wanted.strip().lower()
        if wanted not in ("str", *META_TYPES):
            raise FieldError(f"{wanted!r} in {text!r} is not a type: use key:str=, key:int=, "
                             "key:float=, key:bool= or key:json=")
        key, typename = base.strip(), ("text" if wanted == "str" else wanted)
    if not key:
        raise FieldError(f"{text!r} has no key: write key=value, such as rows=1200000")
    if typename is None:
        value, typename = _typed_as_entered(raw, key)
    else:
        value = _typed_as_said(raw, typename, key)
    return key, value, typename


def _typed_as_entered(raw: str, key: str) -> tuple[object, str]:
    """The value and type name of an untyped entry: int, float, bool or text."""
    if _WHOLE.match(raw):
        return int(raw), "int"
    if _NUMBER.match(raw):
        return _finite(raw, key), "float"
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true", "bool"
    return raw, "text"


def _typed_as_said(raw: str, typename: str, key: str) -> object:
    """The value of key:<type>=raw; a FieldError names the value and what the type takes."""
    if typename == "text":
        return raw
    if typename == "int":
        if _WHOLE.match(raw):
            return int(raw)
        raise FieldError(f"{raw!r} is not a whole number, as {key}:int= needs (such as {key}:int=5)")
    if typename == "float":
        if _NUMBER.match(raw):
            return _finite(raw, key)
        raise FieldError(f"{raw!r} is not a number, as {key}:float= needs (such as {key}:float=0.5)")
    if typename == "bool":
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise FieldError(f"{raw!r} is not true or false, as {key}:bool= needs")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValueError as exc:
        raise FieldError(f"{raw!r} is not JSON, as {key}:json= needs ({exc}); "
                         f"such as {key}:json=[1, 2]") from None
    return value


def _finite(raw: str, key: str) -> float:
    """float(raw), refusing one too large to store (JSON has no infinity)."""
    value = float(raw)
    if not math.isfinite(value):
        raise FieldError(f"{raw!r} is too large a number for {key!r}: JSON has no infinity "
                         f"(write {key}:str={raw} to keep it as text)")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def meta_value_text(value: object) -> str:
    """A metadata value as JSON writes it: "12B", 1200000, true, [1, 2]."""
    return json.dumps(value, ensure_ascii=False)


def meta_text(key: str, value: object, typename: str) -> str:
    """One metadata line of the editor: 'tokens = "12B"  (text)'."""
    return f"{key} = {meta_value_text(value)}  ({typename})"


def meta_summary(items: Iterable[tuple[str, object, str]]) -> str:
    """The metadata on one line: 'tokens="12B" (text), rows=1200000 (int)'; 'none' when empty."""
    parts = [f"{key}={meta_value_text(value)} ({typename})" for key, value, typename in items]
    return ", ".join(parts) if parts else "none"


def meta_lines(items: list[tuple[str, object, str]]) -> list[str]:
    """The editor's numbered list: '  1  tokens = "12B"  (text)'; '  (no metadata)' when empty."""
    if not items:
        return ["  (no metadata)"]
    width = len(str(len(items)))
    return [f"  {i:>{width}}  {meta_text(*item)}" for i, item in enumerate(items, 1)]


def metadata_dict(items: Iterable[tuple[str, object, str]]) -> dict:
    """The metadata as add_artifact takes it; a later entry of a key wins."""
    return {key: value for key, value, _ in items}


def set_meta(items: list[tuple[str, object, str]], entry: tuple[str, object, str]
             ) -> list[tuple[str, object, str]]:
    """A copy of the list with the entry added, or replacing the entry of the same key in place."""
    out = list(items)
    for i, (key, _, _) in enumerate(out):
        if key == entry[0]:
            out[i] = entry
            return out
    return out + [entry]


def apply_meta_command(items: list[tuple[str, object, str]], text: str
                       ) -> list[tuple[str, object, str]]:
    """Apply one line of the metadata editor; return the new list (the old one is kept).

    'key=value' adds or replaces, '2 key=value' edits line 2, '-2' deletes line 2, and
    'key:int=5' sets the type.

    Raises:
        FieldError: a bad entry, or a line number the list does not have.
    """
    text = (text or "").strip()
    delete = re.fullmatch(r"-\s*([0-9]+)", text)
    if delete:
        index = _line_index(items, int(delete.group(1)))
        return items[:index] + items[index + 1:]
    edit = re.fullmatch(r"([0-9]+)\s+(\S.*)", text)
    if edit:
        index = _line_index(items, int(edit.group(1)))
        entry = parse_meta(edit.group(2))
        for i, (key, _, _) in enumerate(items):
            if key == entry[0] and i != index:
                raise FieldError(f"{key!r} is already line {i + 1}: edit that line, or delete one of them")
        return items[:index] + [entry] + items[index + 1:]
    return set_meta(items, parse_meta(text))


def _line_index(items: list, number: int) -> int:
    if 1 <= number <= len(items):
        return number - 1
    has = "the list is empty" if not items else f"the list has lines 1-{len(items)}"
    raise FieldError(f"there is no line {number}: {has}")


def parse_meta_flags(texts: Iterable[str]) -> tuple[list[tuple[str, object, str]], list[str]]:
    """Every --meta value parsed, in order (a repeated key replaces); and the problems, one each."""
    items: list[tuple[str, object, str]] = []
    problems = []
    for text in texts:
        try:
            items = set_meta(items, parse_meta(text))
        except FieldError as exc:
            problems.append(f"{FLAGS['metadata']}: {exc}")
    return items, problems


# --- how sizes, counts and the review read -------------------------------------------------------

def format_size(n: int) -> str:
    """A size in decimal units to 3 significant digits: '0 B', '999 B', '12.3 MB', '812 GB'."""
    if n < 0:
        return "-" + format_size(-n)
    value, unit = Decimal(int(n)), 0
    while True:
        while value >= 1000 and unit < len(SIZE_UNITS) - 1:
            value, unit = value / 1000, unit + 1
        places = 0 if unit == 0 else max(0, 3 - len(str(int(value))))
        rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
        if rounded >= 1000 and unit < len(SIZE_UNITS) - 1:
            value = rounded                 # 999.96 kB rounds up into the next unit
            continue
        text = f"{rounded:f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return f"{text} {SIZE_UNITS[unit]}"


def format_count(n: int, word: str = "file") -> str:
    """'1,204 files', '1 file', '0 files'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def source_summary(source: SourceInfo) -> str:
    """'1,204 files, 812 GB': what a path holds."""
    return f"{format_count(source.file_count)}, {format_size(source.total_bytes)}"


def target_summary(target: Target) -> str:
    """'will be fineweb-edu:v3', and ', a new artifact' for a name without versions."""
    return f"will be {target.name}:v{target.next_version}" + ("" if target.existing else ", a new artifact")


def checksum_text(form: AddForm) -> str:
    """'yes' or 'no' for a reference; a copy is always hashed; an object has its ETag."""
    if is_url(form.path):
        return "no (each object's ETag is its fingerprint)"
    if form.store == "copy":
        return "yes (a copy is always hashed)"
    return "yes" if form.checksum else "no"


REVIEW_LABELS = ("name", "path", "store", "type", "description", "checksum", "metadata")
REVIEW_FIELDS = ("target", "path", "store", "type", "description", "checksum", "metadata")


def review_lines(form: AddForm, target: Target, source: SourceInfo) -> list[str]:
    """The 7 numbered lines of the review, as '  1  name         datasets/fineweb-edu  (new version v3)'."""
    version = f"new version v{target.next_version}" if target.existing \
        else f"new artifact, v{target.next_version}"
    values = (f"{target.project}/{target.name}  ({version})",
              f"{form.path}  ({source_summary(source)})",
              form.store or "",
              form.type or "",
              form.description or "none",
              checksum_text(form),
              meta_summary(form.metadata))
    return [f"  {i}  {label:<13}{value}" for i, (label, value) in enumerate(zip(REVIEW_LABELS, values), 1)]


# --- the whole form at once ----------------------------------------------------------------------

_MISSING = {
    "target": f"missing {FLAGS['target']}, the project/name (such as {EXAMPLE_TARGET})",
    "path": f"missing {FLAGS['path']}, the file or folder to add",
    "store": "missing --ref or --copy (reference leaves the files where they are; copy copies them)",
    "type": f"missing {FLAGS['type']} (dataset, model, checkpoint, report or other)",
    "description": f"missing {FLAGS['description']} (what this version is)",
}


# What a path inside a run of the version's project gets when the type or description is left
# out: what promote_run_path gives (spec/artifacts.md, "From a run's files").
RUN_PATH_DEFAULTS = {"type": "other", "description": None}


class FormCheck(NamedTuple):
    """What check_form found: the problems, and the target and source when they passed."""
    problems: list[str]
    target: Target | None
    source: SourceInfo | None


def check_form(form: AddForm, root: Path) -> FormCheck:
    """Every problem of the form at once, one message each, naming the flag ([] when it is
    complete), with the checked target and source. The source is also kept in form.source
    when the form is complete, so add_artifact can write it without listing the path again.

    Required are the name, the path, the store, the type and the description; for a path
    inside a run of the project, the type and description are not (RUN_PATH_DEFAULTS: type
    other and no description, as promote_run_path). The messages come in the form's order:
    name, path, store, type, description.
    """
    target, target_problem = _check_field(form, "target", check_target, root)
    store_value, store_problem = _check_field(form, "store", parse_store)
    project = target.project if target else None
    source, path_problem = _check_field(form, "path", check_path, root, project,
                                        reference=store_value == "reference")
    if is_url(form.path) and not store_problem and not path_problem:
        if store_value == "copy":
            store_problem = f"{FLAGS['store']}: {url_copy_refused(form.path)}"
        elif form.checksum:
            store_problem = (f"{FLAGS['checksum']}: {shown(form.path)!r} is an object-store URL, "
                             "whose objects' ETags are their fingerprints: leave --checksum out")
    optional = in_run_of_project(source)
    _, type_problem = _check_field(form, "type", parse_type, optional=optional)
    _, description_problem = _check_field(form, "description", parse_description,
                                          optional=optional)
    problems = [p for p in (target_problem, path_problem, store_problem, type_problem,
                            description_problem) if p]
    form.source = source if not problems else None
    return FormCheck(problems, target, source)


def in_run_of_project(source: SourceInfo | None) -> bool:
    """Whether a checked path is inside a run of the version's project: then the type and
    the description may be left out (RUN_PATH_DEFAULTS), and the run is the producer."""
    return source is not None and source.run_id is not None


def check_all(form: AddForm, root: Path) -> list[str]:
    """check_form's problems: every one at once, naming the flag; [] when the form is complete."""
    return check_form(form, root).problems


def _check_field(form: AddForm, name: str, check, *args, optional: bool = False,
                 **kwargs) -> tuple[object, str | None]:
    """(the checked value, None), or (None, the message naming the flag) when missing (unless
    optional) or wrong."""
    value = getattr(form, name)
    if value is None:
        return None, None if optional else _MISSING[name]
    try:
        return check(value, *args, **kwargs), None
    except FieldError as exc:           # the messages are joined with '; ' and end in one '.'
        return None, f"{FLAGS[name]}: {str(exc).rstrip('.')}"
