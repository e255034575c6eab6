"""W&B run folders (`wandb/offline-run-*` and synced `wandb/run-*`) as NuBoard runs.

Each `run-<id>.wandb` file under the folder given is one run, keyed by its folder relative to
that folder. Its records are framed as wandb_records reads them and decoded with the record
definitions the wandb package ships (`wandb.proto.wandb_internal_pb2.Record`): the run record
(id, project, display name, config, tags, notes, group, host, start time), config updates,
history rows (each number at the row's `_step`, with its `_timestamp` as the wall time; every
point of every row), summary updates (run.json's `summary`, as the run page shows it), and the exit record
(exit code 0: finished, else crashed; no exit record: the run had not ended, and it is
imported as running since its last row). Images and histograms of a row are media entries
where their files are in the run folder's `files/`; other media kinds, and images whose file is
not there, are left out with a note. A second import writes nothing (landing: run.json's
`source`), and a run that was still running when imported is imported again once it ended.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from nuboard.errors import import_extra

from .landing import Progress, import_runs
from .source_runs import (
    Candidate,
    ImportResult,
    ImportSourceError,
    MediaPoint,
    Series,
    SourceRun,
    UnreadableRunError,
    printable,
)
from .wandb_records import NotAWandbFile, read_records

FEATURE = "nuboard import wandb"
HIDDEN_KEYS = ("_step", "_timestamp", "_runtime", "_wandb")


def import_wandb(folder, project: str, dir=None, *, dry_run: bool = False,
                 progress: Progress | None = None) -> ImportResult:
    """Import every W&B run file under `folder` into `project` (see nuboard.importers.wandb)."""
    from nuboard.files.layout import resolve_root
    from nuboard.files.names import check_project
    check_project(project)
    import_extra("wandb.proto.wandb_internal_pb2", "wandb", FEATURE)
    root = resolve_root(dir)
    base = Path(os.path.abspath(os.path.expanduser(os.fspath(folder))))
    if not base.is_dir():
        raise ImportSourceError(f"{printable(str(base))!r} is not a folder: give the wandb folder "
                                "of a project (the one holding offline-run-* or run-* folders).")
    files = sorted(base.rglob("run-*.wandb"))
    if not files:
        raise ImportSourceError(f"no W&B run file (run-<id>.wandb) under {printable(str(base))!r}")
    candidates = []
    for path in files:
        key = printable(os.path.relpath(path.parent, base))
        candidates.append(Candidate(key, lambda path=path, key=key: read_run(path, key),
                                    stale=lambda source, path=path: _stale(source, path)))
    return import_runs("wandb", str(base), project, root, candidates, dry_run=dry_run,
                       progress=progress)


def _stale(source: dict, path: Path) -> bool:
    """An earlier import of a run file that has changed since (a run that was running, or an
    offline run synced on): import it again, in place."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return source.get("file_size") != size


