"""Where imported runs land: matched by their source, written aside, renamed into the project.

Each run is written by the recording API (nb.init, add_scalar, finish) into a staging root,
`<root>/.nuboard-import/<pid>-<hex>/`, on the same file system; its run.json then gets the
source's times, status and `source` object, and the finished folder is renamed into
`<root>/<project>/runs/<run_id>` in one step. A process killed half way leaves only its staging
folder, which no reader looks at (the walk skips dot folders) and the next import removes.
Imports into one root take turns (`.nuboard-import/lock`), so two never write the same run
(where the file system has no locks, two imports at once may both write one).

A run imported before is found by run.json's `source`: {"tool", "uri", "key", ...}.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import shutil
from pathlib import Path
from typing import Callable, Iterator

from nuboard.files import layout, runjson
from nuboard.files.jsonfile import flock, read_json
from nuboard.files.names import check_project, new_run_id

from .scalar_names import map_names, pick_prefixes
from .source_runs import Candidate, ImportResult, SourceRun, check_run, describe, iso

STAGING = ".nuboard-import"
Progress = Callable[[int, int, str], None]     # (runs done, runs to write, the source key now)


def imported(root: Path, project: str, tool: str, uri: str) -> dict[str, tuple[str, dict]]:
    """{source key: (run id, source object)} of the project's runs imported from this source."""
    found: dict[str, tuple[str, dict]] = {}
    runs = layout.runs_dir(root, project)
    try:
        names = sorted(os.listdir(runs))
    except OSError:
        return found
    for run_id in names:
        try:
            doc = read_json(runs / run_id / layout.RUN_JSON)
        except (OSError, ValueError):
            continue
        source = doc.get("source") if isinstance(doc, dict) else None
        if isinstance(source, dict) and source.get("tool") == tool and source.get("uri") == uri \
                and isinstance(source.get("key"), str):
            found.setdefault(source["key"], (run_id, source))
    return found


@contextlib.contextmanager
def staging(root: Path) -> Iterator[Path]:
    """A fresh staging root under root, held under the import lock; removed afterwards.

    Staging folders left by a killed import are removed first: under the lock, no other
    import of this root is running. Where the file system has no locks, they are left alone
    (another import may be using one).
    """
    base = root / STAGING
    base.mkdir(parents=True, exist_ok=True)
    with flock(base / "lock") as locked:
        for entry in os.listdir(base) if locked else ():
            if entry != "lock":
                shutil.rmtree(base / entry, ignore_errors=True)
        folder = base / f"{os.getpid()}-{os.urandom(4).hex()}"
        folder.mkdir()
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def import_runs(tool: str, uri: str, project: str, root: Path, candidates: list[Candidate], *,
                dry_run: bool = False, progress: Progress | None = None,
                after: Callable[[SourceRun, str, ImportResult], None] | None = None,
                on_skip: Callable[[str, dict, ImportResult], None] | None = None) -> ImportResult:
    """Write every candidate not imported before (or whose copy is stale) as a run.

    `after(source_run, run_id, result)` runs once a run is in place (MLflow's artifacts);
    `on_skip(run_id, source, result)` for each run imported before and left as it is. The
    project's catalog is brought up to date at the end.
    """
    project = check_project(project)
    result = ImportResult(tool, uri, project, dry_run=dry_run)
    if dry_run:
        known = imported(root, project, tool, uri)
        todo, skipped = _split(candidates, known)
        for candidate, _ in todo:
            if candidate.problem is None:
                result.pending.append(candidate.key)
            else:
                result.skip(candidate.key, candidate.problem, candidate.kind)
        result.skipped = [run_id for run_id, _ in skipped]
        return result
    with staging(root) as stage:
        known = imported(root, project, tool, uri)
        todo, skipped = _split(candidates, known)
        result.skipped = [run_id for run_id, _ in skipped]
        for run_id, source in skipped:
            if on_skip is not None:
                on_skip(run_id, source, result)
        for done, (candidate, old_id) in enumerate(todo):
            if progress is not None:
                progress(done, len(todo), candidate.key)
            if old_id is not None and resumed_here(root, project, old_id):
                result.skipped.append(old_id)
                result.notes.append(f"{candidate.key}: changed in {result.label} since it was imported, "
                                    f"but run {old_id} was resumed in NuBoard since: left as it is")
                continue
            landed = _land_candidate(stage, root, project, tool, uri, candidate, old_id, result)
            if landed is None:
                continue
            source_run, run_id, points = landed
            result.written.append(run_id)
            result.pending.append(candidate.key)
            result.points += points
            if old_id is not None:
                result.replaced.append(run_id)
            if after is not None:
                after(source_run, run_id, result)
        if progress is not None and todo:
            progress(len(todo), len(todo), "")
        linked = link_parents(root, project, tool, uri, result)
    if result.written or result.artifacts or linked:
        sync_catalog(root, project)
    return result


