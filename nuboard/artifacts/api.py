"""The artifact API: add a version, get one, check its files, unlink and restore."""
from __future__ import annotations

import builtins
import getpass
import json
import os
import socket
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from stat import S_ISREG
from typing import Any, Iterator, NamedTuple

from nuboard.errors import InvalidArgumentError, InvalidTypeError, StorageError
from nuboard.files import caps, runjson
from nuboard.files.layout import project_dir, resolve_root
from nuboard.files.names import check_project

from . import object_cache, remote_refs
from . import version_folders as folders
from .errors import ArtifactFileNotFoundError, ArtifactNotFoundError, SourceNotFoundError
from .listing import Progress, left_out_text, walk_files
from .manifest import (
    FORMAT,
    MANIFEST,
    MAX_DESCRIPTION,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    copy_files,
    hash_files,
    read_manifest,
    read_manifest_checked,
    write_manifest,
)
from .names import check_artifact_name, check_type, parse_spec, parse_version, version_label
from .paths import (
    check_holds_no_versions,
    check_listing_holds_no_versions,
    expand_variables,
    is_within,
    resolve_location,
    store_location,
)


class FileProblem(NamedTuple):
    """A file of a version that is missing or changed since the version was made."""
    path: str
    problem: str           # 'missing', 'size', or 'content' (a re-hash, see verify)
    detail: str