def read_run(path: Path, key: str) -> SourceRun:
    """One run file as a SourceRun; UnreadableRunError for a file that is not one."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb
    try:
        framing = read_records(path)
    except (OSError, NotAWandbFile) as exc:
        raise UnreadableRunError(f"{path.name}: {exc}") from None
    info: dict[str, Any] = {"config": {}, "summary": {}, "tags": [], "exit": None}
    series: dict[str, Series] = {}
    media: list[MediaPoint] = []
    left: dict[str, int] = {}
    bad = framing.bad_chunks
    last_wall = None
    auto_step = 0
    for data in framing.records:
        record = pb.Record()
        try:
            record.ParseFromString(data)
        except DecodeError:
            bad += 1
            continue
        kind = record.WhichOneof("record_type")
        if kind == "run":
            _run_record(record.run, info)
        elif kind == "config":
            _updates(record.config.update, record.config.remove, info["config"])
        elif kind == "summary":
            _updates(record.summary.update, record.summary.remove, info["summary"])
        elif kind == "exit":
            info["exit"] = (record.exit.exit_code, record.exit.runtime)
        elif kind == "history":
            row = _regrouped({_key(item): _value(item.value_json) for item in record.history.item})
            step = row.get("_step")
            step = int(step) if isinstance(step, (int, float)) and step >= 0 else (
                record.history.step.num if record.history.HasField("step") else auto_step)
            auto_step = step + 1
            wall = row.get("_timestamp")
            wall = float(wall) if isinstance(wall, (int, float)) else (last_wall or 0.0)
            last_wall = wall
            for name, value in row.items():
                if name.startswith(HIDDEN_KEYS):
                    continue
                _add(name, value, step, wall, path.parent, series, media, left)
    return _source_run(key, path, info, series, media, left, bad, last_wall)


def _source_run(key, path, info, series, media, left, bad, last_wall) -> SourceRun:
    start = info.get("start") or (min((s.walls[0] for s in series.values() if len(s.walls)),
                                      default=None)) or os.stat(path).st_mtime
    exit_record = info["exit"]
    if exit_record is None:
        status, end = "running", None
    else:
        code, runtime = exit_record
        status = "finished" if code == 0 else "crashed"
        end = max(start + runtime, last_wall or start) if runtime else (last_wall or start)
    notes = [f"{n:,} {what} left out" for what, n in sorted(left.items())]
    if bad:
        notes.append(f"{bad:,} damaged or cut record{'s' * (bad != 1)} of {path.name} skipped")
    details = {"file": path.name, "file_size": path.stat().st_size, "run_id": info.get("run_id"),
               "wandb_project": info.get("project")}
    if exit_record is not None:
        details["exit_code"] = exit_record[0]
    return SourceRun(key=key, name=info.get("name") or info.get("run_id") or key, start=start,
                     end=end, status=status, config=info["config"], tags=info["tags"],
                     group=info.get("group"), notes=info.get("notes"), host=info.get("host"),
                     series=list(series.values()), media=media, left_out=notes,
                     summary=_finite(info["summary"]), details={k: v for k, v in details.items() if v is not None},
                     last_seen=last_wall if exit_record is None else None)


def _finite(value: Any) -> Any:
    """A summary as run.json can hold it: NaN and infinities (a diverged loss) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _run_record(run, info: dict) -> None:
    info["run_id"] = run.run_id or info.get("run_id")
    info["project"] = run.project or info.get("project")
    info["name"] = run.display_name or info.get("name")
    info["notes"] = run.notes or info.get("notes")
    info["group"] = run.run_group or info.get("group")
    info["host"] = run.host or info.get("host")
    if run.tags:
        info["tags"] = list(run.tags)
    if run.HasField("start_time") and run.start_time.seconds:
        info["start"] = run.start_time.seconds + run.start_time.nanos / 1e9
    _updates(run.config.update, (), info["config"])


def _regrouped(row: dict) -> dict:
    """A history row with each media object whole again: wandb writes {"samples": {"_type":
    "image-file", "path": ...}} as the items samples/_type, samples/path..."""
    prefixes = [k[:-len("/_type")] for k in row if k.endswith("/_type")]
    for prefix in sorted(prefixes, key=len, reverse=True):
        start = prefix + "/"
        parts = {k[len(start):]: row.pop(k) for k in [k for k in row if k.startswith(start)]}
        row[prefix] = parts
    return row


def _key(item) -> str:
    return "/".join(item.nested_key) if item.nested_key else item.key


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _updates(updates, removes, into: dict) -> None:
    """Apply a config or summary record: set each key (nested keys as one 'a/b'), then remove."""
    for item in updates:
        name = _key(item)
        if name in HIDDEN_KEYS or name.startswith("_wandb"):
            continue
        into[name] = _value(item.value_json)
    for item in removes:
        into.pop(_key(item), None)


def _add(name: str, value: Any, step: int, wall: float, folder: Path, series: dict,
         media: list, left: dict) -> None:
    """One value of a history row: a number to its series, an image or a histogram to media."""
    if isinstance(value, bool) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        number = float(value)
        found = series.get(name)
        if found is None:
            found = series[name] = Series(name)
        found.add(step, wall, number)
        return
    kind = value.get("_type") if isinstance(value, dict) else None
    if isinstance(value, dict) and kind is None:         # log({"val": {"loss": 1}}): val/loss
        for part, inner in value.items():
            _add(f"{name}/{part}", inner, step, wall, folder, series, media, left)
        return
    if kind == "image-file":
        files = (folder / "files").resolve()
        file = (files / str(value.get("path", ""))).resolve()
        if file.is_relative_to(files) and file.is_file():
            media.append(MediaPoint(name, step, wall, "image", lambda file=file: _image(file)))
            return
        left["images whose file is not in the run folder"] = left.get(
            "images whose file is not in the run folder", 0) + 1
        return
    if kind == "histogram" and isinstance(value.get("values"), list) \
            and isinstance(value.get("bins"), list):
        counts, edges = value["values"], value["bins"]
        media.append(MediaPoint(name, step, wall, "histogram",
                                lambda counts=counts, edges=edges: _histogram(counts, edges)))
        return
    what = f"values of kind {kind}" if kind else "values that are not numbers"
    left[what] = left.get(what, 0) + 1


def _image(file: Path):
    from nuboard.media.image import Image
    return Image(file)


def _histogram(counts: list, edges: list):
    from nuboard.media.histogram import Histogram
    return Histogram(counts=counts, edges=edges)
