"""The viewer's New version form as data: its fields read, checked and summed up.

It checks what `nuboard artifact add` checks (`nuboard.artifacts.form`), with the viewer's
own rules for a path: absolute, `~`, a `$VARIABLE`, or relative to the served folder; from a
run's Files tab, a path inside that run's folder. A URL is refused (the viewer never fetches
anything), and what a path holds is told only as a file count and a size.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from nuboard.artifacts.form import (
    FieldError,
    check_path,
    check_target,
    format_count,
    format_size,
    parse_description,
    parse_meta,
    parse_store,
    parse_type,
)
from nuboard.artifacts.manifest import read_manifest
from nuboard.artifacts.version_folders import latest_version, version_dir
from nuboard.files import layout
from nuboard.remote.urls import is_url

from .containment import OutsideError, resolve_inside

MANY_FILES = 10_000
META_KINDS = ("text", "number", "yes/no", "json")
META_ROWS = 6
MAX_META_ROWS = 200
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass
class VersionForm:
    """The fields as sent; `run` fixes the project to the run's and allows a copy."""
    project: str = ""
    name: str = ""
    path: str = ""
    store: str = "reference"
    type: str = ""
    description: str = ""
    checksum: bool = False
    metadata: list[tuple[str, str, str]] = field(default_factory=list)   # (key, kind, raw)
    run: str = ""
    anyway: bool = False
    meta_slots: list[int] = field(default_factory=list)   # the form row of each metadata entry
    touched: str = ""                   # the fields the user left: "name,path,meta-2"; "*" all

    @classmethod
    def from_fields(cls, fields, project: str) -> "VersionForm":
        meta, slots = [], []
        for i in range(meta_row_count(fields)):
            key = (fields.get(f"meta_key_{i}") or "").strip()
            raw = fields.get(f"meta_value_{i}") or ""
            if key or raw.strip():
                meta.append((key, fields.get(f"meta_kind_{i}") or "text", raw))
                slots.append(i)
        run = (fields.get("run") or "").strip()
        return cls(project=project if run else (fields.get("project") or project).strip(),
                   name=(fields.get("name") or "").strip(), path=fields.get("path") or "",
                   store=(fields.get("store") or "reference") if run else "reference",
                   type=fields.get("type") or "", description=fields.get("description") or "",
                   checksum=fields.get("checksum") in ("1", "on", "true", "yes"),
                   metadata=meta, run=run, anyway=fields.get("anyway") == "1",
                   meta_slots=slots, touched=(fields.get("touched") or "")[:4000])

    def left(self, slot: str) -> bool:
        """Whether the user left the field of `slot` (or submitted the form)."""
        names = self.touched.split(",")
        return "*" in names or slot in names


def meta_row_count(fields) -> int:
    """How many metadata rows the form sent (meta_rows; 6 when it is missing or not a number)."""
    rows = fields.get("meta_rows", "")
    return min(int(rows), MAX_META_ROWS) if rows.isdigit() else META_ROWS


@dataclass
class Checked:
    """What the checks found: a message per field (None when fine), and what they resolved."""
    problems: dict[str, str] = field(default_factory=dict)
    row_problems: dict[int, str] = field(default_factory=dict)   # by place in form.metadata
    notes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    target: object = None
    source: object = None
    metadata: dict = field(default_factory=dict)
    same_as: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def resolve_path(text: str, root: Path, run_dir: Path | None) -> str:
    """The path to check: from a run, inside its folder; else as written, or under root."""
    text = (text or "").strip()
    if not text:
        raise FieldError("give the path of a file or folder")
    if _URL.match(text):
        raise FieldError(f"{text[:80]!r} is a URL: the viewer never fetches anything; give a "
                         "file or folder on this machine")
    if "\x00" in text:
        raise FieldError("the path holds a NUL character")
    if run_dir is not None:
        try:
            return str(resolve_inside(run_dir, text.strip("/")))
        except OutsideError:
            raise FieldError(f"{text[:80]!r} is not a file or folder inside the run's folder") \
                from None
    if text.startswith(("/", "~", "$")):
        return text
    return os.path.join(str(root), text)


