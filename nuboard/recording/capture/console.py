"""The console copy: what the script writes to sys.stdout and sys.stderr, also in files/output.log.

A write goes to the original stream first, then its text is appended to a list (one C call
under the GIL, so a write is never split or lost between threads). A write holding a newline
or a carriage return (or making 256 pieces pending), a flush of either stream, and stop()
drain the list into the file in one os.write under a lock. So the file gets whole lines as
soon as they end, a crash traceback is there before atexit, and a SIGKILL loses at most an
unfinished line.
"""
from __future__ import annotations

import datetime
import os
import sys
import threading
import warnings
import weakref
from pathlib import Path

from nuboard.files.sigterm import defer_sigterm

_live: weakref.WeakSet[ConsoleCapture] = weakref.WeakSet()   # what a forked child turns off


class ConsoleCapture:
    """Copies what the script writes to sys.stdout and sys.stderr into files/output.log.

    Only Python-level writes are copied: print, warnings, tracebacks and logging output (a
    logging StreamHandler made before start() on sys.stdout or sys.stderr is pointed at the
    copying stream until stop()). Bytes written to sys.stdout.buffer or to the file descriptors are not
    copied. The file is created at the first output; a session > 0 appends after a
    `[nuboard: session N, <time>]` line. The copy stops at cap_bytes with a note, and at the
    first I/O error with one warning. A process forked after start() never writes to the file.
    """

    def __init__(self, path: Path, session: int, cap_bytes: int = 64 * 1024 * 1024, *,
                 quiet_if_run_gone: bool = False):
        self.path = Path(path)
        self.session = session
        self.cap_bytes = cap_bytes
        self.quiet_if_run_gone = quiet_if_run_gone   # <run>/files/output.log: <run> removed
        self._lock = threading.RLock()   # reentrant: a signal handler may print mid-drain
        self._pid = os.getpid()
        self._copying = False            # off before start, after stop, at the cap, on an error
        self._pending: list[str] = []    # written, not yet in the file
        self._fd: int | None = None      # opened at the first output
        self._size = 0
        self._ends_line = True
        self._warned = False
        self._wrappers: list[tuple[str, _CopyingStream]] = []
        self._handlers: list[tuple] = []   # logging handlers pointed at a wrapper, to put back

    def start(self) -> None:
        """Wrap sys.stdout and sys.stderr; does nothing when already started."""
        if self._wrappers:
            return
        self._pid = os.getpid()
        self._copying = True
        for name in ("stdout", "stderr"):
            original = getattr(sys, name)
            if original is not None:
                wrapper = _CopyingStream(original, self)
                setattr(sys, name, wrapper)
                self._wrappers.append((name, wrapper))
        self._handlers = _repoint_handlers({w._nuboard_original: w for _, w in self._wrappers})
        _live.add(self)

    def stop(self) -> None:
        """Put back the original streams (or, where something wrapped ours since, pass
        through), write what is pending and close the file. Safe to call twice."""
        for name, wrapper in self._wrappers:
            wrapper._nuboard_capture = None
            if getattr(sys, name) is wrapper:
                setattr(sys, name, wrapper._nuboard_original)
        self._wrappers = []
        for handler, original, wrapper in self._handlers:
            if getattr(handler, "stream", None) is wrapper:
                handler.stream = original
        self._handlers = []
        if os.getpid() != self._pid:     # a forked child: the lock may be held by a lost thread
            self._detach_in_child()
            return
        if self._copying:
            self._drain()
        with defer_sigterm, self._lock:
            self._copying = False
            self._close()
        _live.discard(self)

    def copy_traceback(self, exc_type, exc, tb) -> None:
        """Copy the traceback of an exception leaving `with nb.init(...)`: Python prints it
        only after the block has finished the run and stopped this copy."""
        if not self._copying or os.getpid() != self._pid:
            return
        import traceback
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        with defer_sigterm, self._lock:
            pending = "".join(self._pending)
            ends_line = pending.endswith("\n") if pending else self._ends_line
            self._pending.append(("" if ends_line else "\n") + text)
        self._drain()

    def _drain(self) -> None:
        """Append the pending text to the file; give up on an I/O error."""
        with defer_sigterm, self._lock:   # a SIGTERM's finish would stop this copy mid-write
            pending = self._pending
            count = len(pending)
            if not count or not self._copying:
                return
            text = "".join(pending[:count])
            del pending[:count]
            if os.getpid() != self._pid:          # forked without the at-fork hook running
                self._detach_in_child()
                return
            if not text:
                return
            try:
                self._append(text.encode("utf-8", "backslashreplace"))
                return
            except OSError as exc:
                error = exc
                self._copying = False
                self._pending.clear()
                self._close()
        self._warn(error)

    # -- under the lock -------------------------------------------------------------------
    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self._open()
            if not self._copying:        # a resumed session found the file at its cap
                return
        room = self.cap_bytes - self._size
        if len(data) >= room:            # reaches the cap: what fits, then the note
            cut = max(room, 0)
            while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:   # not inside a character
                cut -= 1
            data = data[:cut]
            ends_line = data.endswith(b"\n") if data else self._ends_line
            note = (f"[nuboard: output.log reached its {self.cap_bytes / 2**20:.3g} MB cap; "
                    "the rest of the output is not copied]\n").encode()
            data += (b"" if ends_line else b"\n") + note
            self._copying = False
            self._pending.clear()
        written = os.write(self._fd, data)
        if written < len(data):          # a short write: go on until all of it is there
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(self._fd, view):]
        self._size += len(data)
        self._ends_line = data.endswith(b"\n")

    def _open(self) -> None:
        """Open the file for appending; a resumed session first writes its session line."""
        self.path.parent.mkdir(exist_ok=True)   # files/ only: a vanished run folder is an error
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size
        if self._size:
            with open(self.path, "rb") as existing:
                existing.seek(self._size - 1)
                self._ends_line = existing.read(1) == b"\n"
        if self._size >= self.cap_bytes:
            self._copying = False
        elif self.session > 0:
            when = datetime.datetime.now().isoformat(timespec="seconds")
            head = f"[nuboard: session {self.session}, {when}]\n"
            self._append((head if self._ends_line else "\n" + head).encode())

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _warn(self, error: OSError) -> None:
        """Warn once, outside the lock; copying is off, so it reaches only the real stderr.
        Not when the run's folder itself is gone and `quiet_if_run_gone`: a run's event log
        writer says that, once."""
        if self._warned:
            return
        self._warned = True
        if self.quiet_if_run_gone and not self.path.parent.parent.is_dir():
            return
        try:
            warnings.warn(f"nuboard: cannot write the console copy in {self.path.parent} "
                          f"({error.strerror or error}); the rest of the output is not copied "
                          "to output.log. The script's output is unaffected.",
                          RuntimeWarning, stacklevel=4)   # _warn, _drain, write, the script
        except Exception:                # warnings made errors (-W error) must not reach print()
            pass

    def _detach_in_child(self) -> None:
        """In a forked child: stop copying and let go of the parent's file, without the lock."""
        self._copying = False
        self._pending = []
        self._close()


