"""One object store opened through fsspec, its listings, and its failures as one line.

    store = open_store("s3://lab/experiments")
    objects = store.listing("llm/runs")        # {"<run>/run.json": ObjectInfo(...), ...}
    store.fs.put_file(local, store.key("llm/runs/<run>/run.json"))

Every failure of the store becomes StorageError with one line naming the URL and what to do
(credentials, a bucket that does not exist, a server that cannot be reached); a missing
client package is MissingExtraError naming the extra. Settings come from where the client
library reads them: AWS_ENDPOINT_URL, AWS_PROFILE, AWS_ACCESS_KEY_ID and the like for S3
(MinIO and other S3-compatible servers through AWS_ENDPOINT_URL), GOOGLE_APPLICATION_CREDENTIALS
for GCS, and fsspec's FSSPEC_<PROTOCOL>_<OPTION> variables for any other option.
"""
from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from nuboard.errors import StorageError, import_extra

from .urls import is_url, join, scheme, shown

# The package each scheme needs, and the extra that brings it (pyproject.toml).
_CLIENTS = {
    "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"),
    "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"),
    "az": ("adlfs", "azure"), "abfs": ("adlfs", "azure"), "abfss": ("adlfs", "azure"),
}
# A store that is down answers within seconds rather than after minutes of the client's retries;
# sync retries on its own schedule (docs/team.md, "Without a shared folder"). AWS_MAX_ATTEMPTS,
# where set, is botocore's own setting and wins.
CONNECT_TIMEOUT, READ_TIMEOUT, MAX_ATTEMPTS = 5, 60, 2


class ObjectInfo(NamedTuple):
    """One object of a listing: its size, its ETag (quotes removed; None where the store gives
    none), its version id where the bucket keeps versions, and when it was last written (epoch
    seconds, or None)."""
    size: int
    etag: str | None
    version_id: str | None
    mtime: float | None


class Store:
    """An opened store: `fs` (the fsspec filesystem), `url` (as given), `root` (the path fsspec
    uses for it, without the scheme)."""

    def __init__(self, url: str, fs: Any, root: str):
        self.url = url
        self.fs = fs
        self.root = root.rstrip("/")

    def key(self, relative: str = "") -> str:
        """The fsspec path of `relative` under the store's root."""
        relative = relative.strip("/")
        return f"{self.root}/{relative}" if relative else self.root

    def url_of(self, relative: str = "") -> str:
        """The URL of `relative` under the store's root."""
        return join(self.url, relative)

    def listing(self, relative: str = "") -> dict[str, ObjectInfo]:
        """Every object under `relative`, keyed by its path below it, listed afresh (fsspec's
        cached listings are dropped first). A prefix with no object is an empty dict."""
        top = self.key(relative)
        try:
            self.fs.invalidate_cache(top)
            found = self.fs.find(top, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            raise storage_error(exc, self.url_of(relative), "list") from exc
        out: dict[str, ObjectInfo] = {}
        cut = len(top) + 1
        for path, info in found.items():
            if info.get("type") == "directory":
                continue
            out[path[cut:] if path.startswith(top + "/") else path.rsplit("/", 1)[-1]] = object_info(info)
        return out

    def info(self, relative: str) -> ObjectInfo | None:
        """One object's ObjectInfo (a HEAD request), or None when there is no such object."""
        try:
            return object_info(self.fs.info(self.key(relative), refresh=True))
        except FileNotFoundError:
            return None
        except TypeError:        # a filesystem whose info() takes no refresh=
            try:
                return object_info(self.fs.info(self.key(relative)))
            except FileNotFoundError:
                return None
            except Exception as exc:
                raise storage_error(exc, self.url_of(relative), "read") from exc
        except Exception as exc:
            raise storage_error(exc, self.url_of(relative), "read") from exc


def object_info(info: dict) -> ObjectInfo:
    """An fsspec info dict as ObjectInfo."""
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("etag_hex")
    if isinstance(etag, str):
        etag = etag.strip('"') or None
    else:
        etag = None
    version = info.get("VersionId") or info.get("version_id") or info.get("generation")
    mtime = info.get("LastModified") or info.get("mtime") or info.get("updated") or info.get("last_modified")
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    elif not isinstance(mtime, (int, float)):
        mtime = None
    size = info.get("size") if isinstance(info.get("size"), int) else int(info.get("Size") or 0)
    return ObjectInfo(size, etag, str(version) if version not in (None, "null") else None, mtime)


def open_store(url: str, *, version_aware: bool = False) -> Store:
    """The store at `url` (s3://bucket/prefix, gs://..., any fsspec URL).

    Raises:
        MissingExtraError: the scheme's client package is not installed (naming the extra).
        StorageError: fsspec knows no such scheme, or the URL is malformed.
    """
    if not is_url(url):
        raise StorageError(f"{url!r} is not an object-store URL (such as s3://bucket/prefix)")
    proto = scheme(url)
    client = _CLIENTS.get(proto or "")
    if client is not None:
        _import_client(client[0], client[1], url)
    fsspec = _import_client("fsspec", client[1] if client else "s3", url)
    # A fresh client each time: fsspec's cached one would keep the endpoint and keys it was made
    # with after the environment changed. Keep the Store for as long as the work lasts.
    options: dict[str, Any] = {"skip_instance_cache": True}
    if client is not None and client[0] == "s3fs":
        config: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT, "read_timeout": READ_TIMEOUT}
        if not os.environ.get("AWS_MAX_ATTEMPTS", "").strip():
            config["retries"] = {"max_attempts": MAX_ATTEMPTS}
        options["config_kwargs"] = config
        if version_aware:
            options["version_aware"] = True
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as exc:
        raise StorageError(f"cannot open {shown(url)}: {_first_line(exc)}") from exc
    if client is not None and client[0] == "s3fs":
        fs.retries = 2           # s3fs's own retries of a failed call (5 by default)
    quiet_dropped_connections(fs)
    return Store(url.rstrip("/"), fs, root)