class Artifact(Mapping):
    """One version of an artifact. It reads like a mapping from each file it lists
    (the manifest's path, '/' separators) to that file on this machine; `files` is the
    folder they are under, and `uri` where they come from: the URL of a URL reference (its
    ${VAR}s expanded; `files` is then the local copy use_artifact fills), else file:// of the
    folder (of the file, for a version of one file)."""

    def __init__(self, *, project: str, name: str, version: int, path: Path, manifest: dict,
                 project_path: Path, unlinked: bool = False):
        self.project = project
        self.name = name
        self.version = version
        self.path = path                      # the version folder
        self.manifest = manifest
        self.unlinked = unlinked
        self._entries = {f["path"]: f for f in manifest["files"]}
        self._current = None                  # a URL reference's listing, once checked
        if manifest.get("base") == remote_refs.URL_BASE:
            # objects in a store: `files` is their local copy (filled by use_artifact)
            self.uri, self.unset_variables = remote_refs.expand_url(manifest.get("location", ""))
            self.files = object_cache.cache_folder(self.uri, manifest["files"])
            return
        location, self.unset_variables = resolve_location(
            manifest.get("base", "version"), manifest.get("location", "files"), project_path, path)
        if manifest.get("single_file") and manifest.get("storage") == "reference":
            location = location.parent
        # absolute, as the folder the files are under on this machine (a relative root or
        # NUBOARD_DIR made it relative); one with an unset ${VAR} stays as written
        self.files = location if self.unset_variables else Path(os.path.abspath(location))
        single = manifest.get("single_file") and len(self._entries) == 1
        self.uri = remote_refs.local_uri(self.files / next(iter(self._entries)) if single else self.files)

    spec = property(lambda self: f"{self.project}/{self.name}:{version_label(self.version)}",
                    doc="'project/name:vN', the string get_artifact and use_artifact take.")
    type = property(lambda self: self.manifest.get("type"))
    metadata = property(lambda self: self.manifest.get("metadata") or {})
    description = property(lambda self: self.manifest.get("description"))
    producer = property(lambda self: self.manifest.get("producer"))
    source = property(lambda self: self.manifest.get("source"))
    storage = property(lambda self: self.manifest.get("storage"))
    reference = property(lambda self: self.manifest.get("storage") == "reference")
    total_bytes = property(lambda self: self.manifest.get("total_bytes", 0))
    is_remote = property(lambda self: self.manifest.get("base") == remote_refs.URL_BASE,
                         doc="Whether the files are objects in a store (a URL reference).")

    def __getitem__(self, key: str) -> Path:
        if key not in self._entries:
            listed = list(self._entries)
            more = f", ... ({len(listed)} in all)" if len(listed) > 20 else ""
            shown = ", ".join(repr(p) for p in listed[:20]) + more
            raise ArtifactFileNotFoundError(
                f"{key!r} is not a file of {self.spec}; it lists {shown}.")
        return self.files.joinpath(*key.split("/"))

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __repr__(self) -> str:
        count = f"{len(self)} file" + ("" if len(self) == 1 else "s")
        return f"<nuboard.Artifact {self.spec} {self.type} {self.storage}, {count}>"

    def check(self) -> list[FileProblem]:
        """Compare every listed file with the manifest by size; return the missing and changed
        ones (not a regular file counts as missing).

        Modification times are never compared: a copy of the data (cp -r, rsync without -t,
        unzip, git checkout) gives every file a new one while its content stays the same.

        For a URL reference, the objects in the store are compared (one listing of the prefix,
        or a HEAD of the one object): missing, size changed, or ETag changed ('content').
        """
        if self.is_remote:
            problems, self._current = remote_refs.check_objects(
                self.uri, list(self._entries.values()), bool(self.manifest.get("single_file")))
            return [FileProblem(*p) for p in problems]
        problems = []
        base = os.path.join(os.fspath(self.files), "")      # the folder, with a separator
        stat = os.stat
        for rel, entry in self._entries.items():          # a million stats: keep this loop lean
            try:
                st = stat(base + rel)
            except OSError:
                problems.append(FileProblem(rel, "missing", "not found"))
                continue
            if not S_ISREG(st.st_mode):
                problems.append(FileProblem(rel, "missing", "not a regular file"))
            elif st.st_size != entry["size"]:
                problems.append(FileProblem(rel, "size", f"size {entry['size']} -> {st.st_size}"))
        return problems

    def verify(self, progress: Progress | None = None) -> list[FileProblem]:
        """check(), then re-hash every file whose SHA-256 the manifest holds (reads all the
        data once) and add those whose content changed. Only regular files are opened.
        For a URL reference this is check(): the ETags are the objects' fingerprints."""
        problems = self.check()
        if self.is_remote:
            return problems
        bad = {p.path for p in problems}
        base = os.path.join(os.fspath(self.files), "")
        todo = [(rel, e["sha256"]) for rel, e in self._entries.items()
                if rel not in bad and isinstance(e.get("sha256"), str)]
        digests = hash_files([(base + rel, self._entries[rel]["size"]) for rel, _ in todo], progress)
        problems += [FileProblem(rel, "content", "SHA-256 differs (its content changed)")
                     for (rel, want), got in zip(todo, digests) if got != want]
        return problems

    def warn_if_changed(self, stacklevel: int = 2) -> list[FileProblem]:
        """Check the files; warn once (RuntimeWarning) naming unset variables and bad files.

        For a URL reference (what use_artifact and run.use_artifact call), the local copy is
        then filled (fetch), with the listing the check just made. A store that cannot be
        reached is one warning when the local copy already holds every object as recorded (a
        node without network, its copy filled before): that copy is used. Else StorageError."""
        try:
            problems = [] if self.unset_variables else self.check()
        except StorageError as exc:
            if not (self.is_remote and object_cache.holds_recorded(self.files, list(self._entries.values()))):
                raise
            warnings.warn(f"Artifact {self.spec}: {exc}; the local copy {self.files}, which holds "
                          "every object as recorded, is used.", RuntimeWarning, stacklevel=stacklevel + 1)
            return []
        parts = []
        remote = self.is_remote
        if self.unset_variables:
            names = ", ".join("$" + v for v in self.unset_variables)
            parts.append(f"{names} {'is' if len(self.unset_variables) == 1 else 'are'} not set here, "
                         f"so its {'objects' if remote else 'files'} cannot be found (set it to the "
                         f"{'URL' if remote else 'folder'} that holds them)")
        word_of = "object" if remote else "file"
        for kind, word in (("missing", "missing"), ("size", "changed size"), ("content", "changed content")):
            hit = [p.path for p in problems if p.problem == kind]
            if hit:
                shown = ", ".join(hit[:10]) + (f" and {len(hit) - 10} more" if len(hit) > 10 else "")
                parts.append(f"{len(hit)} {word_of}{'s' if len(hit) != 1 else ''} {word}: {shown}")
        if problems and remote and all(e.get("version_id") for e in self._entries.values()):
            parts.append("the recorded versions are used")
        if parts:
            warnings.warn(f"Artifact {self.spec} ({self.uri if remote else self.files}): "
                          + "; ".join(parts) + ".", RuntimeWarning, stacklevel=stacklevel + 1)
        if remote and not self.unset_variables:
            self.fetch()
        return problems

    def fetch(self, progress: Progress | None = None) -> "object_cache.Filled | None":
        """For a URL reference: fill `files`, the local copy, downloading only the objects it
        lacks (by version id, else ETag); the recorded version's bytes where the bucket keeps
        versions. A progress bar on stderr in a terminal, unless progress is given
        (progress('downloading', bytes, total)). Lists the store first unless check() just did.
        Returns what it did; None for other versions (their files are on this machine).

        Raises:
            StorageError: the store failed; the objects downloaded before stay, recorded.
            InvalidArgumentError: the URL names a ${VAR} not set here.
        """
        if not self.is_remote:
            return None
        if self.unset_variables:
            raise InvalidArgumentError(f"Artifact {self.spec}: {', '.join('$' + v for v in self.unset_variables)}"
                                       " not set here, so its objects cannot be found.")
        if self._current is None:
            self.check()
        return object_cache.fill(self.uri, bool(self.manifest.get("single_file")),
                                 list(self._entries.values()), self._current or {}, self.files,
                                 progress)


