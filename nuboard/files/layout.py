"""Where things live on disk: the root, projects, runs, event logs, and the packaged folders."""
from __future__ import annotations

import os
import re
from pathlib import Path

from nuboard.errors import InvalidTypeError

from .runjson import RUN_JSON  # noqa: F401  (layout.RUN_JSON: the name every reader uses)

HEARTBEAT = "heartbeat"
PARQUET = "data.parquet"
FILES = "files"
# A log name in canonical form only: ASCII digits, no leading zero, at most 19 digits.
LOG_PATTERN = re.compile(r"events\.r(0|[1-9][0-9]{0,18})\.s(0|[1-9][0-9]{0,18})\.log\Z", re.ASCII)
INT64_MAX = (1 << 63) - 1


CACHE_VAR = "NUBOARD_CACHE_DIR"


def cache_dir() -> Path:
    """$NUBOARD_CACHE_DIR, else ~/.cache/nuboard: the one cache folder, which holds catalogs that
    do not sit in a project, the local copies of URL references (objects/) and the mirrors of
    `nuboard up s3://...` (mirrors/)."""
    return Path(os.environ.get(CACHE_VAR) or Path.home() / ".cache" / "nuboard")


def resolve_root(dir: "str | os.PathLike[str] | None" = None) -> Path:
    """The root folder: `dir`, else $NUBOARD_DIR, else ./experiments (kept relative)."""
    if dir is None:
        dir = os.environ.get("NUBOARD_DIR") or "experiments"
    if not isinstance(dir, (str, os.PathLike)):
        raise InvalidTypeError(f"dir must be a str or a path, not {type(dir).__name__} ({dir!r:.80})")
    return Path(dir)


def nfc(text: str) -> str:
    """text in Unicode normal form C (composed: 'é' as one character); ASCII as it is."""
    if text.isascii():
        return text
    import unicodedata  # only for a name that needs it
    return unicodedata.normalize("NFC", text)


def project_dir(root: Path, project: str) -> Path:
    """The folder of a project; '/' in the project name nests folders.

    Each segment is its NFC spelling, or, where no folder has that spelling, the folder there
    whose name is another spelling of it (made by a NuBoard before names were NFC, or copied
    from a Mac): one project, one folder. Where both exist, the NFC one is the project.
    """
    folder = Path(root)
    for segment in project.split("/"):
        folder = folder / _spelled(folder, segment)
    return folder


def _spelled(parent: Path, segment: str) -> str:
    """The name of the folder under parent that is the segment, in whichever spelling."""
    name = nfc(segment)
    if name.isascii() or (parent / name).exists():
        return name
    try:
        entries = os.listdir(parent)
    except OSError:
        return name
    twins = sorted(e for e in entries if e != name and nfc(e) == name)
    return twins[0] if twins else name


def runs_dir(root: Path, project: str) -> Path:
    return project_dir(root, project) / "runs"


def run_dir(root: Path, project: str, run_id: str) -> Path:
    return runs_dir(root, project) / run_id


def log_name(rank: int, session: int) -> str:
    """The event log of one rank in one session: events.r<rank>.s<session>.log."""
    return f"events.r{rank}.s{session}.log"


def parse_log_name(name: str) -> tuple[int, int] | None:
    """(rank, session) of an event log's file name; None for any other name, one not in the
    form log_name writes ('events.r01.s0.log') or with a number outside int64."""
    match = LOG_PATTERN.match(name)
    if match is None:
        return None
    rank, session = int(match.group(1)), int(match.group(2))
    if rank > INT64_MAX or session > INT64_MAX:
        return None
    return rank, session


def list_logs(folder: Path, rank: int | None = None) -> list[tuple[int, int, Path]]:
    """The event logs in a run folder as (rank, session, path), sorted by rank then session.

    Only regular files (or links to them) whose name parse_log_name reads are listed: a stray
    file, a FIFO or a folder named like a log is left out, never an error.
    """
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        parsed = parse_log_name(entry.name)
        if parsed is None or (rank is not None and parsed[0] != rank):
            continue
        try:
            regular = entry.is_file()
        except OSError:
            continue
        if regular:
            found.append((parsed[0], parsed[1], Path(folder) / entry.name))
    found.sort()
    return found


def list_ranks(folder: Path) -> list[int]:
    """The ranks that have an event log in a run folder, sorted."""
    return sorted({rank for rank, _, _ in list_logs(folder)})


def resource_dir(name: str) -> Path:
    """A packaged folder ('templates', 'static', 'migrations').

    Inside an installed wheel it sits in the package; in a checkout (also an editable
    install) it sits beside the package, at the top of the repository.
    """
    package = Path(__file__).resolve().parents[1]  # nuboard/, above files/
    inside = package / name
    if inside.is_dir():
        return inside
    return package.parent / name


SKIP_INSIDE_PROJECT = ("runs", "artifacts")
# Every name NuBoard itself uses inside a project folder: runs/, artifacts/, the catalog's
# .nuboard/, the viewer's saved views (web/views.py), run colours and hidden runs. A nested
# project may not take one.
PROJECT_ENTRIES = ("runs", "artifacts", ".nuboard", "views.json", "colours.json", "hidden.json")


def find_projects(root: Path) -> list[str]:
    """Every project under root ('llm', 'team/llm'): a folder with `runs/` or `artifacts/`.

    Projects nest, so the walk goes on below a project, but not into its `runs/` or
    `artifacts/` folders, nor into any folder whose name starts with a dot. Names are given in
    NFC; a folder that is another spelling of a folder beside it spelled in NFC is not walked
    (project_dir never picks it: the NFC one is the project).
    """
    found = []
    for folder, subdirs, _files in os.walk(root):
        here = Path(folder)
        is_project = here != Path(root) and ("runs" in subdirs or "artifacts" in subdirs)
        if is_project:
            found.append(nfc("/".join(here.relative_to(root).parts)))
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".")
                            and not (is_project and d in SKIP_INSIDE_PROJECT)
                            and (d.isascii() or nfc(d) == d or nfc(d) not in subdirs))
    return sorted(set(found))
