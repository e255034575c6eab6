"""The files NuBoard reads from a project: each opened by `open_regular` (never blocking on a
FIFO, socket or device file someone left there), each JSON kind read one guarded way.

run.json, manifest.json, views.json, the heartbeat and the other small records are files
anyone can write. Every reader of a kind goes through `read_document` with the kind's rules,
so that the index, the viewer and the command line take or leave one file alike: only a
regular file is opened (a FIFO never blocks), it is at most the kind's size, nested at most
MAX_DEPTH levels (checked on the bytes before parsing, so no reader ever meets a
RecursionError), valid JSON, and, except in a manifest, holds no lone surrogate escape (a
manifest holds file names that are not UTF-8 as \\udcXX escapes). A file that breaks a rule
is a `DocumentError` whose `reason` names the kind and the rule ("manifest.json is not
readable JSON (nested more than 100 levels deep)"); one that cannot be opened is the OSError
(NotRegularFileError for a FIFO); `unreadable_reason` says either in one line, and the caller
skips the file with it. Field types are each kind's own check (catalog/run_doc.py,
artifacts/manifest.py, web/views.py).
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, NamedTuple

MAX_DEPTH = 100              # levels of lists and objects; the API writes at most 66 (a config)


class Kind(NamedTuple):
    """A kind of JSON file: its name in messages, its largest size, whether it may hold lone
    surrogate escapes."""
    name: str
    max_bytes: int
    surrogates: bool = False


RUN_JSON = Kind("run.json", 64 << 20)                      # a config is at most 16 MB
MANIFEST = Kind("manifest.json", 1 << 30, surrogates=True)  # ~80 MB a million files
VIEWS = Kind("views.json", 16 << 20)                        # 500 views of bounded parts
HEARTBEAT = Kind("heartbeat", 64 << 10)
RECORD = Kind("record", 64 << 20)                           # any other JSON file NuBoard writes


class DocumentError(ValueError):
    """A JSON file that cannot be used; `reason` says why, naming the kind and the rule."""

    def __init__(self, path: "str | os.PathLike[str]", reason: str):
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def _mb(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} kB"


class NotRegularFileError(OSError):
    """A path that NuBoard reads is a FIFO, socket, device or folder, not a regular file."""


def open_regular(path: Path | str):
    """Open a regular file for reading in binary mode; never block on anything else.

    The path is checked with stat first, opened with O_NONBLOCK (so a FIFO swapped in after the
    check cannot block the open) and checked again with fstat on the open descriptor. Raises
    NotRegularFileError (an OSError, errno EINVAL) naming the path when it is not a regular
    file, and the usual OSError when it is missing or unreadable.
    """
    path = os.fspath(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_document(path: "str | os.PathLike[str]", kind: Kind = RECORD) -> Any:
    """A JSON file of a kind, parsed, if it keeps the kind's rules (see the module's doc).

    Raises:
        OSError: it cannot be opened: FileNotFoundError, NotRegularFileError (a FIFO, socket,
            device or folder), PermissionError...
        DocumentError (a ValueError): it breaks the kind's rules (see read_sized_document).
    """
    return read_sized_document(path, kind)[0]


def read_sized_document(path: "str | os.PathLike[str]", kind: Kind = RECORD) -> tuple[Any, int]:
    """read_document, and the size in bytes of the text it parsed.

    Raises:
        OSError: it cannot be opened (see read_document).
        DocumentError (a ValueError): larger than the kind's size, nested more than MAX_DEPTH
            levels, not JSON, or a lone surrogate escape where the kind allows none.
    """
    data = _read_bytes(Path(path), kind)
    bad = f"{kind.name} is not readable JSON"
    if nesting_depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise DocumentError(path, f"{bad} (nested more than {MAX_DEPTH} levels deep)")
    try:
        doc = json.loads(data.decode("utf-8"))
    except RecursionError:           # only unbalanced text that nesting_depth could not count
        raise DocumentError(path, f"{bad} (nested more than {MAX_DEPTH} levels deep)") from None
    except ValueError as exc:         # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise DocumentError(path, f"{bad} ({str(exc)[:200]})") from None
    if not kind.surrogates and b"\\ud" in data.lower():   # allowed only as a valid pair
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise DocumentError(path, f"{bad} (a lone surrogate escape)") from None
    return doc, len(data)


def unreadable_reason(exc: Exception, kind: Kind) -> str:
    """One line saying why a file of a kind was not read, from read_document's error."""
    if isinstance(exc, DocumentError):
        return exc.reason
    if isinstance(exc, NotRegularFileError):
        return f"{kind.name} is not a regular file"
    if isinstance(exc, OSError):
        return f"{kind.name} cannot be read ({exc.strerror or exc})"
    return f"{kind.name} cannot be read ({str(exc)[:200]})"


def _read_bytes(path: Path, kind: Kind) -> bytes:
    """The file's bytes; never more than the kind's size (checked on the open descriptor)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= kind.max_bytes:
            data = fh.read(kind.max_bytes + 1)           # it may have grown since
            size = len(data)
    if size > kind.max_bytes:
        raise DocumentError(path, f"{kind.name} is larger than {_mb(kind.max_bytes)}")
    return data


_KEEP = b'"[]{}'
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_SQUARE = bytes.maketrans(b"{}", b"[]")           # depth does not care which bracket
_STRING = re.compile(rb'"[^"]*"')


def nesting_depth(data: bytes, stop: int) -> int:
    """How deep lists and objects nest in JSON text, counted on the bytes (no parse, no
    recursion); the count stops past `stop`. Text whose brackets do not balance (not JSON)
    counts 0: the parser then says what is wrong with it.

    Escaped backslashes and quotes are dropped, then all but quotes and brackets (braces
    become square ones); strings (now a quote, any brackets they held, a quote) are dropped,
    and pairs of brackets are taken away from the inside out, one level a pass. About 0.2 s
    for an 80 MB manifest.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = data.translate(_SQUARE, _DROP)
    rest = marks.replace(b'""', b"")     # strings without brackets, at C speed
    marks = rest if b'"' not in rest else _STRING.sub(b"", marks)
    for depth in range(stop + 1):
        if not marks:
            return depth
        size = len(marks)
        marks = marks.replace(b"[]", b"")
        if len(marks) == size:
            return 0                    # unbalanced: not JSON
    return stop + 1
