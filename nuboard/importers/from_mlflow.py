"""MLflow runs, read through MLflow's own MlflowClient, as NuBoard runs.

Each active run of each active experiment (or of the one named) becomes a run: params are the
config (typed: a value JSON reads as a number is that number, 'True'/'False' are booleans), the
experiment is the group, the tag `mlflow.note.content` the notes, every other tag not under
`mlflow.` a NuBoard tag 'key=value', every metric's full history (get_metric_history) its
scalar, with MLflow's steps and timestamps; the log_image images, log_table tables and
log_text text of a local artifact folder its media (mlflow_media). All tags, the raw status and
the experiment are kept in run.json's `source`. Statuses: FINISHED finished, FAILED failed,
KILLED killed; a run still RUNNING (or SCHEDULED) comes in as running with no process behind
it, so NuBoard shows it as lost (its last sign of life its latest metric), and a later import
replaces it once MLflow says it ended; a finished run is replaced (same run id) when anything
was logged to it since (source.fingerprint). A nested run's parent (mlflow.parentRunId) becomes
run.json's `parent` once both are imported (landing.link_parents); log_input datasets and
MLflow 3 logged models are kept in `source`, and with --artifacts recorded as reference
versions the run used and made (mlflow_links). MLflow's own log lines and warnings are
collected while the store is read (mlflow_logs), never printed.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import warnings
import weakref
from pathlib import Path
from urllib.parse import unquote, urlparse

from nuboard.errors import InvalidNameError, NuBoardError, import_extra
from nuboard.files.names import check_tags

from .landing import Progress, import_runs
from .mlflow_links import add_links, datasets_of, models_by_run, unrecorded
from .mlflow_logs import captured_logs, notes_of
from .mlflow_media import LOGGED_ARTIFACTS, LOGGED_IMAGES, read_media
from .mlruns_folder import scan_store
from .source_runs import (
    MAX_STEP,
    Candidate,
    ImportResult,
    ImportSourceError,
    Series,
    SourceRun,
    UnreadableRunError,
    describe,
)

FEATURE = "nuboard import mlflow"
STATUSES = {"FINISHED": "finished", "FAILED": "failed", "KILLED": "killed", "RUNNING": "running",
            "SCHEDULED": "running"}
OPEN = ("RUNNING", "SCHEDULED")
PAGE = 1000


def import_mlflow(uri, project: str, experiment: str | None = None, dir=None, *,
                  dry_run: bool = False, artifacts: bool = False,
                  progress: Progress | None = None) -> ImportResult:
    """Import the runs of an MLflow tracking store; see nuboard.importers.mlflow."""
    from nuboard.files.layout import resolve_root
    from nuboard.files.names import check_project
    check_project(project)
    root = resolve_root(dir)
    tracking = import_extra("mlflow.tracking", "mlflow", FEATURE)
    uri, file_store = tracking_uri(uri)             # what MLflow would create is refused first
    with _quiet_mlflow(file_store) as said:
        try:
            client = tracking.MlflowClient(tracking_uri=uri)
        except Exception as exc:
            raise _cannot_open(uri, exc) from None
        if file_store:
            candidates = _folder_candidates(client, uri, experiment, artifacts)
        else:
            candidates = [_candidate(client, run, exp, artifacts)
                          for exp in _experiments(client, uri, experiment)
                          for run in _runs(client, uri, exp.experiment_id)]
        hooks = {"after": _artifact_after(root, project), "on_skip": _artifact_on_skip(root, project)} \
            if artifacts else {}
        result = import_runs("mlflow", uri, project, root, candidates, dry_run=dry_run,
                             progress=progress, **hooks)
    result.notes.extend(notes_of(said, [bad["key"] for bad in result.unreadable]))
    return result


def tracking_uri(uri) -> tuple[str, bool]:
    """(the URI MLflow is given and run.json records, whether it is a folder store).

    A path or file: URI of a folder is an `mlruns` folder store, given as its absolute path;
    a path to a file is an SQLite database; sqlite:/// paths are made absolute. A database
    or folder that does not exist is refused here: MLflow would create an empty one.
    """
    text = os.fspath(uri)
    if text.startswith("sqlite:///"):
        path = Path(os.path.abspath(os.path.expanduser(text[len("sqlite:///"):])))
        _must_exist(path, text, folder=False)
        return f"sqlite:///{path}", False
    if text.startswith("file:"):
        path = Path(unquote(urlparse(text).path))
    elif re.match(r"[A-Za-z][A-Za-z0-9+.-]+://", text):
        return text, False                      # a server, databricks, postgresql://...: MLflow judges
    else:
        path = Path(text).expanduser()
    path = Path(os.path.abspath(path))
    if path.is_file():
        _must_exist(path, text, folder=False)
        return f"sqlite:///{path}", False
    _must_exist(path, text, folder=True)
    return str(path), True


def _must_exist(path: Path, text: str, folder: bool) -> None:
    if (path.is_dir() if folder else path.is_file()):
        problem = _not_a_store(path, folder)
        if problem:
            raise ImportSourceError(f"MLflow cannot open {text!r}: {str(path)!r} {problem}.")
        return
    what = "mlruns folder" if folder else "MLflow database"
    raise ImportSourceError(f"MLflow cannot open {text!r}: there is no {what} {str(path)!r}. Pass "
                            "the tracking URI the runs were logged to (sqlite:///mlflow.db, ./mlruns).")


def _not_a_store(path: Path, folder: bool) -> str | None:
    """Why an existing folder or file is not an MLflow store (MLflow would make it one), or None."""
    if folder:
        if any(path.glob("*/meta.yaml")):
            return None
        return "is not an mlruns folder (it has no <experiment id>/meta.yaml)"
    import sqlite3
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        return f"is not an SQLite database ({exc})"
    return None if {"experiments", "runs"} <= tables else "is not an MLflow database (it has no runs table)"


@contextlib.contextmanager
def _quiet_mlflow(file_store: bool):
    """MLflow's log lines and warnings captured (mlflow_logs), their lines yielded;
    MLFLOW_ALLOW_FILE_STORE=true for a folder store."""
    old_env = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    if file_store:
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        with captured_logs() as said:
            yield said
    finally:
        if file_store:
            if old_env is None:
                os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
            else:
                os.environ["MLFLOW_ALLOW_FILE_STORE"] = old_env


def _cannot_open(uri: str, exc: Exception) -> ImportSourceError:
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text if len(text) <= 300 else text[:297] + "..."
    return ImportSourceError(f"MLflow cannot open {uri!r}: {text}")


def _experiments(client, uri: str, name: str | None, found: list | None = None) -> list:
    """The active experiments, or the one named (ImportSourceError naming those there are)."""
    from mlflow.entities import ViewType
    if found is None:
        found = _every_page(uri, lambda token: client.search_experiments(
            view_type=ViewType.ACTIVE_ONLY, max_results=PAGE, page_token=token))
    found.sort(key=lambda e: (str(e.name), str(e.experiment_id)))
    if name is None:
        return found
    chosen = [e for e in found if e.name == name]
    if not chosen:
        names = ", ".join(repr(e.name) for e in found[:10]) or "none"
        raise ImportSourceError(f"MLflow experiment {name!r} not found in {uri!r} (experiments there: "
                                f"{names}).")
    return chosen


def _runs(client, uri: str, experiment_id: str) -> list:
    from mlflow.entities import ViewType
    return _every_page(uri, lambda token: client.search_runs(
        [experiment_id], run_view_type=ViewType.ACTIVE_ONLY, max_results=PAGE,
        order_by=["attributes.start_time ASC"], page_token=token))


def _every_page(uri: str, search) -> list:
    """Every item of a paged MLflow search: search(page_token) until no token comes back."""
    found, token = [], None
    try:
        while True:
            page = search(token)
            found.extend(page)
            token = page.token
            if not token:
                return found
    except Exception as exc:
        raise _cannot_open(uri, exc) from None


def _folder_candidates(client, uri: str, name: str | None, artifacts: bool) -> list[Candidate]:
    """The runs of an mlruns folder, each experiment and run folder checked before MLflow reads it.

    An experiment or run folder that would block or fail MLflow (mlruns_folder.scan_store) is a
    candidate with its problem; an experiment none of whose runs has one is listed by one search,
    as for any store; one that has (or whose search fails, as one malformed file makes it) is
    read run by run, so that each run that cannot be read is skipped alone.
    """
    unreadable, experiments = [], []
    for folder in scan_store(Path(uri)):
        problem = folder.problem
        if problem is None:
            try:
                found = client.get_experiment(folder.name)
            except Exception as exc:
                problem = f"MLflow cannot read it: {describe(exc)}"
            else:
                if found.lifecycle_stage == "active":
                    experiments.append((found, folder))
        if problem is not None:
            unreadable.append(Candidate(folder.name, _unread, problem=problem, kind="experiment"))
    chosen = {id(e) for e in _experiments(client, uri, name, [e for e, _ in experiments])}
    candidates = []
    for found, folder in experiments:
        if id(found) in chosen:
            candidates.extend(_folder_runs(client, uri, found, folder.runs, artifacts))
    return candidates + unreadable


def _folder_runs(client, uri: str, experiment, runs: dict, artifacts: bool) -> list[Candidate]:
    """The candidates of one experiment folder's runs (runs: {run folder: problem or None}):
    listed by one search when every run folder is in it, else read run by run."""
    if not any(runs.values()):
        try:
            listed = _runs(client, uri, experiment.experiment_id)
        except ImportSourceError:
            listed = None               # one malformed run fails the whole search: run by run
        if listed is not None and {run.info.run_id for run in listed} >= set(runs):
            return [_candidate(client, run, experiment, artifacts) for run in listed]
        # a run folder the search left out (MLflow logs "malformed run" and goes on; or a
        # deleted run): run by run, so that each one MLflow cannot read is named
    found, unreadable = [], []
    for folder, problem in sorted(runs.items()):
        if problem is None:
            try:
                run = client.get_run(folder)
            except Exception as exc:
                problem = f"MLflow cannot read it: {describe(exc)}"
            else:
                if run.info.lifecycle_stage == "active":
                    found.append(run)
                continue
        unreadable.append(Candidate(folder, _unread, problem=problem))
    found.sort(key=lambda r: (r.info.start_time or 0, r.info.run_id))
    return [_candidate(client, run, experiment, artifacts) for run in found] + unreadable


def _unread() -> SourceRun:
    raise AssertionError("a candidate with a problem is never read")


def _candidate(client, run, experiment, artifacts: bool) -> Candidate:
    """The run as a candidate: stale when an earlier copy was running and the run has ended
    since, or when MLflow's run has changed since the copy was read (fingerprint: a metric
    logged or a tag set after the run finished)."""
    status, mark = run.info.status, fingerprint(run)

    def stale(source: dict) -> bool:
        if source.get("status") in OPEN and status not in OPEN:
            return True
        return "fingerprint" in source and source["fingerprint"] != mark

    return Candidate(run.info.run_id, lambda: read_run(client, run, experiment, artifacts), stale)


def fingerprint(run) -> str:
    """What MLflow's search says of a run that changes when anything is logged to it: its
    status, end time, the latest point of each metric (key, step, time, value), its params and
    tags; as a short hash, kept in run.json's source to tell a later import what it read."""
    import hashlib
    info, data = run.info, run.data
    try:
        latest = sorted((m.key, m.step, m.timestamp, repr(m.value)) for m in data.to_proto().metrics)
    except Exception:                       # an MLflow without to_proto: the values alone
        latest = sorted((key, repr(value)) for key, value in data.metrics.items())
    text = json.dumps([info.status, info.end_time, latest, sorted(data.params.items()),
                       sorted(data.tags.items())], default=str)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def read_run(client, run, experiment, artifacts: bool) -> SourceRun:
    """One MLflow run, with the full history of each of its metrics."""
    info, data = run.info, run.data
    tags = dict(data.tags)
    series, last = [], info.start_time or 0
    negative = 0
    for key in sorted(data.metrics):
        found = Series(key)
        try:
            history = client.get_metric_history(info.run_id, key)
        except Exception as exc:
            raise UnreadableRunError(f"metric {key!r}: {describe(exc)}") from None
        for metric in history:
            step = metric.step
            if step < 0:
                negative += 1
                continue
            if step > MAX_STEP:
                raise UnreadableRunError(f"metric {key!r}: step {step} is past 2**63-1, the "
                                         "largest step NuBoard keeps")
            found.add(step, _seconds(metric.timestamp, f"metric {key!r}: timestamp"), metric.value)
            last = max(last, metric.timestamp)
        series.append(found)
    start = _seconds(info.start_time or 0, "its start time")
    nb_tags, refused = _tags(tags)
    left_out = [f"{negative:,} point{'s' * (negative != 1)} with a negative step left out "
                "(NuBoard steps start at 0)"] \
        if negative else []
    if refused:
        left_out.append(f"tags kept only in run.json's source (not NuBoard tags): {', '.join(refused)}")
    details = {"status": info.status, "experiment_id": experiment.experiment_id,
               "experiment": experiment.name, "tags": tags, "artifact_uri": info.artifact_uri}
    parent = tags.get("mlflow.parentRunId") or None
    if parent:
        details["parent_run_id"] = parent
    details["fingerprint"] = fingerprint(run)
    datasets, models = datasets_of(run), _models(client, experiment.experiment_id, left_out).get(info.run_id)
    if datasets:
        details["datasets"] = datasets
    if models:
        details["models"] = models
    left_out.extend(unrecorded(details, artifacts))
    local = local_folder(info.artifact_uri)
    folder = local if artifacts else None
    if artifacts and folder is None and info.artifact_uri and not _is_local(info.artifact_uri):
        left_out.append(f"artifacts at {info.artifact_uri!r} not recorded: not a local folder")
    media, notes = read_media(local, tags, start)
    left_out.extend(notes)
    if local is None and info.artifact_uri and not _is_local(info.artifact_uri) \
            and (tags.get(LOGGED_IMAGES) or tags.get(LOGGED_ARTIFACTS)):
        left_out.append(f"images and tables at {info.artifact_uri!r} left out: not a local folder")
    return SourceRun(key=info.run_id, name=_name(info.run_name or tags.get("mlflow.runName") or info.run_id),
                     start=start, end=_seconds(info.end_time, "its end time") if info.end_time else None,
                     status=STATUSES.get(info.status, "finished"), config=typed_params(data.params),
                     tags=nb_tags, group=_name(experiment.name), notes=tags.get("mlflow.note.content"),
                     series=series, details=details, artifact_dir=folder,
                     last_seen=_seconds(last, "its latest timestamp"), left_out=left_out,
                     media=media, parent=parent)


