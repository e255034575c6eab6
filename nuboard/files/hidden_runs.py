"""The runs a user hid from the lists: the project's `hidden.json`, beside `colours.json`, so the
mark travels with the project folder (a copy, an rsync, a zip).

    {"format": 1, "hidden": ["<run id>", ...]}

A hidden run keeps its folder and its catalog rows; every list that a query makes (the Runs
table, Charts' newest runs, Scatter and parallel coordinates, the Timeline, `nuboard ls`,
`nb.runs`) leaves it out unless asked for hidden runs (catalog/run_reads.py applies the set
when it reads). A run named by id (its own page, `?runs=`) is still shown. An id of a run
that is gone (deleted, in the trash) stays listed, so a restored run comes back hidden.

Read with its kind's rules (documents.read_document: a regular file of at most 16 MB, nested at
most 100 levels, JSON); a file that breaks them or is not of that shape is read as no hidden
run, with a note saying why, never an error. The set is read again only when the file's stamp
(inode, size, mtime) changed, so a list pays a stat. A change is made under a lock
(`.hidden.json.lock`, flock) and the file replaced atomically, keeping every other entry; while
the file is damaged, a change is refused (HiddenRunsError), so the marks it holds are not lost
by writing over it.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from nuboard.errors import NuBoardError

from . import documents, layout
from .jsonfile import replacing, write_json_atomic
from .names import check_folder_name

HIDDEN_FILE = "hidden.json"
HIDDEN = documents.Kind(HIDDEN_FILE, 16 << 20)        # ~500,000 run ids
_CACHE: dict[str, tuple[tuple[int, int, int], frozenset[str], str | None]] = {}
_CACHE_LOCK = threading.Lock()


class HiddenRunsError(NuBoardError, ValueError):
    """A hide or unhide that cannot be kept: hidden.json is damaged or cannot be written now."""


def hidden_path(root: Path, project: str) -> Path:
    return layout.project_dir(root, project) / HIDDEN_FILE


def stamp(root: Path, project: str) -> tuple[int, int, int] | None:
    """What changes whenever hidden.json is replaced (inode, size, mtime); None when absent."""
    try:
        st = hidden_path(root, project).stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read(path: Path) -> tuple[frozenset[str], str | None]:
    try:
        doc = documents.read_document(path, HIDDEN)
    except FileNotFoundError:
        return frozenset(), None
    except (OSError, ValueError) as exc:
        why = documents.unreadable_reason(exc, HIDDEN)
        return frozenset(), f"{HIDDEN_FILE} cannot be read ({why}); no run is hidden."
    ids = doc.get("hidden") if isinstance(doc, dict) else None
    if not isinstance(ids, list):
        return frozenset(), (f"{HIDDEN_FILE} is not of the shape {{\"hidden\": [...]}}; no run "
                             "is hidden.")
    kept = frozenset(i for i in ids if isinstance(i, str) and i)
    bad = len(ids) - sum(1 for i in ids if isinstance(i, str) and i)
    return kept, (f"{bad} entr{'y' if bad == 1 else 'ies'} of {HIDDEN_FILE} are not run ids "
                  "and are ignored." if bad else None)


def read_hidden_noted(root: Path, project: str) -> tuple[frozenset[str], str | None]:
    """The ids of the project's hidden runs and a note saying what of hidden.json was ignored
    (None when nothing was); (frozenset(), None) when there is no file. Read again only when
    the file's stamp changed."""
    path = hidden_path(root, project)
    mark = stamp(root, project)
    if mark is None:
        return frozenset(), None
    key = str(path)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None and found[0] == mark:
        return found[1], found[2]
    ids, note = _read(path)
    with _CACHE_LOCK:
        _CACHE[key] = (mark, ids, note)
    return ids, note


def read_hidden(root: Path, project: str) -> frozenset[str]:
    """The ids of the project's hidden runs; empty when none or hidden.json is unreadable."""
    return read_hidden_noted(root, project)[0]


def set_hidden(root: Path, project: str, run_ids: Iterable[str], hidden: bool) -> frozenset[str]:
    """Hide the runs (hidden=True) or show them again; return every hidden run's id.

    Raises:
        InvalidNameError: a run id that cannot be a folder name.
        HiddenRunsError: hidden.json damaged (it is left as it is) or the project folder not
            writable.
    """
    ids = [check_folder_name(r, "run id") for r in run_ids]
    path = hidden_path(root, project)
    with replacing(path, HiddenRunsError, "hide runs" if hidden else "show hidden runs"):
        try:
            doc = documents.read_document(path, HIDDEN)
        except FileNotFoundError:
            doc = {"format": 1, "hidden": []}
        except (OSError, ValueError) as exc:
            raise HiddenRunsError(f"{documents.unreadable_reason(exc, HIDDEN)}: fix or remove "
                                  f"{str(path)!r} to hide runs (it is left as it is).") from None
        entries = doc.get("hidden") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise HiddenRunsError(f"{HIDDEN_FILE} is not of the shape {{\"hidden\": [...]}}: fix "
                                  f"or remove {str(path)!r} to hide runs (it is left as it is).")
        if hidden:
            known = set(e for e in entries if isinstance(e, str))
            entries = entries + [i for i in dict.fromkeys(ids) if i not in known]
        else:
            gone = set(ids)
            entries = [e for e in entries if e not in gone]
        doc["hidden"] = entries
        doc.setdefault("format", 1)
        write_json_atomic(path, doc)
    return read_hidden(root, project)