class _CopyingStream:
    """Stands in for sys.stdout or sys.stderr: writes go to the original, then to the copy;
    every other attribute is the original's."""

    def __init__(self, original, capture: ConsoleCapture):
        self._nuboard_original = original
        self._nuboard_capture: ConsoleCapture | None = capture   # None: a pure pass-through

    def write(self, text):
        written = self._nuboard_original.write(text)
        capture = self._nuboard_capture
        if capture is not None and capture._copying and isinstance(text, str):
            capture._pending.append(text)
            if "\n" in text or "\r" in text or len(capture._pending) > 256:
                capture._drain()
        return written

    def writelines(self, lines) -> None:
        lines = list(lines)
        self._nuboard_original.writelines(lines)
        capture = self._nuboard_capture
        if capture is not None and capture._copying and all(isinstance(s, str) for s in lines):
            capture._pending.append("".join(lines))
            capture._drain()

    def flush(self) -> None:
        self._nuboard_original.flush()
        capture = self._nuboard_capture
        if capture is not None and capture._copying and capture._pending:
            capture._drain()

    def __getattr__(self, name: str):
        if name.startswith("_nuboard_"):
            raise AttributeError(name)
        return getattr(self._nuboard_original, name)


def _detach_all_in_child() -> None:
    for capture in list(_live):
        capture._detach_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_detach_all_in_child)


def _repoint_handlers(streams: dict) -> list[tuple]:
    """Point logging StreamHandlers that write to an original stream at its wrapper.

    Handlers made before the capture (logging.basicConfig() at the top of a script) hold the
    original stream; without this, their output would not be copied. logging is not imported
    here when the script has not imported it.
    """
    logging = sys.modules.get("logging")
    if logging is None or not streams:
        return []
    loggers = [logging.getLogger()] + [
        lg for lg in list(logging.Logger.manager.loggerDict.values()) if isinstance(lg, logging.Logger)]
    changed = []
    for logger in loggers:
        for handler in list(getattr(logger, "handlers", [])):
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and stream in streams:
                handler.stream = streams[stream]
                changed.append((handler, stream, streams[stream]))
    return changed
