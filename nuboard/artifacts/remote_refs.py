"""References to object storage: a version that lists the objects under a URL (s3://bucket/prefix,
gs://..., az://..., any fsspec URL) with their size, ETag and version id, and the check of them.

    source = inspect_url("datasets", "s3://lab/fineweb/2026-10")   # one listing; writes nothing
    entries = url_entries(source.listing)                           # the manifest's 'files'
    problems, current = check_objects(url, entries, single)         # one listing (a HEAD for one object)

The manifest keeps the URL as written (base 'url', a ${VAR} kept and expanded on use, as for the
'filesystem' base). Version ids come with the listing itself: an S3 store is listed with
ListObjectVersions (one request per 1,000 object versions), which costs far fewer requests than a
HEAD per object; where that listing is refused (no s3:ListBucketVersions), the plain listing is
used and the version has no version ids. The check at use lists with ListObjectsV2 (one request
per 1,000 objects), or HEADs the one object a URL names. fsspec is imported only here, on use.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from nuboard.errors import InvalidArgumentError, StorageError
from nuboard.remote.store import ObjectInfo, Store, object_info, open_store, storage_error
from nuboard.remote.urls import is_url, scheme, shown

from .listing import Progress, Ticker
from .paths import expand_variables, normalize_variables

URL_BASE = "url"


class UrlListing(NamedTuple):
    """What a URL holds: the URL expanded, whether it names one object, [(key, ObjectInfo)]."""
    url: str
    single: bool
    listing: list


def is_url_source(source: object) -> bool:
    """Whether a SourceInfo is of an object-store URL (its `real` is then the expanded URL)."""
    return isinstance(getattr(source, "real", None), str)


def expand_url(given: str) -> tuple[str, list[str]]:
    """A URL with its ${VAR}s expanded (no '~' expansion), and the variables unset here."""
    text, unset = expand_variables(given)       # a URL starts with its scheme: no ~ expanded
    return text.rstrip("/"), unset


def stored_location(given: str) -> str:
    """The manifest's location for a URL: as written, every $VAR as ${VAR}, no trailing '/'."""
    return normalize_variables(given).rstrip("/")


def list_objects(store: Store, progress: Progress | None = None) -> tuple[bool, dict[str, ObjectInfo]]:
    """(whether the URL names one object, {key below the URL: ObjectInfo}), listed afresh.

    One listing of the prefix (paginated: 1,000 keys a request); only when it is empty, a HEAD
    of the URL itself (an object). A key ending in '/' (a folder placeholder) is left out.
    """
    top = store.root
    tick = Ticker(progress, "listing", None) if progress is not None else None
    try:
        store.fs.invalidate_cache(top)
        found = store.fs.find(top, detail=True)
    except FileNotFoundError:
        found = {}
    except Exception as exc:
        raise storage_error(exc, store.url, "list") from exc
    objects: dict[str, ObjectInfo] = {}
    single = False
    cut = len(top) + 1
    for path, info in found.items():
        if info.get("type") == "directory" or path.endswith("/"):
            continue
        if path == top:
            single = True
            objects = {top.rsplit("/", 1)[-1]: object_info(info)}
            break
        if path.startswith(top + "/"):
            objects[path[cut:]] = object_info(info)
    if tick is not None:
        tick.finish(len(objects))
    return single, dict(sorted(objects.items()))


def _open_for_listing(url: str) -> Store:
    """The store of `url`, version-aware where that can give version ids (S3)."""
    return open_store(url, version_aware=scheme(url) in ("s3", "s3a"))