def link_parents(root: Path, project: str, tool: str, uri: str, result: ImportResult) -> int:
    """Give each run of this source whose parent run (`source.parent_key`) is in the project
    too the parent in run.json: {"run_id", "step": None, "project"} (nested, not forked);
    the count of runs changed. Done after the runs are in place, so a parent imported after
    its child, or by a later import, is found; a run's modified time is kept (an imported
    running run's is its last sign of life)."""
    found = imported(root, project, tool, uri)
    changed = 0
    for key, (run_id, source) in found.items():
        parent_key = source.get("parent_key")
        if not isinstance(parent_key, str) or parent_key not in found or parent_key == key:
            continue
        parent = {"run_id": found[parent_key][0], "step": None, "project": project}

        def link(doc: dict, parent=parent) -> bool:
            if doc.get("parent") == parent:
                return False
            doc["parent"] = parent
            return True

        folder = layout.run_dir(root, project, run_id)
        try:
            before = os.stat(folder / layout.RUN_JSON)
            if not link(runjson.read_run(folder)):
                continue
            runjson.update_run(folder, link)
            os.utime(folder / layout.RUN_JSON, ns=(before.st_atime_ns, before.st_mtime_ns))
        except (OSError, ValueError) as exc:
            result.notes.append(f"{key}: its parent run {parent_key} not recorded: {describe(exc)}")
            continue
        changed += 1
    return changed


def _land_candidate(stage: Path, root: Path, project: str, tool: str, uri: str,
                    candidate: Candidate, old_id: str | None, result: ImportResult):
    """Read one source run and land it: (source run, run id, points); or None, with the run
    in result.unreadable, when it cannot be read or written exactly (nothing of it is left in
    the project: it was written only in the staging root)."""
    if candidate.problem is not None:
        result.skip(candidate.key, candidate.problem, candidate.kind)
        return None
    try:
        source_run = candidate.load()
        check_run(source_run)
        source = {"tool": tool, "uri": uri, "key": candidate.key, **source_run.details}
        if source_run.parent:
            source["parent_key"] = source_run.parent
        run_id, points, media = land(stage, root, project, source_run, source, old_id)
    except Exception as exc:        # one odd run never stops the import: it is skipped, named
        result.skip(candidate.key, describe(exc))
        return None
    result.notes.extend(f"{candidate.key}: {line}" for line in source_run.left_out)
    result.media += media
    return source_run, run_id, points


def resumed_here(root: Path, project: str, run_id: str) -> bool:
    """Whether an imported run was resumed by NuBoard's API since (a session with a process
    id: an import writes its sessions without one); replacing it would lose what was logged."""
    try:
        doc = runjson.read_run(layout.run_dir(root, project, run_id))
    except (OSError, ValueError):
        return False
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    return isinstance(sessions, list) and any(isinstance(s, dict) and s.get("pid") is not None
                                              for s in sessions)


def _split(candidates: list[Candidate], known: dict) -> tuple[list, list]:
    """([(candidate, run id of the stale copy it replaces, or None)],
    [(run id, source) of each run imported before and left as it is])."""
    todo, skipped = [], []
    for candidate in candidates:
        found = known.get(candidate.key)
        if found is None:
            todo.append((candidate, None))
        elif candidate.stale(found[1]):
            todo.append((candidate, found[0]))
        else:
            skipped.append(found)
    return todo, skipped


def land(stage: Path, root: Path, project: str, run: SourceRun, source: dict,
         replaces: str | None = None) -> tuple[str, int, int]:
    """Write one run in the staging root and rename it into the project; (run id, points,
    media entries).

    Its media entries are written after its scalars (run.add_media, at their step and wall
    time; media keys mapped as scalar names are, `source.renamed_media` naming those changed).

    The run id is made from the source's start time (so runs sort by when they ran), or is
    that of the stale copy it replaces. A run of several sessions (run.sessions) is written
    as its source ran: the first session, then each next one resumed, its scalars and media
    after the earlier sessions', so that readers hide what each restart replaced.
    """
    from nuboard.recording.start import init
    runs = layout.runs_dir(root, project)
    run_id = replaces or _fresh_id(runs, run.start)
    names = map_names(s.name for s in run.series)
    keys = map_names((p.name for p in run.media), taken=names.values())
    system, timing = pick_prefixes([*names.values(), *keys.values()])
    renamed = {tag: name for tag, name in names.items() if tag != name}
    if renamed:
        source = {**source, "renamed": renamed}
    renamed_media = {tag: key for tag, key in keys.items() if tag != key}
    if renamed_media:
        source = {**source, "renamed_media": renamed_media}
    quiet = dict(capture_env=False, capture_console=False, system_metrics=False,
                 system_prefix=system, timing_prefix=timing)
    # resume="auto" on a fresh id creates the run, whatever $NUBOARD_RESUME says.
    recording = init(project, dir=stage, run_id=run_id, resume="auto", run_name=run.name,
                     config=run.config, tags=run.tags, notes=run.notes, group=run.group, **quiet)
    points = media = 0
    refused: dict[str, list] = {}
    try:
        for session in range(max(len(run.sessions), 1)):
            if session:                           # the source restarted: a resumed session
                recording.finish("finished")
                recording = init(project, dir=stage, run_id=run_id, resume="must", **quiet)
            points += _add_scalars(recording, run, names, session)
            media += _add_media(recording, run, keys, session, refused)
    except BaseException:
        recording.finish("crashed")
        raise
    _refused_notes(run, refused)
    recording.finish("finished" if run.status == "running" else run.status)
    staged = Path(recording.path)
    if replaces is not None:
        source = _carried(runs / run_id, source)
    runjson.update_run(staged, lambda doc: _settle(doc, run, source))
    with contextlib.suppress(OSError):
        os.unlink(staged / layout.HEARTBEAT)     # the importer's, not the source run's
    if run.status == "running":                  # its last sign of life: lost unless recent
        seen = run.last_seen if run.last_seen is not None else run.start
        os.utime(staged / layout.RUN_JSON, (seen, seen))
    runs.mkdir(parents=True, exist_ok=True)
    if replaces is not None:
        os.rename(runs / run_id, stage / f"replaced-{run_id}")
    os.rename(staged, runs / run_id)
    return run_id, points, media


