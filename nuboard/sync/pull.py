"""pull: fetch what changed in a bucket into an experiments folder, so that a reader of the folder
(the viewer, nb.read_scalars, `nuboard up s3://...` over its mirror) never sees a record
before its data, nor a file half written.

    summary = pull("s3://lab/exp", Path("mirror"))

For each unit (a run, an artifact version, a project document) whose objects changed:
run.json (or manifest.json) is read first and checked (a JSON object; the same run as a local
one of that id, else the run is refused, SyncConflictError, and nothing of it is written); the
other changed objects are fetched into temp files beside their places and checked (the ETag's
MD5, an event log ending on a record boundary and continuing the local one, an artifact file's
size and SHA-256 against its manifest); only when all check out are they renamed into place,
data first, then event logs, then the heartbeat (its mtime set to the time written inside it,
so a run that stopped beating is judged lost by that, not by when it was fetched), then
run.json. A unit with a damaged object is left as it was, named in a StorageError at the end.
A unit whose run.json (or manifest) is not in the bucket yet is not fetched: its push is under
way. Nothing pulled is ever deleted here; an object gone from the bucket stays in the folder.

When nothing changed, a pull is one listing and a stat per file: no object is read.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from pathlib import Path

from nuboard.eventlog.complete import is_whole_log
from nuboard.files import layout
from nuboard.files.jsonfile import TEMP_PREFIX

from .identity import ahead, describe_run, parse_doc, run_identity, version_identity
from .state import md5_file, md5_of, plain_md5
from .summary import SyncSummary
from .travel import DOC, MANIFEST, RUN, VERSION, Unit, is_log, key_of, local_path, rank
from .work import Job, Progress

IN_MEMORY = 64 << 20       # objects up to this size are fetched into memory, larger ones streamed


def pull(url: str, root: "str | os.PathLike[str]", *, projects: "list[str] | None" = None,
         progress: Progress | None = None, store=None) -> SyncSummary:
    """Fetch what changed at `url` into the folder `root`.

    Args:
        url: the bucket and prefix (s3://bucket/prefix, any fsspec URL).
        root: the experiments folder (made when missing).
        projects: the projects to fetch; None fetches every one.
        progress: called as progress(units done, units in all, the last one's name).
        store: an opened nuboard.remote Store of `url` to use, for a caller that syncs again and
            again (a viewer keeping a mirror fresh): opening a client costs 0.1 to 0.3 s.

    Returns:
        The SyncSummary (its .line() is what `nuboard sync pull` prints).

    Raises:
        StorageError: the store failed (one line), or objects were damaged (each named; their
            runs or versions left as they were, the rest fetched).
        SyncConflictError: a run here of the same id is another run: it is left as it is,
            naming it; the rest is fetched.
    """
    job = Job("pull", url, root, projects, store=store)
    remote = job.listing()
    job.run(sorted(remote.items()), lambda unit, objects: pull_unit(job, unit, objects), progress)
    return job.finish()


class _Fetch:
    """One object to fetch: its path in the unit, ObjectInfo, place here and (once fetched) the
    temp file or the bytes."""
    __slots__ = ("rel", "info", "path", "temp", "data")

    def __init__(self, rel: str, info, path: Path):
        self.rel, self.info, self.path = rel, info, path
        self.temp: Path | None = None
        self.data: bytes | None = None


def pull_unit(job: Job, unit: Unit, objects: dict) -> bool:
    """Fetch one unit's changed objects and put them in place in order; whether any were."""
    head = {RUN: layout.RUN_JSON, VERSION: MANIFEST}.get(unit.kind)
    if head is not None and head not in objects:
        return False                       # its push has not sent run.json yet: not a run yet
    wanted = [f for f in (_wanted(job, unit, rel, info) for rel, info in
                          sorted(objects.items(), key=lambda kv: (rank(unit.kind, kv[0]), kv[0])))
              if f is not None]
    if not wanted:
        job.count(skipped=1)
        return False
    fetched: list[_Fetch] = []
    made: list[Path] = []                  # folders made for this unit: removed when it is refused
    try:
        head_doc = None
        if head is not None:
            first = next((f for f in wanted if f.rel == head), None)
            head_doc = _check_head(job, unit, first) if first is not None else _local_doc(unit, job, head)
            if head_doc is None:
                return False
            if first is not None and unit.kind == RUN and ahead(_local_doc(unit, job, head), head_doc):
                # resumed here since the bucket's copy: this run.json and heartbeat are newer
                wanted = [f for f in wanted if rank(unit.kind, f.rel) < 2]
                if not wanted:
                    job.count(skipped=1)
                    return False
        for item in wanted:
            if item.data is None:
                _fetch(job, unit, item, made)
            fetched.append(item)
            problem = _problem(unit, item, head_doc)
            if problem is not None:
                job.refuse(unit, problem, conflict=False)
                return False
            if item.temp is None:            # held no longer than its checks: a unit may be big
                _make_parent(item.path, made, _unit_folder(job, unit))
                item.temp = _temp_path(item.path)
                with open(item.temp, "xb") as fh:
                    fh.write(item.data)
                item.data = None
        _place(job, unit, fetched)
        made.clear()
    finally:
        _remove_made(fetched, made)        # cut off or refused: no temp file, no empty folder
    job.count(**{{RUN: "runs", VERSION: "versions", DOC: "docs"}[unit.kind]: 1})
    return True


def _wanted(job: Job, unit: Unit, rel: str, info) -> _Fetch | None:
    """The object to fetch, or None when the local file holds it already (or is ahead)."""
    key = key_of(unit, rel)
    path = local_path(job.root, unit, rel)
    try:
        st = os.stat(path)
    except OSError:
        return _Fetch(rel, info, path)
    entry = job.state.get(key)
    if entry is not None and entry.remote_same(info):
        if entry.local_same(st):
            job.state.adopt_etag(key, info.etag)
        return None                        # unchanged there; here unchanged, or ahead
    if is_log(unit.kind, rel) and st.st_size >= info.size:
        return None                        # a log here as long or longer: never shortened
    if st.st_size == info.size and plain_md5(info.etag):
        try:
            same = md5_file(path) == info.etag
        except OSError:
            same = False
        if same:
            job.state.agree(key, st, info.size, info.etag)
            return None
    return _Fetch(rel, info, path)


def _check_head(job: Job, unit: Unit, item: _Fetch) -> dict | None:
    """Fetch run.json (or manifest.json) first and check it: a JSON object, and the same run
    as the local one of that id. None (the unit refused) otherwise."""
    item.data = job.call("read", key_of(unit, item.rel), job.store.fs.cat_file,
                         job.store.key(key_of(unit, item.rel)))
    doc = parse_doc(item.data)
    if doc is None:
        job.refuse(unit, f"its {item.rel} in the bucket is not a JSON object (damaged): not pulled",
                   conflict=False)
        return None
    if item.path.exists():
        try:
            mine = parse_doc(item.path.read_bytes())
        except OSError:
            mine = None
        ident = run_identity if unit.kind == RUN else version_identity
        if mine is not None and ident(mine) != ident(doc):
            why = (f"the local run of this id is another run ({describe_run(mine)}; in the bucket "
                   f"{describe_run(doc)}): not pulled" if unit.kind == RUN else
                   "the local version of this number is another version: not pulled")
            job.refuse(unit, why, conflict=True)
            return None
    return doc


def _local_doc(unit: Unit, job: Job, head: str) -> dict | None:
    try:
        return parse_doc(local_path(job.root, unit, head).read_bytes()) or {}
    except OSError:
        return {}


def _fetch(job: Job, unit: Unit, item: _Fetch, made: list[Path]) -> None:
    key = key_of(unit, item.rel)
    full = job.store.key(key)
    if item.info.size <= IN_MEMORY:
        item.data = job.call("read", key, job.store.fs.cat_file, full)
    else:
        _make_parent(item.path, made, _unit_folder(job, unit))
        item.temp = _temp_path(item.path)
        job.call("read", key, job.store.fs.get_file, full, str(item.temp))


def _problem(unit: Unit, item: _Fetch, head_doc: dict | None) -> str | None:
    """What is wrong with a fetched object, naming it; None when it checks out."""
    etag = item.info.etag
    if plain_md5(etag):
        got = md5_of(item.data) if item.data is not None else md5_file(item.temp)
        if got != etag:
            return f"{item.rel} changed while it was read (its bytes do not match its ETag): pull again"
    if is_log(unit.kind, item.rel):
        data = item.data if item.data is not None else item.temp.read_bytes()
        if not is_whole_log(data):
            return f"{item.rel} in the bucket is not a whole event log (damaged): not pulled"
        try:
            with open(item.path, "rb") as fh:
                mine = fh.read()
        except OSError:
            mine = b""
        if mine and data[:len(mine)] != mine:
            return f"{item.rel} in the bucket does not continue the local log: not pulled"
    if unit.kind == VERSION and item.rel != MANIFEST and isinstance(head_doc, dict):
        expected = _manifest_files(head_doc).get(item.rel)
        if expected is not None:
            size, sha = expected
            got_size = len(item.data) if item.data is not None else item.temp.stat().st_size
            if got_size != size:
                return f"{item.rel} in the bucket has {got_size} bytes, its manifest says {size}: not pulled"
            if sha is not None:
                digest = hashlib.sha256(item.data) if item.data is not None else _sha256_file(item.temp)
                if digest.hexdigest() != sha:
                    return f"{item.rel} in the bucket does not match its manifest's SHA-256 (damaged): not pulled"
    return None


def _manifest_files(doc: dict) -> dict[str, tuple[int, str | None]]:
    """A copied version's files as {path inside the version: (size, sha256 or None)}."""
    if doc.get("base") != "version" or not isinstance(doc.get("files"), list):
        return {}
    location = doc.get("location") if isinstance(doc.get("location"), str) else "files"
    out = {}
    for entry in doc["files"]:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("size"), int):
            sha = entry.get("sha256") if isinstance(entry.get("sha256"), str) else None
            out[f"{location}/{entry['path']}"] = (entry["size"], sha)
    return out


def _sha256_file(path: Path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest


def _place(job: Job, unit: Unit, fetched: list[_Fetch]) -> None:
    """Rename every fetched object into place, in the unit's order (run.json last)."""
    for item in fetched:
        if unit.kind == RUN and item.rel == layout.HEARTBEAT:
            _date_heartbeat(item.temp)
        os.replace(item.temp, item.path)
        item.temp = None
        st = os.stat(item.path)
        job.state.agree(key_of(unit, item.rel), st, item.info.size, item.info.etag)
        job.count(files=1, bytes=item.info.size)


def _date_heartbeat(path: Path) -> None:
    """Give a fetched heartbeat the mtime of the time written inside it (never later than now),
    so status.py judges a run that stopped beating lost by when it last beat."""
    try:
        doc = parse_doc(path.read_bytes())
    except OSError:
        return
    when = doc.get("time") if doc else None
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when) or when <= 0:
        return
    when = min(float(when), time.time())
    with contextlib.suppress(OSError):
        os.utime(path, (when, when))


def _make_parent(path: Path, made: list[Path], unit_folder: Path | None) -> None:
    """Make the folders above `path` that are missing, noting each made inside the unit's own
    folder (the unit's folder included; never a parent that other units share)."""
    if path.parent.is_dir():
        return
    missing = []
    for folder in path.parents:
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        if unit_folder is not None and (folder == unit_folder or unit_folder in folder.parents):
            made.append(folder)


def _unit_folder(job: Job, unit: Unit) -> Path | None:
    return None if unit.kind == DOC else local_path(job.root, unit, "")


def _remove_made(fetched: list[_Fetch], made: list[Path]) -> None:
    """Leave no trace of a refused unit: its temp files and the folders made for them."""
    for item in fetched:
        if item.temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(item.temp)
            item.temp = None
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _temp_path(path: Path) -> Path:
    return path.with_name(f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(3).hex()}")
