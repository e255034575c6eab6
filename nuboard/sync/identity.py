"""Is it the same run? What tells one run (or artifact version) from another of the same id."""
from __future__ import annotations

import json


def run_identity(doc: object) -> tuple:
    """What a run keeps for life: its id, start time, first host and first session's pid. A
    resume on another host adds sessions and keeps these; a different run of the same id (made
    on two machines with run_id='exp1') differs in them."""
    if not isinstance(doc, dict):
        return ("?",)
    sessions = doc.get("sessions")
    first = sessions[0] if isinstance(sessions, list) and sessions and isinstance(sessions[0], dict) else {}
    return (doc.get("id"), doc.get("start_time"), first.get("host", doc.get("host")), first.get("pid"))


def version_identity(doc: object) -> tuple:
    """What an artifact version keeps for life: when, where and by whom it was made."""
    if not isinstance(doc, dict):
        return ("?",)
    return (doc.get("name"), doc.get("version"), doc.get("created_at"), doc.get("host"),
            doc.get("created_by"))


def parse_doc(data: bytes) -> dict | None:
    """A run.json or manifest.json's bytes as a JSON object; None when they are not one."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def describe_run(doc: dict) -> str:
    """'started 2026-12-07T22:37:31.969Z on vm' for a conflict's message."""
    ident = run_identity(doc)
    return f"started {ident[1]} on {ident[2]}"


def sessions_of(doc: object) -> int:
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    return len(sessions) if isinstance(sessions, list) else 0


def ahead(mine: object, theirs: object) -> bool:
    """Whether run.json `mine` records more sessions than `theirs` of the same run: the run was
    resumed on this side since the other's copy was made, so this side's run.json and heartbeat
    are the newer, whatever the files' times say."""
    return sessions_of(mine) > sessions_of(theirs)
