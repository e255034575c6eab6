"""push: send what changed in an experiments folder to a bucket, data before the records that
name it, each event log cut at its last complete record.

    summary = push("s3://lab/exp", Path("experiments"))
    print(summary.line())   # pushed 3 runs, 41 files, 4.2 MB to s3://lab/exp in 1.3 s; 997 unchanged

A file is sent when it is new, or changed here since this folder and the bucket last agreed
(state.py), or differs from the object by size and MD5; a file unchanged here whose object
changed since (another node resumed the run and pushed) is left to the bucket. A second push
with nothing changed makes listing requests only. An event log is sent whole (S3 has no
append), cut at its last complete record, and never over a longer object of the same log.
Each object write is atomic, and a unit's files are sent in order, so a push killed or cut
anywhere leaves the bucket with every run.json's data in place; the next push finishes the job.
"""
from __future__ import annotations

import os
from pathlib import Path

from nuboard.eventlog.complete import read_complete
from nuboard.files import layout

from .identity import ahead, describe_run, parse_doc, run_identity, version_identity
from .state import md5_of, plain_md5
from .summary import SyncSummary
from .travel import DOC, DOCS, MANIFEST, RUN, VERSION, Unit, is_log, key_of, local_path, local_units, rank, unit_files
from .work import Job, Progress

IN_MEMORY = 64 << 20       # files up to this size are read once and sent from memory


def push(url: str, root: "str | os.PathLike[str]", *, projects: "list[str] | None" = None,
         progress: Progress | None = None, store=None) -> SyncSummary:
    """Send what changed in the folder `root` to `url` (s3://bucket/prefix, any fsspec URL).

    Args:
        url: the bucket and prefix; the folder's layout is mirrored below it.
        root: the experiments folder.
        projects: the projects to send; None sends every one.
        progress: called as progress(units done, units in all, the last one's name).
        store: an opened nuboard.remote Store of `url` to use, for a caller that syncs again and
            again (a viewer keeping a mirror fresh): opening a client costs 0.1 to 0.3 s.

    Returns:
        The SyncSummary (its .line() is what `nuboard sync push` prints).

    Raises:
        StorageError: the store failed (credentials, bucket, endpoint: one line); what was sent
            before stays, whole, and the next push goes on from there.
        SyncConflictError: a run in the bucket of the same id is another run: it is not sent,
            everything else is.
    """
    job = Job("push", url, root, projects, store=store)
    local = local_units(job.root, job.projects)
    remote = job.listing() if local else {}
    job.run([(unit, files, remote.get(unit, {})) for unit, files in sorted(local.items())],
            lambda unit, files, objects: push_unit(job, unit, files, objects), progress)
    return job.finish()


def push_unit(job: Job, unit: Unit, files: dict[str, Path], objects: dict) -> bool:
    """Send one unit's changed files in order; whether anything was sent."""
    head = {RUN: layout.RUN_JSON, VERSION: MANIFEST}.get(unit.kind)
    behind = False
    if head is not None and head in objects and head in files:
        found = _other_run(job, unit, files[head], objects[head], head)
        if found == "other":
            return False
        behind = found == "behind"
    sent = 0
    for rel, path in sorted(files.items(), key=lambda kv: (rank(unit.kind, kv[0]), kv[0])):
        if behind and rank(unit.kind, rel) >= 2:
            continue                       # the bucket's run.json and heartbeat are newer
        sent += _push_file(job, unit, rel, path, objects.get(rel))
    if sent:
        job.count(**{{RUN: "runs", VERSION: "versions", DOC: "docs"}[unit.kind]: 1})
    else:
        job.count(skipped=1)
    return bool(sent)