def _project_path(project: str, dir) -> Path:
    return project_dir(resolve_root(dir), check_project(project))


def _producer(producer: Any) -> dict | None:
    if producer is None:
        return None
    if isinstance(producer, Mapping):
        if not isinstance(producer.get("project"), str) or not isinstance(producer.get("run_id"), str):
            raise InvalidTypeError(f"producer must have 'project' and 'run_id' strings, not {producer!r:.120}")
        return {"project": producer["project"], "run_id": producer["run_id"]}
    project, run_id = getattr(producer, "project", None), getattr(producer, "id", None)
    if isinstance(project, str) and isinstance(run_id, str):
        return {"project": project, "run_id": run_id}
    raise InvalidTypeError(f"producer must be a Run or a mapping with project and run_id, "
                           f"not {builtins.type(producer).__name__}")


def _run_of(real: Path, project_path: Path) -> str | None:
    """The run id when `real` is inside a run folder of the project, else None."""
    runs = (project_path / "runs").resolve()
    if runs in real.parents:
        return real.relative_to(runs).parts[0]
    return None


def _run_folder_around(real: Path) -> Path | None:
    """The run folder (runs/<id>/ with a run.json) that holds `real`, in any project, or None."""
    for folder in (real, *real.parents):
        if folder.parent.name == "runs" and (folder / runjson.RUN_JSON).is_file():
            return folder
    return None


def _refuse_running(real: Path, listing: list = ()) -> None:
    """A running run's files may change: refuse to reference them, from any project, also
    through a folder that holds the run (a project's runs/, say)."""
    _refuse_if_running(_run_folder_around(real))
    for rel, _ in listing:              # a million paths: one endswith each
        if rel.endswith("/" + runjson.RUN_JSON):
            parts = rel.split("/")
            if (parts[-3] if len(parts) >= 3 else real.name) == "runs":
                _refuse_if_running(real.joinpath(*parts[:-1]))


def _refuse_if_running(run_folder: Path | None) -> None:
    """Raise the one message for a run that is running: its run.json says so and it is not
    lost (before its first heartbeat it counts as running)."""
    from nuboard.files.status import run_status
    if run_folder is None:
        return
    try:
        doc = runjson.read_run(run_folder)
    except (OSError, ValueError):
        return
    if not isinstance(doc, dict) or doc.get("status") != "running" \
            or run_status(run_folder, doc) == "lost":
        return
    raise InvalidArgumentError(
        f"run {run_folder.name!r} is still running, so its files may change and cannot be "
        "referenced: copy them instead, or add the version after the run finished")