def metadata_of(rows: list[tuple[str, str, str]]) -> tuple[dict, dict[int, str]]:
    """The typed metadata of the form's rows, and a message per bad row (by its place)."""
    out, problems = {}, {}
    for place, (key, kind, raw) in enumerate(rows):
        if not key:
            problems[place] = f"the value {raw[:40]!r} has no key"
            continue
        if ":" in key or "=" in key:
            problems[place] = f"key {key[:40]!r}: a key cannot hold ':' or '='"
            continue
        try:
            if kind == "number":
                _, value, typename = parse_meta(f"{key}={raw.strip()}")
                if typename not in ("int", "float"):
                    raise FieldError(f"{raw.strip()[:40]!r} is not a number, as {key} needs")
            elif kind == "yes/no":
                answer = raw.strip().lower()
                if answer not in ("yes", "no", "true", "false"):
                    raise FieldError(f"{raw.strip()[:40]!r} is not yes or no, as {key} needs")
                value = answer in ("yes", "true")
            elif kind == "json":
                _, value, _ = parse_meta(f"{key}:json={raw}")
            else:
                value = raw
        except FieldError as exc:
            problems[place] = str(exc)
            continue
        out[key] = value
    return out, problems


def check_form(form: VersionForm, root: Path, *, read_data: bool = True) -> Checked:
    """Every field checked at once, with the path's file count and size, and the warnings:
    entries left out (dangling links, FIFOs, sockets, devices), 10,000 files or more, and
    files the same as the artifact's latest version.

    read_data=False (the check as the user types) never reads the files' contents: against a
    copied latest version, whose manifest has SHA-256 but no times, sameness is then left to
    the review.
    """
    checked = Checked()
    run_dir = None
    if form.run:
        run_dir = layout.run_dir(root, form.project, form.run)
        if not (run_dir / layout.RUN_JSON).is_file():
            checked.problems["path"] = f"run {form.run!r} not found in project {form.project!r}"
            run_dir = None
    target_text = f"{form.project}/{form.name}" if form.name.strip() else ""
    try:
        checked.target = check_target(target_text, root)
        checked.notes["name"] = (f"will be {form.name}:v{checked.target.next_version}"
                                 + ("" if checked.target.existing else " (a new artifact)"))
    except FieldError as exc:
        checked.problems["name"] = str(exc) if form.name.strip() else "give a name"
    try:
        store = parse_store(form.store)
    except FieldError as exc:
        checked.problems["store"] = str(exc)
        store = "reference"
    if is_url(form.path.strip()):
        checked.problems["path"] = (
            "a URL (object storage) is added from Python (nb.add_artifact(..., reference=True)) "
            "or with 'nuboard artifact add --ref', not from the viewer")
    if "path" not in checked.problems:
        try:
            given = resolve_path(form.path, root, run_dir)
            checked.source = check_path(given, root, form.project or None,
                                        reference=store == "reference")
            src = checked.source
            checked.notes["path"] = (f"{format_count(src.file_count)}, "
                                     f"{format_size(src.total_bytes)} at {src.real}")
            if src.left_out:                     # dangling links, FIFOs, sockets, devices
                checked.warnings.append(src.left_out_warning)
            if src.file_count >= MANY_FILES:
                checked.warnings.append(
                    f"{src.file_count:,} files: every use_artifact checks each one; consider "
                    "packing them into shards (tar, Parquet, HDF5) and referencing those.")
        except FieldError as exc:
            checked.problems["path"] = str(exc)
    for key, parse in (("type", parse_type), ("description", parse_description)):
        try:
            parse(getattr(form, key))
        except FieldError as exc:
            checked.problems[key] = str(exc)
    checked.metadata, checked.row_problems = metadata_of(form.metadata)
    if checked.row_problems:
        checked.problems["metadata"] = "; ".join(checked.row_problems.values())
    if checked.target is not None and checked.source is not None:
        checked.same_as = same_as_latest(root, checked.target.project, checked.target.name,
                                         checked.source, read_data=read_data)
    return checked