def _push_file(job: Job, unit: Unit, rel: str, path: Path, info) -> int:
    key = key_of(unit, rel)
    state = job.state
    try:
        st = os.stat(path)
    except OSError:
        return 0                           # gone since the folder was walked
    entry = state.get(key)
    if entry is not None and info is not None and entry.local_same(st):
        if entry.remote_same(info):
            state.adopt_etag(key, info.etag)
        return 0                           # unchanged here (the bucket's may be newer: kept)
    log = is_log(unit.kind, rel)
    if log:
        data = read_complete(path)
        if not data:
            return 0                       # not even a header yet
    elif st.st_size <= IN_MEMORY:
        try:
            data = path.read_bytes()
        except OSError:
            return 0
    else:
        data = None
    size = len(data) if data is not None else st.st_size
    if info is not None and info.size == size and plain_md5(info.etag):
        from .state import md5_file
        same = (md5_of(data) if data is not None else md5_file(path)) == info.etag
        if same:
            state.agree(key, st, info.size, info.etag)
            return 0
    if log and info is not None and info.size > size:
        return 0                           # the bucket's copy of this log is longer: never shrink it
    full = job.store.key(key)
    if data is not None:
        job.call("write", key, job.store.fs.pipe_file, full, data)
    else:
        job.call("write", key, job.store.fs.put_file, str(path), full)
    state.agree(key, st, size, None)       # the ETag comes with the next listing
    job.count(files=1, bytes=size)
    return 1


def _other_run(job: Job, unit: Unit, path: Path, info, head: str) -> str | None:
    """'other' when the bucket's run.json (or manifest) describes another run than the local
    one: the unit is refused, nothing of it sent. 'behind' when it is the same run, resumed
    elsewhere since (more sessions): its run.json and heartbeat are not sent over the bucket's.
    Read only when the object changed since the last agreement and differs from the local file."""
    key = key_of(unit, head)
    entry = job.state.get(key)
    if entry is not None and entry.remote_same(info):
        return None
    try:
        local = path.read_bytes()
    except OSError:
        return None
    if plain_md5(info.etag) and md5_of(local) == info.etag:
        return None
    remote = parse_doc(job.call("read", key, job.store.fs.cat_file, job.store.key(key)))
    mine = parse_doc(local)
    if remote is None or mine is None:
        return None                        # a damaged copy is replaced by the good one
    ident = run_identity if unit.kind == RUN else version_identity
    if ident(remote) == ident(mine):
        return "behind" if unit.kind == RUN and ahead(remote, mine) else None
    if unit.kind == RUN:
        why = (f"the bucket holds another run of this id ({describe_run(remote)}; here "
               f"{describe_run(mine)}): not pushed")
    else:
        why = "the bucket holds another version of this number: not pushed"
    job.refuse(unit, why, conflict=True)
    return "other"


def push_run(job: Job, project: str, run_id: str) -> None:
    """Send one run: the artifact versions it made (as listed in its run.json's outputs), its
    project's documents, then its folder; one listing of the run, a listing of a version and a
    HEAD of a document only where the local one changed since the last push. For the
    background push of nb.init(sync_to=); conflicts and failures as push's."""
    folder = layout.run_dir(job.root, project, run_id)
    files = unit_files(folder)
    if layout.RUN_JSON not in files:
        return
    doc = parse_doc(files[layout.RUN_JSON].read_bytes()) or {}
    outputs = doc.get("outputs") if isinstance(doc.get("outputs"), list) else []
    for entry in outputs:
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), int):
            continue
        where, name = entry.get("project") or project, entry.get("name")
        if not isinstance(where, str) or not isinstance(name, str) or "/" in name:
            continue
        unit = Unit(VERSION, where, f"{name}/v{entry['version']}",
                    f"{where}/artifacts/{name}/v{entry['version']}")
        version_files = unit_files(local_path(job.root, unit, ""))
        if MANIFEST in version_files and not _all_agreed(job, unit, version_files):
            push_unit(job, unit, version_files, job.listing(unit.prefix).get(unit, {}))
    for name in DOCS:
        unit = Unit(DOC, project, name, f"{project}/{name}")
        path = local_path(job.root, unit, "")
        if path.is_file() and not _all_agreed(job, unit, {"": path}):
            info = job.store.info(unit.prefix)
            job.count(requests=1)
            push_unit(job, unit, {"": path}, {"": info} if info is not None else {})
    unit = Unit(RUN, project, run_id, f"{project}/runs/{run_id}")
    push_unit(job, unit, files, job.listing(unit.prefix).get(unit, {}))


def _all_agreed(job: Job, unit: Unit, files: dict[str, Path]) -> bool:
    """Whether every file of the unit is as it was when it last agreed with the bucket."""
    for rel, path in files.items():
        entry = job.state.get(key_of(unit, rel))
        try:
            if entry is None or not entry.local_same(os.stat(path)):
                return False
        except OSError:
            return False
    return True