class SourceInfo(NamedTuple):
    """What a path given for a new version resolves to, and the files it holds."""
    given: str                       # as written (~ and ${VAR}s kept)
    real: Path                       # resolved on this machine
    single: bool                     # a file rather than a folder
    listing: list                    # [(path with '/' separators, os.stat_result)], sorted
    file_count: int
    total_bytes: int
    run_id: str | None               # the run of the project whose folder holds it, if any
    left_out: list = []              # [(path, what it is)]: dangling links, FIFOs, sockets, devices

    @property
    def left_out_warning(self) -> str | None:
        """One line naming every entry left out, or None."""
        return f"path {self.given!r}: {left_out_text(self.left_out)}" if self.left_out else None


def inspect_source(project: str, path: "str | os.PathLike[str]", *, reference: bool = False,
                   dir=None, progress: Progress | None = None) -> SourceInfo:
    """Check a path as add_artifact would, without writing anything; list its files.

    progress, if given, is called as progress('listing', files found so far, None) while the
    files are listed (see add_artifact).

    Raises:
        InvalidArgumentError: an unset variable, a path in or around an artifacts/ folder, a
            running run's files given as a reference (in any project), a link loop, no files.
        SourceNotFoundError: the path does not exist.
    """
    project = check_project(project)
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or a path, not {builtins.type(path).__name__} ({path!r:.80})")
    given = os.fspath(path)
    if remote_refs.is_url(given):             # objects in a store: listed, whatever `reference`
        found = remote_refs.inspect_url(given, progress)
        return SourceInfo(given, found.url, found.single, found.listing,  # type: ignore[arg-type]
                          len(found.listing), sum(info.size for _, info in found.listing), None, [])
    root = resolve_root(dir)
    project_path = project_dir(root, project)
    expanded, unset = expand_variables(given)
    if unset:
        raise InvalidArgumentError(
            f"path {given!r} uses {', '.join('$' + v for v in unset)}, which "
            f"{'is' if len(unset) == 1 else 'are'} not set: set it, or give the path itself.")
    if not os.path.exists(expanded):
        raise SourceNotFoundError(f"path {given!r} does not exist"
                                  + (f" (it expands to {expanded!r})" if expanded != given else "")
                                  + ": give an existing file or folder.")
    real = Path(expanded).resolve()
    check_holds_no_versions(given, real, project_path, root)
    run_id = _run_of(real, project_path)
    single = real.is_file()
    if not single and not real.is_dir():
        raise InvalidArgumentError(f"path {given!r} is neither a file nor a folder")
    left_out: list = []
    listing = list(walk_files(real, progress, left_out))
    left_out.sort()
    check_listing_holds_no_versions(given, real, listing)
    if reference:
        _refuse_running(real, listing)
    if not listing:
        raise InvalidArgumentError(f"path {given!r} holds no files: a version needs at least one"
                                   + (f" ({left_out_text(left_out)})" if left_out else ""))
    return SourceInfo(given, real, single, listing, len(listing),
                      sum(st.st_size for _, st in listing), run_id, left_out)


def _checked_again(source: SourceInfo, path: Any, project_path: Path, root: Path,
                   reference: bool) -> SourceInfo:
    """A SourceInfo handed to add_artifact, checked against the path and this project
    without listing the files again."""
    if not isinstance(source, SourceInfo):
        raise InvalidTypeError(f"source_info must be what inspect_source returns, "
                               f"not {builtins.type(source).__name__}")
    if not isinstance(path, (str, os.PathLike)) or os.fspath(path) != source.given:
        raise InvalidArgumentError(f"source_info is for path {source.given!r}, not {path!r:.200}")
    if remote_refs.is_url_source(source):
        return source
    check_holds_no_versions(source.given, source.real, project_path, root)
    check_listing_holds_no_versions(source.given, source.real, source.listing)
    if reference:
        _refuse_running(source.real, source.listing)
    return source._replace(run_id=_run_of(source.real, project_path))


