"""What NuBoard does process-wide for the runs a process has open: finish them at exit
(finished, or crashed after an uncaught exception), as killed on SIGTERM (then the script's
own handler, or the end SIGTERM would give), and after fork() leave them to the parent.

`live` holds the process's unfinished runs (Run adds and discards itself); the hooks touch a
run only through its `_end` and `_forked` methods, so this module imports no Run.
"""
from __future__ import annotations

import atexit
import functools
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from nuboard.files import sigterm
from nuboard.files.sigterm import defer_sigterm

if TYPE_CHECKING:
    from .run import Run

live: "set[Run]" = set()      # unfinished runs of this process, kept alive until finished
_hooks_installed = False       # atexit and at-fork hooks (a forked child inherits them)
_sigterm_installed = False     # the SIGTERM handler, set in each process by its main thread
_previous_sigterm: Any = None
_fork_masks: "dict[int, Any]" = {}   # forking thread -> its signal mask before the fork


def defers_sigterm(init):
    """Wrap nb.init: the hooks are installed first, and a SIGTERM during init waits for the
    run to exist, then finishes it as killed."""
    @functools.wraps(init)
    def wrapper(*args, **kwargs):
        install_hooks()
        with defer_sigterm:
            return init(*args, **kwargs)
    return wrapper


def note_cuda_device() -> None:
    """Tell the sampler the CUDA device of the thread that logs (nb.init, a new scalar name, a
    timer, flush): CUDA's current device is per thread, and the sampler has its own."""
    if "torch.cuda" in sys.modules:
        from .capture.system import note_cuda_device as note
        note()


def install_hooks() -> None:
    global _hooks_installed, _sigterm_installed, _previous_sigterm
    if not _hooks_installed:
        _hooks_installed = True
        # The finish at exit runs after threading's shutdown, where an import that registers
        # a threading exit hook fails ("can't register atexit after shutdown"): pyarrow's
        # pandas check imports concurrent.futures.thread, so data.parquet was never written.
        import concurrent.futures.thread  # noqa: F401
        atexit.register(_finish_at_exit)
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)
    if not _sigterm_installed and threading.current_thread() is threading.main_thread():
        try:
            current = signal.getsignal(signal.SIGTERM)
            if current is signal.SIG_DFL or (callable(current) and current is not _on_sigterm):
                _previous_sigterm = current
                signal.signal(signal.SIGTERM, _on_sigterm)
            _sigterm_installed = True
        except (ValueError, OSError):
            pass


def _finish_at_exit() -> None:
    uncaught = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    status = "crashed" if uncaught is not None and not isinstance(uncaught, SystemExit) else "finished"
    for run in list(live):
        if run._pid == os.getpid():
            try:
                run._end(status, run._compact, uncaught if status == "crashed" else None)
            except Exception:
                pass


def _on_sigterm(signum, frame) -> None:
    """Finish every run as killed, then call the script's own handler, or end the process as
    SIGTERM would. Inside NuBoard's locks (sigterm.defer_sigterm) this waits for them."""
    if sigterm.deferred(_on_sigterm, signum, frame):
        return
    for run in list(live):
        if run._pid == os.getpid():
            try:       # without data.parquet: the process is to end now, the logs are the record
                run._end("killed", compact=False)
            except Exception:
                pass
    previous = _previous_sigterm
    if callable(previous) and previous is not _on_sigterm:
        previous(signum, frame)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _before_fork() -> None:
    _fork_masks[threading.get_ident()] = sigterm.block_sigterm_for_fork()


def _after_fork_in_parent() -> None:
    sigterm.restore_mask(_fork_masks.pop(threading.get_ident(), None))


def _after_fork_in_child() -> None:
    """The child gets the SIGTERM handling the script had before nb.init: CPython forgets a
    signal that reaches a child before it is ready for Python handlers, so a Pool worker
    terminated at once never ended (Pool.terminate() hung joining it); the signal held since
    _before_fork now reaches the child's own disposition."""
    global _sigterm_installed
    for run in list(live):
        run._forked()
    live.clear()
    if _sigterm_installed:
        _sigterm_installed = False
        try:
            if signal.getsignal(signal.SIGTERM) is _on_sigterm:
                previous = _previous_sigterm
                signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
        except (ValueError, OSError):
            pass
    mask = _fork_masks.pop(threading.get_ident(), None)
    _fork_masks.clear()
    sigterm.restore_mask(mask)