def quiet_dropped_connections(fs) -> None:
    """Keep the client's event loop from printing a traceback for each request a dropped
    connection left behind ("Task exception was never retrieved", aiohttp): the request that
    failed is reported as one StorageError line already."""
    loop = getattr(fs, "loop", None)
    if loop is None or getattr(loop, "_nuboard_quiet", False):
        return

    def handler(loop, context):
        error = context.get("exception")
        if isinstance(error, (OSError, ConnectionError)) or type(error).__module__.startswith("aiohttp"):
            return
        loop.default_exception_handler(context)

    try:
        loop.set_exception_handler(handler)
        loop._nuboard_quiet = True
    except (AttributeError, RuntimeError):
        pass


def _import_client(module: str, extra: str, url: str):
    return import_extra(module, extra, shown(url))


def storage_error(exc: BaseException, url: str, doing: str) -> StorageError:
    """`exc`, raised by the store while it did `doing` ('list', 'read', 'write', 'delete') at
    `url`, as one line saying what is wrong and what to do."""
    where = shown(url)
    text = _first_line(exc)
    name = type(exc).__name__
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if isinstance(exc, StorageError):
        return exc
    if name in ("NoCredentialsError", "PartialCredentialsError") or "Unable to locate credentials" in text:
        return StorageError(f"cannot {doing} {where}: no credentials found (set AWS_PROFILE, or "
                            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
    if _unreachable(exc):          # first: a dropped connection is never a refusal
        at = f" at {endpoint}" if endpoint and scheme(url) in ("s3", "s3a") else ""
        return StorageError(f"cannot {doing} {where}: the object store{at} cannot be reached ({text})")
    if isinstance(exc, PermissionError) or re.search(
            r"AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|\bForbidden\b|\b403\b", text):
        return StorageError(f"cannot {doing} {where}: access denied ({text}); check the credentials")
    if "NoSuchBucket" in text or "bucket does not exist" in text.lower():
        return StorageError(f"cannot {doing} {where}: the bucket does not exist")
    if isinstance(exc, FileNotFoundError):
        return StorageError(f"cannot {doing} {where}: no such object")
    return StorageError(f"cannot {doing} {where}: {text}")


_UNREACHABLE_TEXT = re.compile(r"Could not connect to the endpoint URL|Connection was closed|"
                               r"Connect timeout on endpoint URL|Read timeout on endpoint URL|"
                               r"Cannot connect to host", re.IGNORECASE)


def _unreachable(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the store could not be reached or dropped the
    connection: by type along the chain, or by botocore's and aiohttp's words."""
    if _UNREACHABLE_TEXT.search(str(exc)):
        return True
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        name = type(exc).__name__
        if isinstance(exc, (ConnectionError, TimeoutError)) or name in (
                "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
                "ClientConnectorError", "ServerDisconnectedError", "ClientOSError",
                "ConnectionClosedError", "ServerTimeoutError"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
