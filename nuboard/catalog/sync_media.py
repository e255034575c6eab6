"""The sync's removal of media files that no record names, once the run's writers are gone.
(The `media_keys` rows come with the scalars' summaries: sync.summarize.)

A writer killed between writing a media file and its record leaves a file nothing will show.
Like a temp file (sync.clean_temps), it is removed once no writer of the run is alive (the
run's processes on this host are gone, and another host's heartbeat is older than the run's
lost-after time) and it has not changed for STALE_TEMP seconds; a file any record names, in
any session of any rank (an entry a resume hides included), is kept. The Catalog remembers
what it found per run (catalog.media_checked), so a run is looked at again only when a file it
kept turns stale or a minute after its writer was alive; meanwhile the run's signature ends with
MEDIA_MARK, so that a later sync (of this process or another) looks at it again, finished or
not. Once its writers are gone and nothing waits, the mark goes, and syncs leave it alone until
its logs change.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from nuboard.files import layout
from nuboard.files.media_files import orphan_media, remove_stale
from nuboard.files.media_store import MEDIA
from nuboard.files.status import hostname, read_heartbeat

ALIVE_RECHECK = 60.0             # seconds before a run whose writer was alive is looked at again
MEDIA_MARK = "~media"            # a signature's last part while a media file waits to turn stale


def recorded_files(run_dir: Path) -> set[str] | None:
    """Every file a media record names (run-relative POSIX paths: its "file", a table's
"cells"), in any session of any rank,
    entries a resume hides included; None when a log holds a damaged or unreadable record
    (which might have named one: then nothing is removed). A torn tail is no damage: it is
    what a kill leaves."""
    from nuboard.eventlog.logfile import LogReader
    found = set()
    for _, _, path in layout.list_logs(run_dir):
        reader = LogReader(path)
        for _ in reader.read_iter():
            pass
        stats = reader.stats
        if stats.problems or stats.corrupt_records or stats.bad_records or not stats.header_ok:
            return None
        for doc in reader.media:
            named = [doc.get("file")]
            if isinstance(doc.get("cells"), list):      # a table's image cells
                named += doc["cells"]
            found.update(n for n in named if isinstance(n, str))
    return found


def writers_gone(run_dir: Path) -> bool:
    """Whether no process writes the run any more: no rank has a live writer
    (recording.liveness), and the run is not written by this very process."""
    from nuboard.files import runjson
    from nuboard.recording.liveness import live_writer
    try:
        doc = runjson.read_run(run_dir)
    except (OSError, ValueError):
        doc = None
    beat = read_heartbeat(run_dir) or {}
    if isinstance(doc, dict) and doc.get("status") == "running" \
            and beat.get("pid") == os.getpid() and beat.get("host") == hostname():
        return False                      # live_writer leaves this process out
    return all(live_writer(run_dir, doc, rank) is None
               for rank in layout.list_ranks(run_dir) or [0])


def clean_orphan_media(catalog, folder: Path, names: list[str], sig: str, *,
                       stale_after: float, full: bool = False) -> bool:
    """Remove the run's media files that no record names, when its writers are gone and the
    files are stale. Return whether the run must be looked at again (a writer is alive, or a
    file waits to turn stale): then the sync marks the run's signature (MEDIA_MARK), so that
    the next sync calls this again even when the run is unchanged, or finished; a run whose
    signature is unmarked and unchanged is not looked at (its logs are not read again).
    An OSError is let go: the next sync tries again.

    names: the run folder's entries; sig: its signature (sync.signature), which a new record
    changes; full: look even when the run was looked at with this signature before."""
    if MEDIA not in names:
        return False
    now = time.time()
    seen = catalog.media_checked.get(folder.name)
    head = sig.split("|", 1)[0]            # run.json's part: a finish or a resume changes it
    if not full and seen is not None and seen[0] in (sig, head) and now < seen[1]:
        return seen[2]
    try:
        if not writers_gone(folder):      # asked again in a minute, whatever it logs meanwhile
            catalog.media_checked[folder.name] = (head, now + ALIVE_RECHECK, True)
            return True
        recorded = recorded_files(folder)
        if recorded is None:              # a damaged log: looked at again once it changes
            catalog.media_checked[folder.name] = (sig, float("inf"), False)
            return False
        _, due = remove_stale(orphan_media(folder, recorded), stale_after, now)
    except OSError:
        return False
    catalog.media_checked[folder.name] = (sig, float("inf") if due is None else due,
                                          due is not None)
    return due is not None