def same_as_latest(root: Path, project: str, name: str, source, *, read_data: bool = True
                   ) -> int | None:
    """The latest version's number when its files are the source's: the same paths and sizes,
    and the same SHA-256 or modification time; else None (also when telling would mean
    hashing the source and read_data is False)."""
    project_path = layout.project_dir(root, project)
    number = latest_version(project_path, name)
    if number is None:
        return None
    doc = read_manifest(version_dir(project_path, name, number))
    if doc is None or len(doc["files"]) != source.file_count:
        return None
    listed = {e.get("path"): e for e in doc["files"] if isinstance(e, dict)}
    for rel, st in source.listing:
        entry = listed.get(rel)
        if entry is None or entry.get("size") != st.st_size:
            return None
        if entry.get("mtime") != st.st_mtime and doc.get("storage") == "reference":
            return None
        if doc.get("storage") == "copy" and entry.get("sha256") is None:
            return None
    if doc.get("storage") == "copy":
        if not read_data:
            return None
        from nuboard.artifacts.manifest import sha256_file
        for rel, _ in source.listing:
            path = source.real if source.single else source.real / rel
            if sha256_file(path) != listed[rel].get("sha256"):
                return None
    return number


FIELDS = ("name", "path", "store", "type", "description")


@dataclass(frozen=True)
class Message:
    """One line beside a field; kind is 'bad', 'good' or 'warning' (its CSS class)."""
    kind: str
    text: str


def field_messages(form: VersionForm, checked: Checked, *, live: bool) -> dict[str, list[Message]]:
    """The lines beside each field, by slot: 'name', 'path', 'store', 'type', 'description'
    and 'meta-<row>' for a metadata row.

    Live (the check as the user types), a problem is shown only for a field the user has left
    (form.left), so typing in the first field flags none of the others; after a submit
    (live=False) every problem is. What a good field resolved to is always shown. Live, a
    metadata entry's slot is the form row it came from; after a submit the page renders the
    rows again without the empty ones, so its place among them.
    """
    def shown(slot: str) -> bool:
        return not live or form.left(slot)

    out: dict[str, list[Message]] = {}
    for name in FIELDS:
        problem, note = checked.problems.get(name), checked.notes.get(name)
        if problem:
            out[name] = [Message("bad", f"✗ {name}: {_unprefixed(problem, name)}")] \
                if shown(name) else []
        else:
            out[name] = [Message("good", f"✓ {name}: {note}")] if note else []
    out["path"] += [Message("warning", f"⚠ {w}") for w in checked.warnings]
    if checked.same_as is not None and "path" not in checked.problems:   # else it says so
        out["path"].append(Message("warning", "⚠ the files are the same as "
                                              f"{form.name}:v{checked.same_as}"))
    for place, problem in checked.row_problems.items():
        row = form.meta_slots[place] if live and place < len(form.meta_slots) else place
        if shown(f"meta-{row}"):
            out[f"meta-{row}"] = [Message("bad", f"✗ {problem}")]
    return out


def flagged(messages: dict[str, list[Message]]) -> list[str]:
    """The slots with a problem shown, in the form's order, as a summary names them."""
    def label(slot: str) -> str:
        return f"metadata row {int(slot[5:]) + 1}" if slot.startswith("meta-") else slot
    return [label(slot) for slot, lines in messages.items()
            if any(m.kind == "bad" for m in lines)]


def _unprefixed(message: str, name: str) -> str:
    """'path '/x' does not exist' beside the path field reads "'/x' does not exist"."""
    return message[len(name) + 1:] if message.startswith(name + " ") else message