def _checked_metadata(metadata: "Mapping[str, Any] | None") -> dict:
    """add_artifact's metadata as JSON values, at most MAX_METADATA_DEPTH levels deep and
    MAX_METADATA_BYTES as JSON; InvalidTypeError or InvalidArgumentError otherwise."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidTypeError(f"metadata must be a dict, not {builtins.type(metadata).__name__} ({metadata!r:.80})")
    try:
        text = json.dumps(dict(metadata), allow_nan=False, ensure_ascii=False)
    except RecursionError:
        text = None
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"metadata must be JSON (str keys; str, number, bool, None, list, dict "
                               f"values, no NaN): {exc}") from None
    checked = json.loads(text) if text is not None else None
    if checked is None or caps.depth_of(checked, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
        raise InvalidArgumentError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels: "
                                   "flatten it.")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_METADATA_BYTES:
        raise InvalidArgumentError(
            f"metadata is {size:,} bytes as JSON: at most {MAX_METADATA_BYTES:,}; keep large data "
            "in the version's files and describe it in the metadata.")
    return checked


def add_artifact(project: str, name: str, path: "str | os.PathLike[str]", *, type: str = "other",
                 metadata: "Mapping[str, Any] | None" = None, reference: bool = False,
                 checksum: bool = False, description: str | None = None, dir=None,
                 producer: Any = None, progress: Progress | None = None,
                 source_info: SourceInfo | None = None) -> Artifact:
    """Add a new version of an artifact and return it.

    Args:
        project: the project that holds the artifact ('datasets').
        name: one segment of letters, digits, '.', '_', '-' ('fineweb-edu').
        path: the file or folder; '~' and ${VAR}s work. A ${VAR} is kept in the manifest.
            A URL (s3://bucket/prefix, gs://, az://, any fsspec URL) references the objects
            under it, or the one it names: each one's size, ETag and version id (where the
            bucket keeps versions) from one listing (remote_refs.py); reference=True only.
        type: dataset, model, checkpoint, report or other.
        metadata: a JSON object describing the version (rows, step, score); at most 64 levels
            deep and 1 MB as JSON.
        reference: record where the files are instead of copying them.
        checksum: for a reference, also hash every file (a copy is always hashed).
        description: what this version is.
        dir: the root folder (default $NUBOARD_DIR or ./experiments).
        producer: the Run (or {'project', 'run_id'}) that made it; a path inside a run of
            the project makes that run the producer when none is given.
        progress: called as progress(phase, done, total), about every 0.1 s at most, and
            once at the start and end of each phase: 'listing' (files found so far, total
            None), then 'hashing' for a reference with checksum=True or 'copying' for a copy
            (bytes done, total bytes).
        source_info: what inspect_source returned for this path: its listing is written as
            it is, so the folder is not listed again (no 'listing' phase). The checks that
            do not list (artifacts/ folders, the run that holds it, a running run's files
            for a reference) are done again for this project.
    Links inside a folder are followed (a link loop is refused); dangling links, FIFOs,
    sockets and device files are left out, named in one RuntimeWarning before anything is
    written, and listed in the manifest's 'left_out'.

    Raises:
        InvalidNameError, InvalidArgumentError, InvalidTypeError: a bad argument (metadata
            deeper than 64 levels or over 1 MB as JSON, a description over 1,000,000
            characters included).
        SourceNotFoundError: the path does not exist.
        StorageError: a URL's store cannot be reached, refuses the credentials, or has no
            such bucket (nothing is written).
    """
    project = check_project(project)
    check_artifact_name(name)
    check_type(type)
    for flag, label in ((reference, "reference"), (checksum, "checksum")):
        if not isinstance(flag, bool):
            raise InvalidTypeError(f"{label} must be True or False, not {flag!r:.80}")
    if description is not None and not isinstance(description, str):
        raise InvalidTypeError(f"description must be a str or None, not {builtins.type(description).__name__}")
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise InvalidArgumentError(f"description is {len(description):,} characters: at most "
                                   f"{MAX_DESCRIPTION:,}; keep long text in a file of the version.")
    metadata = _checked_metadata(metadata)
    producer_doc = _producer(producer)
    root = resolve_root(dir)
    project_path = project_dir(root, project)
    given_text = path if isinstance(path, str) else None
    if given_text is not None and remote_refs.is_url(given_text):
        if not reference:
            remote_refs.refuse_copy(given_text)
        if checksum:
            remote_refs.refuse_checksum(given_text)

    if source_info is None:
        source = inspect_source(project, path, reference=reference, dir=root, progress=progress)
    else:
        source = _checked_again(source_info, path, project_path, root, reference)
    given = source.given
    real, single, listing, run_id = source.real, source.single, source.listing, source.run_id
    if run_id is not None and producer_doc is None:
        producer_doc = {"project": project, "run_id": run_id}
    if source.left_out:                 # before anything is written: as an error, nothing is
        warnings.warn(source.left_out_warning, RuntimeWarning, stacklevel=2)

    if remote_refs.is_url_source(source):
        base, location = remote_refs.URL_BASE, remote_refs.stored_location(given)
        entries = remote_refs.url_entries(listing)
    elif reference:
        base, location = store_location(given, real, project_path)
        if checksum:
            prefix = os.path.join(os.fspath(real), "")
            digests = hash_files([(os.fspath(real) if single else prefix + rel, st.st_size)
                                  for rel, st in listing], progress)
            entries = [{"path": rel, "size": st.st_size, "mtime": st.st_mtime, "sha256": digest}
                       for (rel, st), digest in zip(listing, digests)]
        else:
            entries = [{"path": rel, "size": st.st_size, "mtime": st.st_mtime} for rel, st in listing]
    else:
        base, location = "version", "files"

    number, vpath = folders.claim_version(project_path, name)
    if not reference:
        entries = copy_files(real, single, listing, vpath / "files", source.total_bytes, progress)
    doc = {
        "format": FORMAT, "project": project, "name": name, "version": number,
        "type": type, "description": description, "metadata": metadata,
        "storage": "reference" if reference else "copy", "base": base, "location": location,
        "single_file": single, "checksum": (not reference) or checksum,
        "file_count": len(entries), "total_bytes": sum(e["size"] for e in entries),
        "files": entries, "producer": producer_doc,
        "left_out": [{"path": p, "what": what} for p, what in source.left_out],
        "source": {"path": given, "run_id": run_id},
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "created_by": _user(), "host": socket.gethostname(),
    }
    write_manifest(vpath / MANIFEST, doc)           # last: only now does the version exist
    return Artifact(project=project, name=name, version=number, path=vpath, manifest=doc,
                    project_path=project_path)


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:           # no login name (a container without a passwd entry)
        return None


def get_artifact(spec: str, *, project: str | None = None, dir=None) -> Artifact:
    """Find a version without recording its use: 'project/name:vN', 'project/name:latest',
    or 'name:vN' with project= given.

    Raises:
        ArtifactNotFoundError: no such artifact or version (or it is unlinked).
    """
    proj, name, number = parse_spec(spec, project)
    project_path = _project_path(proj, dir)
    if number is None:
        number = folders.latest_version(project_path, name)
        if number is None:
            unlinked = folders.list_versions(project_path, name, unlinked=True)
            extra = (f" ({len(unlinked)} unlinked; restore one with 'nuboard artifact restore "
                     f"{proj}/{name}:{version_label(unlinked[-1])}')" if unlinked else "")
            raise ArtifactNotFoundError(
                f"Artifact {proj}/{name} has no versions in {project_path}{extra}. "
                f"List them with 'nuboard artifact ls {proj}'.")
    path = folders.version_dir(project_path, name, number)
    manifest, problem = read_manifest_checked(path)
    if manifest is None:
        label = f"{proj}/{name}:{version_label(number)}"
        if problem is not None:
            raise ArtifactNotFoundError(f"Version {label} cannot be used: {problem}.")
        unlinked_path = folders.version_dir(project_path, name, number, unlinked=True)
        if read_manifest_checked(unlinked_path)[0] is not None:
            raise ArtifactNotFoundError(f"Version {label} is unlinked; restore it with "
                                        f"'nuboard artifact restore {label}' to use it.")
        raise ArtifactNotFoundError(f"Version {label} not found in {project_path}. "
                                    f"List the versions with 'nuboard artifact ls {proj}'.")
    return Artifact(project=proj, name=name, version=number, path=path, manifest=manifest,
                    project_path=project_path)


def use_artifact(spec: str, *, project: str | None = None, dir=None, stacklevel: int = 2) -> Artifact:
    """get_artifact, then check every file by size and warn once about missing or changed
    files and unset variables. Records nothing: Run.use_artifact records the use.

    A URL reference is checked with one listing of its store (size and ETag of each object),
    then its local copy (`files`, under $NUBOARD_CACHE_DIR/objects/) is filled with what it
    lacks (Artifact.fetch). Raises StorageError when the store fails (see warn_if_changed)."""
    artifact = get_artifact(spec, project=project, dir=dir)
    artifact.warn_if_changed(stacklevel=stacklevel + 1)
    return artifact


def list_versions(project: str, name: str, *, unlinked: bool = False, dir=None) -> list[int]:
    """The complete version numbers of an artifact, oldest first."""
    return folders.list_versions(_project_path(project, dir), check_artifact_name(name), unlinked=unlinked)


def version_manifests(project: str, *, unlinked: bool = False, dir=None
                      ) -> Iterator[tuple[str, int, dict | None, str | None]]:
    """(name, number, manifest, why) of every complete version of a project (or of its
    unlinked ones), by name, newest first; a damaged manifest comes as None with why
    (None where it is simply missing)."""
    project_path = _project_path(project, dir)
    for name in folders.list_names(project_path, unlinked=unlinked):
        for number in reversed(folders.list_versions(project_path, name, unlinked=unlinked)):
            doc, why = read_manifest_checked(folders.version_dir(project_path, name, number,
                                                               unlinked=unlinked))
            yield name, number, doc, why


def get_unlinked_version(project: str, name: str, number: int, *, dir=None) -> Artifact | None:
    """The unlinked version project/name:vN, to be shown (not used), or None."""
    project_path = _project_path(project, dir)
    path = folders.version_dir(project_path, name, number, unlinked=True)
    doc = read_manifest(path)
    if doc is None:
        return None
    return Artifact(project=project, name=name, version=number, path=path, manifest=doc,
                    project_path=project_path, unlinked=True)


def list_artifacts(project: str, *, unlinked: bool = False, dir=None) -> list[str]:
    """The artifact names of a project that have a (linked, or unlinked) version."""
    return folders.list_names(_project_path(project, dir), unlinked=unlinked)


def unlink_version(project: str, name: str, version: "int | str", *, dir=None) -> Path:
    """Hide a version: move its folder to artifacts/.unlinked/<name>/ (atomic; nothing deleted).

    Its number is never handed out again. Returns where the folder now is.
    """
    return folders.unlink_folder(_project_path(project, dir), check_artifact_name(name),
                               parse_version(version), project=project)


def restore_version(project: str, name: str, version: "int | str", *, dir=None) -> Path:
    """Bring an unlinked version back (atomic). Returns where the folder now is."""
    return folders.restore_folder(_project_path(project, dir), check_artifact_name(name),
                                parse_version(version), project=project)


def promote_run_path(run_dir: "str | os.PathLike[str]", path: str, name: str, *, copy: bool = True,
                     type: str = "other", **options: Any) -> Artifact:
    """Make a version of the artifact `name` in the run's project from a path inside the run
    folder ('files/checkpoints/step_06000'); the run is its producer and is never changed.

    copy=False references the files (relative to the project), which a running run refuses.
    Entries that are not files or folders are left out with a RuntimeWarning (see add_artifact).
    Other options go to add_artifact (metadata, checksum, description).
    """
    run_path = Path(run_dir)
    try:
        doc = runjson.read_run(run_path)
        project, run_id = doc["project"], doc["id"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InvalidArgumentError(f"{str(run_path)!r} is not a run folder (it has no readable "
                                   "run.json): give the folder runs/<run_id> of a run.") from None
    project_path = run_path.parent.parent
    root = project_path.parents[len(check_project(project).split("/")) - 1]
    target = run_path / path
    if not is_within(target.resolve(), run_path.resolve()):
        raise InvalidArgumentError(f"path {path!r} is not inside the run folder {str(run_path)!r}.")
    return add_artifact(project, name, target, type=type, reference=not copy, dir=root,
                        producer={"project": project, "run_id": run_id}, **options)
