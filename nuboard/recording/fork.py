"""Forking: copy a parent run's points up to a step into a new run's own folder, and the
versions it used into the new run's inputs."""
from __future__ import annotations

import os
import time
from array import array
from pathlib import Path

from nuboard.artifacts.names import check_artifact_name
from nuboard.eventlog import logfile
from nuboard.eventlog.reader import RunReader
from nuboard.files import layout, media_store, runjson
from nuboard.files.names import check_project


def parent_inputs(parent: Path) -> list[dict]:
    """The versions the parent run used, as the fork's own inputs (each with `from_parent`,
    the parent's id): the fork goes on from what the parent made of them, so the lineage of
    a dataset reaches the fork through its parent. An unreadable run.json gives none."""
    try:
        doc = runjson.read_run(parent)
    except (OSError, ValueError, RecursionError):
        return []
    found = doc.get("inputs") if isinstance(doc, dict) else None
    inputs: list[dict] = []
    for entry in found if isinstance(found, list) else ():
        if not isinstance(entry, dict):
            continue
        project, name, version = entry.get("project"), entry.get("name"), entry.get("version")
        try:                    # a hand-edited entry is left out, never followed as a path
            project, name = check_project(project), check_artifact_name(name)
        except (TypeError, ValueError):
            continue
        if type(version) is int and version >= 1:
            inputs.append({"project": project, "name": name, "version": version,
                           "at": runjson.now_iso(), "from_parent": parent.name})
    return inputs


def copy_history(parent: Path, child: Path, step: int) -> dict[int, int]:
    """Write, for every rank of the parent, its merged points at or below `step` into the
    child's events.r<rank>.s0.log, so the child never refers outside its own folder.

    Media entries at or below `step` come too: their records, and their files hard-linked
    into the child's media/ (copied where the file system has no hard links); an entry
    whose file is gone from the parent is left out.

    Returns:
        {rank: number of points copied}.
    """
    ranks = layout.list_ranks(parent)
    copied = {}
    for rank in ranks:
        reader = RunReader(parent, rank)
        reader.refresh()
        salt = logfile.new_salt()
        parts = [logfile.file_header(salt), logfile.meta_record({
            "format": 1, "rank": rank, "session": 0, "forked_from": parent.name,
            "fork_step": step, "pid": os.getpid(), "start_time": time.time()}, salt)]
        count = 0
        for key_id, (name, s) in enumerate(reader.scalars().items()):
            keep = [i for i, st in enumerate(s.steps) if st <= step]
            parts.append(logfile.key_record(key_id, name, salt))
            if not keep:
                continue
            if len(keep) == len(s.steps):
                steps, walls, values = s.steps, s.wall_times, s.values
            else:
                steps = array("q", (s.steps[i] for i in keep))
                walls = array("d", (s.wall_times[i] for i in keep))
                values = array("d", (s.values[i] for i in keep))
            for lo in range(0, len(values), 1 << 16):
                hi = lo + (1 << 16)
                parts.append(logfile.points_record(key_id, steps[lo:hi], walls[lo:hi], values[lo:hi],
                                                  salt))
            count += len(values)
        parts.extend(_copy_media(reader, parent, child, step, salt))
        path = child / layout.log_name(rank, 0)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(b"".join(parts))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        copied[rank] = count
    return copied


def _copy_media(reader: RunReader, parent: Path, child: Path, step: int, salt: int) -> list[bytes]:
    """The records of the parent's media entries at or below step, their files given to the
    child at the same relative paths (files written before the records that name them)."""
    records = []
    for _, doc in reader.media():
        if doc["step"] > step:
            continue
        try:
            for rel in ([doc["file"]] if "file" in doc else []) + list(doc.get("cells", ())):
                target = child / rel
                if not target.exists():
                    media_store.link_or_copy(parent / rel, target)
        except OSError:
            continue
        records.append(logfile.media_record(doc, salt))
    return records
