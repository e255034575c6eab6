"""The fields of run.json that the catalog and the viewer read, checked by type and capped.

run.json is read by read_checked_run, for the index and the run page alike, through
files.documents (at most 64 MB, nested at most MAX_DEPTH levels). A run.json that parses but
holds a field of the wrong type (a `start_time` that is a number, an input whose project is
null, a session whose start_time is not text) is not indexed: the sync skips the run with the
reason `check_run_doc` gives, and the viewer shows that reason instead of the run. Fields
nobody reads are not checked.

A field larger than the API writes (1,001 tags, a 300-character name, a config of 17 MB) is
cut to the API's limit by `cap_run_doc`, for the catalog and the run page alike, with a note
of what was cut that both show.
"""
from __future__ import annotations

from pathlib import Path

from nuboard.files import caps, documents, layout
from nuboard.files.names import MAX_LABEL, MAX_NOTES, MAX_TAG, MAX_TAGS
from nuboard.recording.run_config import MAX_CONFIG_BYTES
from nuboard.recording.run_config import MAX_DEPTH as MAX_CONFIG_DEPTH

MAX_DEPTH = documents.MAX_DEPTH  # deeper documents are skipped: nothing recursive can fail later
RUN_FORMAT = 1                   # the newest run.json format this NuBoard reads
NO_RUN_JSON = "no run.json (a half-written run folder)"
MAX_SESSIONS = 1000              # the last ones are shown: a run resumed more often is unusual
MAX_LINKS = 10_000               # inputs, outputs: artifact versions used or made by one run
MAX_GPUS = 256
MAX_SHOWN = 4096                 # other text shown on the run page (git, source)

TEXT_FIELDS = ("name", "project", "group", "notes", "host", "python", "platform", "status",
               "start_time", "end_time")
OBJECT_FIELDS = ("config", "env", "parent", "prefixes")
LIST_FIELDS = ("sessions", "inputs", "outputs")
INT_FIELDS = ("world_size", "dropped_points")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value) -> bool:
    return isinstance(value, str)


def _is_dict(value) -> bool:
    return isinstance(value, dict)


def _is_list(value) -> bool:
    return isinstance(value, list)


SESSION_FIELDS = (("session", _is_int, "a whole number"), ("start_time", _is_str, "a string"),
                  ("host", _is_str, "a string"), ("pid", _is_int, "a whole number"))


def _wrong(field: str, value, rule: str) -> str:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"run.json field {field!r} is {shown}, not {rule}"


def read_run_doc(folder: Path):
    """The run folder's run.json, parsed (any JSON value: check it with check_run_doc), read
    with run.json's rules (documents.RUN_JSON: a regular file of at most 64 MB, nested at
    most 100 levels, JSON without a lone surrogate escape).

    Raises:
        FileNotFoundError: there is no run.json.
        OSError: it cannot be read (NotRegularFileError: it is a FIFO, socket or folder).
        documents.DocumentError (a ValueError): it breaks the rules; its `reason` says which.
    """
    return documents.read_document(Path(folder) / layout.RUN_JSON, documents.RUN_JSON)


def read_checked_run(folder: Path) -> tuple[dict | None, str | None, list[str]]:
    """run.json as the catalog indexes it and the run page shows it: the document cut to the
    API's limits (cap_run_doc) and the notes of what was cut; or None, the reason it is
    skipped (NO_RUN_JSON when there is none) and [].

    The one reader of run.json for the index and the viewer, so both take or leave a run alike.
    """
    try:
        doc, size = documents.read_sized_document(Path(folder) / layout.RUN_JSON, documents.RUN_JSON)
    except FileNotFoundError:
        return None, NO_RUN_JSON, []
    except (OSError, ValueError) as exc:
        return None, documents.unreadable_reason(exc, documents.RUN_JSON), []
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
        return None, "run.json is not a run document (no id)", []
    fmt = doc.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > RUN_FORMAT:
        return None, (f"run.json has format {fmt!r:.40}; this NuBoard reads up to {RUN_FORMAT}: "
                      "upgrade nuboard"), []
    why = check_run_doc(doc)
    if why is not None:
        return None, why, []
    doc, cut = cap_run_doc(doc, size_hint=size)
    return doc, None, cut


def check_run_doc(doc: dict) -> str | None:
    """Why a parsed run.json cannot be indexed or shown (None when its fields are usable)."""
    if caps.depth_of(doc, MAX_DEPTH) > MAX_DEPTH:
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
        for key, usable, rule in SESSION_FIELDS:
            value = session.get(key)
            if value is not None and not usable(value):
                return _wrong(f"sessions[{i}].{key}", value, rule)
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


def cap_run_doc(doc: dict, size_hint: int | None = None) -> tuple[dict, list[str]]:
    """A checked run.json (check_run_doc) with every field the catalog or the run page reads
    cut to the API's limits, and the notes of what was cut ([] when nothing was).

    size_hint: run.json's size in bytes; a config cannot be larger, so one in a small file is
    not measured.
    """
    notes: list[str] = []
    out = dict(doc)
    for field in TEXT_FIELDS:
        if isinstance(out.get(field), str):
            out[field] = caps.cap_text(out[field], MAX_NOTES if field == "notes" else MAX_LABEL,
                                       field, notes)
    tags = out.get("tags")
    if tags is not None:
        out["tags"] = caps.cap_tags([tags] if isinstance(tags, str) else tags, MAX_TAGS, MAX_TAG,
                                    notes)
    if isinstance(out.get("config"), dict):
        out["config"] = caps.cap_object(out["config"], MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH,
                                        "config", notes, size_hint=size_hint)
    if isinstance(out.get("sessions"), list):
        out["sessions"] = caps.cap_list(out["sessions"], MAX_SESSIONS, "sessions", notes, last=True)
    for field in ("inputs", "outputs"):
        if isinstance(out.get(field), list):
            out[field] = caps.cap_list(out[field], MAX_LINKS, field, notes)
    env = out.get("env")
    if isinstance(env, dict):
        out["env"] = env = dict(env)
        if isinstance(env.get("gpus"), list):
            env["gpus"] = caps.cap_list(env["gpus"], MAX_GPUS, "env.gpus", notes)
        if isinstance(env.get("git"), dict):
            env["git"] = {k: caps.cap_text(v, MAX_SHOWN, f"env.git.{k}", notes)
                          if isinstance(v, str) else v for k, v in env["git"].items()}
    if isinstance(out.get("source"), dict):
        out["source"] = {k: caps.cap_text(v, MAX_SHOWN, f"source.{k}", notes)
                         if isinstance(v, str) else v for k, v in out["source"].items()}
    return out, caps.cap_notes(notes)