def _carried(old: Path, source: dict) -> dict:
    """The source object of a run replacing its earlier copy, with what the earlier import
    added to it kept: the artifact versions it recorded (`artifact`, `versions`), and those it
    used and made (`inputs`, `outputs`, kept as `carried`: _settle puts them back)."""
    try:
        doc = runjson.read_run(old)
    except (OSError, ValueError):
        return source
    if not isinstance(doc, dict):
        return source
    before = doc.get("source") if isinstance(doc.get("source"), dict) else {}
    carried = {key: doc[key] for key in ("inputs", "outputs") if isinstance(doc.get(key), list) and doc[key]}
    out = dict(source)
    for key in ("artifact", "versions"):          # MLflow's: the versions it recorded
        if before.get(key) and key not in out:
            out[key] = before[key]
    if carried:
        out["carried"] = carried
    return out


def _add_scalars(recording, run: SourceRun, names: dict[str, str], session: int) -> int:
    """Write the run's scalar points of one session (all of them for a run of one); the count."""
    written = 0
    for series in run.series:
        add, name = recording.add_scalar, names[series.name]
        if len(run.sessions) <= 1 or not len(series.sessions):     # one session: one pass
            if not session:
                for step, wall, value in zip(series.steps, series.walls, series.values):
                    add(name, value, step=step, wall_time=wall)
                written += len(series.steps)
            continue
        first = bisect.bisect_left(series.sessions, session)
        end = bisect.bisect_right(series.sessions, session, first)
        for i in range(first, end):
            add(name, series.values[i], step=series.steps[i], wall_time=series.walls[i])
        written += end - first
    return written


def _add_media(recording, run: SourceRun, keys: dict[str, str], session: int,
               refused: dict[str, list]) -> int:
    """Write the media entries of one session; those refused are counted in `refused`
    (kind -> [count, first reason]). The count written."""
    written = 0
    for point in run.media:
        if point.session != session:
            continue
        try:
            media = point.value() if callable(point.value) else point.value
            recording.add_media(keys[point.name], media, step=point.step, wall_time=point.wall)
        except (TypeError, ValueError, OSError) as exc:
            found = refused.setdefault(point.kind, [0, describe(exc)])
            found[0] += 1
            continue
        written += 1
    return written


def _refused_notes(run: SourceRun, refused: dict[str, list]) -> None:
    for kind, (count, reason) in sorted(refused.items()):
        noun = kind if count == 1 else kind + "s"
        run.left_out.append(f"{count:,} {noun} NuBoard cannot keep left out (the first: {reason})")


def _settle(doc: dict, run: SourceRun, source: dict) -> None:
    """run.json as the source has the run: its times, status, host and `source` (the
    versions an earlier copy used and made put back: see _carried)."""
    source = dict(source)
    doc.update(source.pop("carried", {}))
    doc.update(start_time=iso(run.start), status=run.status, source=source,
               end_time=iso(run.end) if run.end is not None and run.status != "running" else None,
               host=run.host, python=None, platform=None)
    if run.summary:                          # the source's summary (W&B's), as the run page shows it
        doc["summary"] = run.summary
    for i, session in enumerate(doc.get("sessions") or []):
        start = run.sessions[i] if i < len(run.sessions) else run.start
        session.update(start_time=iso(start), host=run.host, pid=None)


def _fresh_id(runs: Path, start: float) -> str:
    while True:
        run_id = new_run_id(start)
        if not (runs / run_id).exists():
            return run_id


def sync_catalog(root: Path, project: str) -> None:
    """Bring the project's catalog up to date with its run folders, as `nuboard ls` does."""
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    with Catalog(root, project) as catalog:
        sync(catalog)
