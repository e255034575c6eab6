"""Runs that travel: `nuboard sync push/pull` and nb.init(sync_to=) copy projects, run folders
and artifact versions to and from object storage (docs/team.md, "Without a shared folder").

    from nuboard.sync import push, pull
    print(push("s3://lab/exp", Path("experiments")).line())
    pull("s3://lab/exp", Path("mirror"))

travel.py says what travels and in which order, state.py what the two sides last agreed on,
push.py and pull.py do the copies, work.py runs them in a pool of threads; the store itself
is nuboard.remote's.
"""
from __future__ import annotations

from .errors import SyncConflictError
from .pull import pull
from .push import push
from .summary import SyncSummary

__all__ = ["SyncConflictError", "SyncSummary", "pull", "push"]
