"""A SIGTERM that never hangs the process: held while the main thread is inside NuBoard's locks.

Python runs a signal handler on the main thread, between two bytecodes of whatever the main
thread was doing. When that was NuBoard's own code holding a lock (the writer's drain lock in
run.flush(), run.json's flock in run.add_artifact), finishing the run from the handler waited
for a lock its own process held, and the process hung; inside finish() it ended the process
before the status was written. So the main thread takes those locks (the console copy's and a
new scalar's too) inside `with defer_sigterm:`; a SIGTERM arriving there is recorded, and its
handler runs when the outermost such block ends, with every lock let go. finish() up to the
status and nb.init are such blocks, so a SIGTERM during init finishes the new run as killed.

NuBoard's own threads block the signals a script may handle in Python, from their first
instruction (`start_blocked`: they inherit the mask of the thread that starts them), so the
kernel delivers them to the main thread, waking it from a sleep or a blocking read. A
signal delivered to another thread only sets a flag: the main thread ran the handler when it
next ran Python code, 60 s later for a script in time.sleep(60).
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

# Faults go to the thread that caused them and must stay deliverable; SIGKILL and SIGSTOP
# cannot be blocked anyway.
_NOT_BLOCKED = {getattr(signal, name) for name in
                ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGABRT",
                 "SIGKILL", "SIGSTOP") if hasattr(signal, name)}
BLOCKED = frozenset(s for s in getattr(signal, "valid_signals", set)() if s not in _NOT_BLOCKED)

_get_ident = threading.get_ident
_main = threading.main_thread().ident
_depth = 0          # how many `with defer_sigterm:` blocks the main thread is inside
_pending = None     # (handler, signum, frame) of a SIGTERM that came inside one


class _DeferSigterm:
    """`with defer_sigterm:` on the main thread holds a SIGTERM until the block ends; on any
    other thread it does nothing (the handler never interrupts another thread)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth
        if _get_ident() == _main:
            _depth += 1

    def __exit__(self, *exc) -> None:
        global _depth, _pending
        if _get_ident() == _main:
            _depth -= 1
            if not _depth and _pending is not None:
                handler, signum, frame = _pending
                _pending = None
                handler(signum, frame)


defer_sigterm = _DeferSigterm()


def deferred(handler, signum: int, frame) -> bool:
    """Called first by the SIGTERM handler: True when the main thread is inside a
    `defer_sigterm` block, so the handler is to run (once) when that block ends."""
    global _pending
    if _depth and _get_ident() == _main:
        if _pending is None:
            _pending = (handler, signum, frame)
        return True
    return False


def pending() -> bool:
    """Whether a SIGTERM waits for the main thread to leave NuBoard's code (a loop that waits
    for the disk gives up on seeing it)."""
    return _pending is not None


def block_signals() -> None:
    """Block, in the calling thread (one of NuBoard's), the signals a script may handle."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
    except (AttributeError, OSError, ValueError):   # no pthread_sigmask (Windows)
        pass


def start_blocked(thread: threading.Thread) -> None:
    """Start one of NuBoard's threads with the signals a script may handle blocked from its
    first instruction: it inherits the mask of the thread that starts it, so the starter
    blocks them around start(). A thread that blocked them itself, once running, left a
    moment in which a SIGTERM sent right after nb.init went to it, and the main thread slept
    on (60 s in time.sleep(60))."""
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
    except (AttributeError, OSError, ValueError):   # no pthread_sigmask (Windows)
        thread.start()
        return
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def signals_unblocked():
    """Let the calling thread take signals again for a while: a program it starts inherits
    its signal mask, and nvidia-smi must stay killable by Ctrl-C and SIGTERM."""
    try:
        before = signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED)
    except (AttributeError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def block_sigterm_for_fork():
    """Before os.fork(): hold SIGTERM in the forking thread, so that a child killed at once
    (a Pool worker terminated before it ran) keeps the signal pending until the child has put
    back its own handler; returns the mask to restore on both sides."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (AttributeError, OSError, ValueError):
        return None


def restore_mask(mask) -> None:
    if mask is not None:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        except (OSError, ValueError):
            pass


def _reset_in_child() -> None:
    """In a forked child: its only thread is its main thread, inside no NuBoard code."""
    global _main, _depth, _pending
    _main = _get_ident()
    _depth = 0
    _pending = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