_MODELS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # client -> {experiment: ...}


def _models(client, experiment_id: str, notes: list) -> dict[str, list[dict]]:
    """The experiment's logged models by run (mlflow_links.models_by_run), searched once per
    client and experiment; none, with a note, when MLflow cannot list them (a store half
    migrated to MLflow 3)."""
    cache = _MODELS.setdefault(client, {})
    if experiment_id not in cache:
        try:
            cache[experiment_id] = models_by_run(client, experiment_id)
        except Exception as exc:
            cache[experiment_id] = {}
            notes.append(f"logged models of experiment {experiment_id} not read: {describe(exc)}")
    return cache[experiment_id]


def _seconds(millis, what: str) -> float:
    """MLflow's milliseconds as seconds; UnreadableRunError for one that is not a number of them."""
    try:
        return millis / 1000
    except (TypeError, OverflowError):
        raise UnreadableRunError(f"{what} {millis!r:.40} is not a number of milliseconds") from None


def typed_params(params: dict) -> dict:
    """MLflow's params (all strings) as config: numbers and booleans typed, the rest as written."""
    out = {}
    for key, text in sorted(params.items()):
        value = text
        if text in ("True", "true", "False", "false"):
            value = text.lower() == "true"
        else:
            try:
                number = json.loads(text)
            except (ValueError, TypeError, RecursionError):
                number = None
            if isinstance(number, (int, float)) and not isinstance(number, bool) \
                    and math.isfinite(number):
                value = number
        out[key] = value
    return out


