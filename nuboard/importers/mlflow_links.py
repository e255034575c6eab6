"""The datasets an MLflow run logged (`log_input`) and the models it made (MLflow 3's logged
models), read for run.json's source and, with --artifacts, recorded as reference versions the
run used (run.json's inputs) and made (its outputs), as the run's artifact folder is.

What the run logged is always kept in run.json's `source` ("datasets", "models"); a dataset
or model whose files are not a local path that exists stays there only, named in a note.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from urllib.parse import unquote, urlparse


def datasets_of(run) -> list[dict]:
    """The run's log_input datasets: {"name", "digest", "source_type", "source", "context"}."""
    found = []
    for entry in getattr(getattr(run, "inputs", None), "dataset_inputs", None) or ():
        dataset = entry.dataset
        context = {tag.key: tag.value for tag in entry.tags or ()}.get("mlflow.data.context")
        found.append({"name": str(dataset.name), "digest": dataset.digest,
                      "source_type": dataset.source_type, "source": dataset.source,
                      "context": context})
    return found


def models_by_run(client, experiment_id: str) -> dict[str, list[dict]]:
    """The logged models of an experiment by the run that made them: {"model_id", "name",
    "artifact_location"}; none where MLflow has no logged models (MLflow 2)."""
    search = getattr(client, "search_logged_models", None)
    if search is None:
        return {}
    out: dict[str, list[dict]] = {}
    token = None
    while True:
        page = search(experiment_ids=[experiment_id], max_results=100, page_token=token)
        for model in page:
            if model.source_run_id:
                out.setdefault(model.source_run_id, []).append(
                    {"model_id": model.model_id, "name": str(model.name),
                     "artifact_location": model.artifact_location})
        token = getattr(page, "token", None)
        if not token:
            return out


def local_path(uri: str | None) -> Path | None:
    """A local file or folder that exists, from a path or file: URI; else None."""
    if not uri or (re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", uri) and not uri.startswith("file:")):
        return None
    path = Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)
    return path if path.is_absolute() and path.exists() else None


def dataset_path(dataset: dict) -> Path | None:
    """Where a dataset's files are, when its source names a local path that exists."""
    try:
        source = json.loads(dataset.get("source") or "")
    except (ValueError, TypeError):
        return None
    if not isinstance(source, dict):
        return None
    return local_path(source.get("uri") or source.get("path"))


def slug(text: str, prefix: str) -> str:
    """An artifact name: prefix + text, characters outside letters, digits, '.', '_', '-' as '-'."""
    return (prefix + (re.sub(r"[^A-Za-z0-9._-]", "-", text).strip("-.") or "unnamed"))[:128]


def unrecorded(source: dict, artifacts: bool) -> list[str]:
    """The notes for what the run logged that will not be a version: everything without
    --artifacts, each dataset or model that is not a local path with it."""
    datasets, models = source.get("datasets") or [], source.get("models") or []
    if not artifacts:
        parts = [f"{len(datasets)} dataset{'s' * (len(datasets) != 1)}" if datasets else "",
                 f"{len(models)} logged model{'s' * (len(models) != 1)}" if models else ""]
        text = " and ".join(p for p in parts if p)
        return [f"{text} kept in run.json's source only (pass --artifacts to record them as "
                "reference versions)"] if text else []
    notes = [f"dataset {d['name']!r} not recorded: its source {d.get('source')!r:.120} is not a "
             "local path that exists" for d in datasets if dataset_path(d) is None]
    notes += [f"logged model {m['name']!r} not recorded: {m.get('artifact_location')!r} is not a "
              "local folder that exists" for m in models if local_path(m.get("artifact_location")) is None]
    return notes


def add_links(root: Path, project: str, run_id: str, source: dict) -> list[str]:
    """Record the run's local datasets as reference versions it used and its logged models as
    versions it made; their specs, also kept in run.json's `source.versions` so a later import
    does not add them again. Raises NuBoardError or OSError as add_artifact does."""
    from nuboard.artifacts import add_artifact
    from nuboard.files import layout, runjson
    run_dir = layout.run_dir(root, project, run_id)
    entries: list[tuple[str, str, dict]] = []      # (spec, "inputs" or "outputs", entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)        # a dangling link inside: left out
        for dataset in source.get("datasets") or ():
            path = dataset_path(dataset)
            if path is None:
                continue
            version = add_artifact(project, slug(dataset["name"], ""), path, type="dataset",
                                   reference=True, dir=root,
                                   metadata={"mlflow_digest": dataset.get("digest"),
                                             "mlflow_source": dataset.get("source"),
                                             "context": dataset.get("context")},
                                   description="A dataset an MLflow run logged with log_input, "
                                               "recorded by nuboard import.")
            entries.append((version.spec, "inputs", _entry(version)))
        for model in source.get("models") or ():
            path = local_path(model.get("artifact_location"))
            if path is None:
                continue
            version = add_artifact(project, slug(model["name"], "mlflow-model-"), path, type="model",
                                   reference=True, dir=root, producer={"project": project, "run_id": run_id},
                                   metadata={"mlflow_model_id": model.get("model_id")},
                                   description="A model an MLflow run logged, recorded by nuboard import.")
            entries.append((version.spec, "outputs", _entry(version)))
    specs = [spec for spec, _, _ in entries]

    def link(doc: dict) -> None:
        for _, key, entry in entries:
            doc.setdefault(key, []).append({**entry, "at": runjson.now_iso()})
        doc["source"]["versions"] = specs

    runjson.update_run(run_dir, link)
    return specs


def _entry(version) -> dict:
    return {"project": version.project, "name": version.name, "version": version.version}
