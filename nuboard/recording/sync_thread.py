"""nb.init(sync_to=URL): a daemon thread that pushes the run to a bucket every sync_interval
seconds and once more at finish, never blocking the training and never failing it.

The thread pushes what nuboard.sync.push_run sends (the run's folder, its project's documents
and the artifact versions it made), in the same layout and order as `nuboard sync push`: an
event log cut at its last complete record, data before run.json. Logging never waits for it:
it reads the files the writer has flushed. A store that is down or refuses is one
RuntimeWarning, then a retry at each interval; a later failure after a success warns again.
The final push at finish waits at most FINAL_WAIT seconds (KILLED_WAIT on SIGTERM), then warns
that `nuboard sync push` sends the rest. Only rank 0 runs it, and it sends every rank's logs
it sees in the run folder (on a node, all ranks share the folder).
"""
from __future__ import annotations

import concurrent.futures
import threading
import warnings
from pathlib import Path

FINAL_WAIT = 60.0       # seconds finish() waits for the last push
KILLED_WAIT = 10.0      # ... when the run ends on SIGTERM (the process is to end now)


class RunSync:
    """The background push of one run to `store` (an opened nuboard.remote Store)."""

    def __init__(self, store, root: Path, project: str, run_id: str, interval: float):
        from nuboard.sync.state import SyncState
        self.store = store
        self.root = Path(root)
        self.project = project
        self.run_id = run_id
        self.interval = interval
        self.state = SyncState(None, store.url)       # in memory: the first push hashes
        self.failing = False
        self.pushes = 0
        self._stop = threading.Event()
        self._final = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        _keep_resolving_at_exit(store)
        self._thread = threading.Thread(target=self._loop, name="nuboard-sync-to", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            self.push_once()
            while not self._stop.wait(self.interval):
                self.push_once()
            if self._final.is_set():
                self.push_once(final=True)
        finally:
            self._done.set()

    def push_once(self, final: bool = False) -> bool:
        """One push of the run; a failure is a warning (once until a push succeeds again)."""
        from nuboard.sync.push import push_run
        from nuboard.sync.work import Job
        with self._lock:
            try:
                job = Job("push", self.store.url, self.root, None, state=self.state, store=self.store)
                push_run(job, self.project, self.run_id)
                job.finish()
            except Exception as exc:          # never into the training: one warning, then retries
                if not self.failing:
                    self.failing = True
                    then = ("run 'nuboard sync push' later to send the rest" if final else
                            f"retrying every {self.interval:g} s; training goes on")
                    _warn(f"nuboard: cannot push run {self.project}/{self.run_id} to "
                          f"{self.store.url}: {_line(exc)}; {then}")
                return False
            self.failing = False
            self.pushes += 1
            return True

    def close(self, wait: float = FINAL_WAIT) -> None:
        """Stop the interval pushes and make the last one, waiting at most `wait` seconds."""
        if self._stop.is_set():
            return
        self._final.set()
        self._stop.set()
        if not self._done.wait(wait):
            _warn(f"nuboard: the last push of run {self.project}/{self.run_id} to {self.store.url} "
                  f"did not finish within {wait:g} s; run 'nuboard sync push {self.store.url}' to "
                  "send the rest")

    def abandon(self) -> None:
        """In a forked child: the thread is not there; push nothing."""
        self._stop.set()


def _keep_resolving_at_exit(store) -> None:
    """Let the last push of a run finished at exit reach the store. From interpreter shutdown
    on, every ThreadPoolExecutor refuses work, and the client resolves host names in its event
    loop's default executor ("cannot schedule new futures after interpreter shutdown"). A
    threading-atexit hook, which runs before concurrent.futures shuts its executors down, gives
    that loop an executor that runs each call at once in the loop's thread instead."""
    loop = getattr(store.fs, "loop", None)
    register = getattr(threading, "_register_atexit", None)
    if loop is None or register is None or getattr(loop, "_nuboard_exit_hook", False):
        return

    def inline_from_now_on() -> None:
        try:
            loop.set_default_executor(_InlineExecutor())
        except (RuntimeError, TypeError):
            pass

    try:
        register(inline_from_now_on)
        loop._nuboard_exit_hook = True
    except (RuntimeError, AttributeError):
        pass


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs each call in the caller's thread (a ThreadPoolExecutor only for
    asyncio's type check: it starts no thread)."""

    def submit(self, fn, /, *args, **kwargs):
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:      # handed to the awaiting coroutine, as a pool would
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def start_sync(store, root: Path, project: str, run_id: str, interval: float) -> RunSync:
    return RunSync(store, root, project, run_id, interval)


def _warn(text: str) -> None:
    warnings.warn(text, RuntimeWarning, stacklevel=2)


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500] or type(exc).__name__