def _tags(tags: dict) -> tuple[list[str], list[str]]:
    """(NuBoard tags 'key=value' of the user's tags, the keys of those that break the tag rule)."""
    out, refused = [], []
    for key, value in sorted(tags.items()):
        if key.startswith("mlflow."):
            continue
        try:
            out.extend(check_tags([f"{key}={value}" if value != "" else key]))
        except (InvalidNameError, TypeError):
            refused.append(key)
    return out, refused


def _name(text: str) -> str:
    text = "".join("_" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in str(text))
    return text if len(text) <= 256 else text[:255] + "…"


def _is_local(uri: str) -> bool:
    return uri.startswith("file:") or not re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", uri)


def local_folder(uri: str | None) -> Path | None:
    """The artifact folder of a run on this machine, when its URI is local and the folder exists."""
    if not uri or not _is_local(uri):
        return None
    path = Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)
    return path if path.is_dir() and any(path.iterdir()) else None


# -- artifacts --------------------------------------------------------------------------------

def artifact_name(experiment: str) -> str:
    """'mlflow-<experiment>', its characters outside letters, digits, '.', '_', '-' as '-'."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "-", experiment).strip("-.") or "experiment"
    return f"mlflow-{slug}"[:128]


def add_run_artifact(root: Path, project: str, run_id: str, folder: Path, source: dict) -> str:
    """Record the run's artifact folder as a reference version produced by the run; its spec.

    The version is listed in run.json's outputs, and its spec in `source.artifact`, so a later
    import knows it is there.
    """
    from nuboard.artifacts import add_artifact
    from nuboard.files import layout, runjson
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)        # a dangling link inside: left out
        version = add_artifact(project, artifact_name(source.get("experiment") or ""), folder,
                               type="other", reference=True, dir=root,
                               producer={"project": project, "run_id": run_id},
                               metadata={"mlflow_run_id": source.get("key"),
                                         "artifact_uri": source.get("artifact_uri")},
                               description="The MLflow run's artifact folder, recorded by nuboard import.")
    entry = {"project": version.project, "name": version.name, "version": version.version,
             "at": runjson.now_iso()}

    def link(doc: dict) -> None:
        doc.setdefault("outputs", []).append(entry)
        doc["source"]["artifact"] = version.spec

    runjson.update_run(layout.run_dir(root, project, run_id), link)
    return version.spec


def _record(root: Path, project: str, run_id: str, folder: Path, source: dict,
            result: ImportResult) -> None:
    """add_run_artifact; a version that cannot be added is a note, the run stays imported."""
    try:
        result.artifacts.append(add_run_artifact(root, project, run_id, folder, source))
    except (NuBoardError, OSError) as exc:
        result.notes.append(f"{source.get('key')}: artifacts not recorded: {exc}")


def _recorded(root: Path, project: str, run_id: str) -> dict:
    """The run's `source` as run.json has it now (with what a replaced copy recorded: its
    `artifact` and `versions`); {} when it cannot be read."""
    from nuboard.files import layout, runjson
    try:
        source = runjson.read_run(layout.run_dir(root, project, run_id)).get("source")
    except (OSError, ValueError, AttributeError):
        return {}
    return source if isinstance(source, dict) else {}


def _links(root: Path, project: str, run_id: str, source: dict, result: ImportResult) -> None:
    """mlflow_links.add_links, once a run (its `versions` not yet recorded); a version that
    cannot be added is a note, the run stays imported."""
    if "versions" in source or not (source.get("datasets") or source.get("models")):
        return
    try:
        result.artifacts.extend(add_links(root, project, run_id, source))
    except (NuBoardError, OSError) as exc:
        result.notes.append(f"{source.get('key')}: datasets and models not recorded: {exc}")


def _artifact_after(root: Path, project: str):
    def after(run: SourceRun, run_id: str, result: ImportResult) -> None:
        source = _recorded(root, project, run_id)
        if run.artifact_dir is not None and not source.get("artifact"):
            _record(root, project, run_id, run.artifact_dir, {"key": run.key, **run.details}, result)
        _links(root, project, run_id, {"key": run.key, **source}, result)
    return after


def _artifact_on_skip(root: Path, project: str):
    """A run imported before without its artifact, datasets or models (an import without
    --artifacts, or one killed between the run and its artifact) gets them now."""
    def on_skip(run_id: str, source: dict, result: ImportResult) -> None:
        _links(root, project, run_id, source, result)
        if source.get("artifact"):
            return
        folder = local_folder(source.get("artifact_uri"))
        if folder is not None:
            _record(root, project, run_id, folder, source, result)
    return on_skip