def inspect_url(given: str, progress: Progress | None = None) -> UrlListing:
    """What an object-store URL holds (inspect_source makes it a SourceInfo whose `real` is the
    expanded URL, a str): one listing, nothing written.

    Raises:
        InvalidArgumentError: an unset ${VAR}, or no object under the URL.
        StorageError: the store cannot be reached, refuses the credentials, or has no such bucket.
    """
    url, unset = expand_url(given)
    if unset:
        raise InvalidArgumentError(
            f"URL {given!r} uses {', '.join('$' + v for v in unset)}, which "
            f"{'is' if len(unset) == 1 else 'are'} not set: set it, or give the URL itself.")
    store = _open_for_listing(url)
    try:
        single, objects = list_objects(store, progress)
    except StorageError as exc:
        if not getattr(store.fs, "version_aware", False) or "access denied" not in str(exc):
            raise
        # ListObjectVersions refused (no s3:ListBucketVersions): list without version ids
        single, objects = list_objects(open_store(url), progress)
    if not objects:
        _refuse_missing_bucket(store, url)
        raise InvalidArgumentError(f"URL {shown(given)!r} holds no objects"
                                   + (f" (it expands to {shown(url)!r})" if url != given.rstrip("/") else "")
                                   + ": give a prefix or an object that exists; a version needs at least one.")
    return UrlListing(url, single, list(objects.items()))


def _refuse_missing_bucket(store: Store, url: str) -> None:
    """Raise StorageError when the bucket of an empty listing does not exist (the client says
    only 'not found' for both); one request, made only on this path."""
    bucket = store.root.strip("/").split("/", 1)[0]
    if not bucket:
        return
    try:
        there = store.fs.exists(bucket)
    except Exception:                   # a store that cannot tell: the empty prefix is said
        return
    if not there:
        raise StorageError(f"cannot list {shown(url)}: the bucket {bucket!r} does not exist")


def url_entries(listing: "list[tuple[str, ObjectInfo]]") -> list[dict]:
    """The manifest's file entries of a listing: path, size, ETag, version id (where the bucket
    keeps versions) and the time it was written."""
    entries = []
    for key, info in listing:
        entry: dict = {"path": key, "size": info.size, "etag": info.etag}
        if info.version_id:
            entry["version_id"] = info.version_id
        if info.mtime is not None:
            entry["mtime"] = info.mtime
        entries.append(entry)
    return entries


def refuse_copy(given: str) -> None:
    """A URL given with reference=False: one line saying to reference it."""
    raise InvalidArgumentError(
        f"path {shown(given)!r} is in object storage: it can only be referenced "
        "(reference=True, or --ref), which records each object's size, ETag and version id; "
        "a copy into the version is not made from a URL.")


def refuse_checksum(given: str) -> None:
    raise InvalidArgumentError(
        f"checksum=True hashes local files; the objects under {shown(given)!r} are fingerprinted "
        "by their ETags already: leave checksum out.")


def check_objects(url: str, entries: list[dict], single: bool
                  ) -> tuple[list[tuple[str, str, str]], dict[str, ObjectInfo]]:
    """Compare the recorded objects with the store: (path, problem, detail) of the missing ones,
    those whose size changed, and those whose ETag changed at the same size ('content'); with
    the current listing.

    One listing of the prefix, or a HEAD where the URL names one object.

    Raises:
        StorageError: the store cannot be reached, refuses the credentials, or lacks the bucket.
    """
    store = open_store(url)
    if single:
        info = store.info("")
        current = {entries[0]["path"]: info} if info is not None and entries else {}
    else:
        current = list_objects(store)[1]
    problems = []
    for entry in entries:
        rel = entry["path"]
        now = current.get(rel)
        if now is None:
            problems.append((rel, "missing", "not in the store"))
        elif now.size != entry["size"]:
            problems.append((rel, "size", f"size {entry['size']} -> {now.size}"))
        elif entry.get("etag") and now.etag and now.etag != entry["etag"]:
            problems.append((rel, "content", f"ETag {entry['etag']} -> {now.etag} "
                                                        "(its content changed)"))
    return problems, current


def object_url(url: str, single: bool, rel: str) -> str:
    """The URL of one object of a version."""
    return url if single else f"{url}/{rel}"


def local_uri(path: "str | os.PathLike[str]") -> str:
    """A local file or folder as a file:// URI."""
    return Path(os.path.abspath(path)).as_uri()


__all__ = ["URL_BASE", "is_url", "is_url_source", "expand_url", "stored_location", "inspect_url",
           "url_entries", "check_objects", "list_objects", "refuse_copy", "refuse_checksum",
           "object_url", "local_uri"]
