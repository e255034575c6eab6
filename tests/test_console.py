"""The console copy (nuboard.recording.capture.console) in real child processes, beside their real output."""
from __future__ import annotations

import datetime
import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import child_env, run_child, small_tmpfs

from nuboard.recording.capture.console import ConsoleCapture

PRELUDE = """\
import os, sys
from pathlib import Path
from nuboard.recording.capture.console import ConsoleCapture
LOG = Path(os.environ["LOG"])
"""


def capture_child(code: str, log: Path, **kw) -> subprocess.CompletedProcess:
    """Run a snippet that has LOG (the output.log path) and ConsoleCapture at hand."""
    return run_child(PRELUDE + textwrap.dedent(code), LOG=str(log), **kw)


@pytest.fixture
def log(tmp_path) -> Path:
    """The output.log of a run folder that exists, with no files/ folder yet."""
    (tmp_path / "run").mkdir()
    return tmp_path / "run" / "files" / "output.log"


def test_prints_logging_and_warnings_are_copied_and_the_real_output_is_unchanged(log):
    """The file holds exactly what the real stdout and stderr got, in the order written."""
    proc = capture_child("""
        import logging, warnings
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        for i in range(3):
            print("line", i)
        print("sep", "end", sep="|", end="!\\n")
        sys.stdout.writelines(["a\\n", "b\\n"])
        sys.stdout.flush()
        logging.basicConfig(level=logging.INFO)     # its StreamHandler is made after start()
        logging.info("from logging")
        warnings.warn("careful")
        sys.stderr.write("no newline at the end")
        cap.stop()
        print("after stop")
    """, log)
    assert proc.stdout == "line 0\nline 1\nline 2\nsep|end!\na\nb\nafter stop\n"
    assert proc.stderr.startswith("INFO:root:from logging\n")
    assert "UserWarning: careful\n" in proc.stderr
    assert proc.stderr.endswith("no newline at the end")
    assert log.read_text() == proc.stdout.removesuffix("after stop\n") + proc.stderr


def test_text_is_utf8_and_lone_surrogates_do_not_break_the_copy(log, tmp_path):
    """Non-ASCII text is UTF-8 in the file; a lone surrogate is escaped, not an error."""
    raw = tmp_path / "raw.txt"
    capture_child("""
        sys.stdout = open(os.environ["RAW"], "w", encoding="utf-8", errors="surrogateescape")
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        print("héllo ✓ 🎉")
        print("bad \\udcff byte")
        cap.stop()
        sys.stdout.close()
    """, log, RAW=str(raw))
    assert raw.read_bytes() == "héllo ✓ 🎉\nbad ".encode() + b"\xff byte\n"
    assert log.read_bytes() == "héllo ✓ 🎉\nbad \\udcff byte\n".encode()


def test_a_script_that_prints_nothing_leaves_no_file(log):
    """Starting, stopping, an empty print and a flush create neither the file nor files/."""
    capture_child("""
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        print(end="")
        sys.stdout.flush()
        cap.stop()
        ConsoleCapture(LOG, 1).start()   # a resumed session that prints nothing, never stopped
        sys.stderr.write("")
    """, log)
    assert log.parent.parent.is_dir() and not log.parent.exists()


def test_carriage_return_redraws_are_copied_as_written_and_as_they_happen(log, tmp_path):
    """Progress-bar redraws (\\r, ANSI colors, no newline) reach the file byte for byte,
    before stop(), as soon as the stream is flushed."""
    seen = tmp_path / "seen.bin"
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        for i in range(4):
            sys.stderr.write(f"\\r\\x1b[32m{i}/3\\x1b[0m [{'#' * i}{' ' * (3 - i)}]")
            sys.stderr.flush()
        sys.stdout.write(" saving")             # neither \\n nor \\r: there once flushed
        sys.stdout.flush()
        Path(os.environ["SEEN"]).write_bytes(LOG.read_bytes())   # what a viewer sees now
        sys.stderr.write("\\n")
        cap.stop()
    """, log, SEEN=str(seen))
    bar = "".join(f"\r\x1b[32m{i}/3\x1b[0m [{'#' * i}{' ' * (3 - i)}]" for i in range(4))
    assert seen.read_bytes() == (bar + " saving").encode()
    assert proc.stderr == (bar + "\n").replace("\r", "\n")   # text mode reads \r as \n
    assert log.read_bytes() == (bar + " saving\n").encode()


@pytest.mark.parametrize("stop_at_exit", [True, False])
def test_the_traceback_of_a_crash_is_in_the_file(log, stop_at_exit):
    """An uncaught exception after start() leaves its whole traceback in the file."""
    proc = capture_child(f"""
        import atexit
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        if {stop_at_exit}:
            atexit.register(cap.stop)     # as nb.init's finish at exit does
        print("step 1")
        def train():
            raise ValueError("loss is nan")
        train()
    """, log, check=False)
    assert proc.returncode == 1
    text = log.read_text()
    assert text == proc.stdout + proc.stderr
    assert text.startswith("step 1\nTraceback (most recent call last):\n")
    assert "in train\n" in text and text.endswith("ValueError: loss is nan\n")


def test_the_traceback_of_an_exception_leaving_the_with_block_is_in_the_file(tmp_path):
    """`with nb.init(...)` finishes the run (and stops the copy) before Python prints the
    traceback; the copy still ends with it, once."""
    proc = run_child("""
        import os
        import nuboard as nb
        with nb.init("p", dir=os.environ["DIR"], system_metrics=False, capture_env=False) as run:
            print("step 1", end="")
            def train():
                raise ValueError("loss is nan")
            train()
    """, check=False, DIR=str(tmp_path))
    assert proc.returncode == 1 and "ValueError: loss is nan" in proc.stderr
    (log,) = tmp_path.glob("p/runs/*/files/output.log")
    text = log.read_text()
    assert text.startswith("step 1\nTraceback (most recent call last):\n")
    assert "in train\n" in text and text.endswith("ValueError: loss is nan\n")
    assert text.count("Traceback") == 1
    (doc,) = tmp_path.glob("p/runs/*/run.json")
    assert json.loads(doc.read_text())["status"] == "crashed"


def _read_terminal(master: int, proc: subprocess.Popen) -> bytes:
    """Everything the child writes to its pseudo-terminal, until it exits."""
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:                   # EIO: the child closed its side
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def test_a_terminal_stays_a_terminal(log, tmp_path):
    """Under a real pseudo-terminal, isatty, encoding, fileno and the rest answer as before
    start(), and rich still sees a terminal."""
    result = tmp_path / "answers.json"
    code = PRELUDE + textwrap.dedent("""
        import json
        from rich.console import Console
        def answers():
            got = {}
            for name in ("stdout", "stderr"):
                s = getattr(sys, name)
                got[name] = [s.isatty(), s.encoding, s.errors, s.fileno(), s.writable(),
                             s.line_buffering, s.name, s.mode, s.newlines, s.closed,
                             id(s.buffer)]
            console = Console()
            got["rich"] = [console.is_terminal, console.color_system, console.encoding]
            return got
        before = answers()
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        after = answers()
        print("hello terminal")
        cap.stop()
        Path(os.environ["RESULT"]).write_text(json.dumps([before, after]))
    """)
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave,
                                stderr=slave, env=child_env(LOG=str(log), RESULT=str(result),
                                                            TERM="xterm-256color"))
        os.close(slave)
        slave = -1
        shown = _read_terminal(master, proc)
        assert proc.wait(timeout=60) == 0, shown
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    before, after = json.loads(result.read_text())
    assert before["stdout"][0] is True and before["stderr"][0] is True
    assert before["rich"][0] is True
    assert after == before
    assert b"hello terminal" in shown
    assert log.read_text() == "hello terminal\n"


def test_lines_from_eight_threads_arrive_whole_and_in_each_threads_order(log):
    """8 threads writing 1000 lines each to stdout and stderr, three rounds: every line is
    in the file once, intact, in its thread's order."""
    proc = capture_child("""
        import threading
        sys.setswitchinterval(1e-6)             # switch threads as often as possible
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        def talk(r, t):
            stream = sys.stdout if t % 2 else sys.stderr
            for i in range(1000):
                stream.write(f"round {r} thread {t} line {i:04d} " + "x" * (1000 + t * 100) + "\\n")
        for r in range(3):
            threads = [threading.Thread(target=talk, args=(r, t)) for t in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        cap.stop()
    """, log)
    lines = log.read_text().splitlines()
    expected = [f"round {r} thread {t} line {i:04d} " + "x" * (1000 + t * 100)
                for r in range(3) for t in range(8) for i in range(1000)]
    assert sorted(lines) == sorted(expected)
    for r in range(3):
        for t in range(8):
            head = f"round {r} thread {t} "
            assert [s for s in lines if s.startswith(head)] == \
                   [s for s in expected if s.startswith(head)]
    assert len(proc.stdout.splitlines()) == len(proc.stderr.splitlines()) == 12000


CAP_NOTE = "[nuboard: output.log reached its 0.0977 MB cap; the rest of the output is not copied]\n"


def test_the_copy_stops_at_the_cap_with_a_note_and_the_real_output_goes_on(log):
    """A flood of 2-byte characters past a 100 kB cap: the file stops at the cap, whole UTF-8
    characters, one note at its end; stdout got every line."""
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 0, cap_bytes=100 * 1024 + 1)
        cap.start()
        for i in range(20000):
            print("é" * 20, i)
        cap.stop()
    """, log, PYTHONIOENCODING="utf-8")
    stdout = proc.stdout.encode("utf-8")
    assert len(proc.stdout.splitlines()) == 20000 and proc.stdout.endswith(" 19999\n")
    data = log.read_bytes()
    text = data.decode("utf-8")                  # strict: the cut is between characters
    assert text.endswith(CAP_NOTE) and text.count("[nuboard:") == 1
    body = data[:-len(CAP_NOTE)]
    assert 100 * 1024 + 1 - 4 <= len(body) <= 100 * 1024 + 2
    assert stdout.startswith(body.removesuffix(b"\n"))    # a prefix, maybe with a "\n" added


def test_one_huge_write_is_cut_at_the_cap(log):
    """A single 5 MB write with a 100 kB cap copies up to the cap, then the note."""
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 0, cap_bytes=100 * 1024 + 1)
        cap.start()
        sys.stdout.write("y" * 5_000_000)
        sys.stdout.write("\\nlater\\n")
        cap.stop()
    """, log)
    assert len(proc.stdout) == 5_000_007
    assert log.read_text() == "y" * (100 * 1024 + 1) + "\n" + CAP_NOTE


def test_a_resumed_session_with_a_full_file_copies_nothing(log):
    """A file already over the cap gets neither a session line nor more output."""
    log.parent.mkdir()
    log.write_bytes(b"z" * 2000 + b"\n")
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 1, cap_bytes=1000)
        cap.start()
        print("resumed output")
        cap.stop()
    """, log)
    assert proc.stdout == "resumed output\n"
    assert log.read_bytes() == b"z" * 2000 + b"\n"


def test_a_resumed_session_appends_after_its_session_line(log):
    """Session 1 starts on a line of its own after the earlier content; session 2 too; a
    session that prints nothing adds nothing."""
    log.parent.mkdir()
    log.write_text("session zero line\npartial")
    code = """
        cap = ConsoleCapture(LOG, int(os.environ["SESSION"]))
        cap.start()
        if os.environ["SESSION"] != "3":
            print("hello from session", os.environ["SESSION"])
        cap.stop()
    """
    for session in ("1", "2", "3"):
        capture_child(code, log, SESSION=session)
    text = log.read_text()
    stamp = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"
    match = re.fullmatch(r"session zero line\npartial\n"
                         rf"\[nuboard: session 1, {stamp}\]\nhello from session 1\n"
                         rf"\[nuboard: session 2, {stamp}\]\nhello from session 2\n", text)
    assert match, text
    when = datetime.datetime.fromisoformat(match.group(1))
    assert abs((datetime.datetime.now() - when).total_seconds()) < 60   # local time


@pytest.fixture
def tiny_disk(tmp_path):
    """An empty 64 KiB tmpfs (root only), unmounted afterwards."""
    with small_tmpfs(tmp_path / "tiny", "64k") as mnt:
        yield mnt


def test_a_full_disk_warns_once_and_the_script_goes_on(tiny_disk):
    """Row 5: the copy fills a 64 KiB disk; printing goes on, exit 0, one warning naming
    the folder on the real stderr; the copy stays stopped once space is free again."""
    (tiny_disk / "ballast").write_bytes(b"\1" * 16384)
    (tiny_disk / "run").mkdir()
    log = tiny_disk / "run" / "files" / "output.log"
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        for i in range(3000):
            print(f"{i:05d} " + "." * 94)
        os.unlink(os.environ["BALLAST"])
        print("after space freed")
        sys.stderr.write("stderr still works\\n")
        cap.stop()
        print("DONE")
    """, log, BALLAST=str(tiny_disk / "ballast"))
    lines = proc.stdout.splitlines()
    assert len(lines) == 3002 and lines[-2:] == ["after space freed", "DONE"]
    assert proc.stderr.count("RuntimeWarning") == 1, proc.stderr
    assert f"cannot write the console copy in {log.parent} " in proc.stderr
    assert proc.stderr.startswith("<string>:")             # points at the script's print
    assert proc.stderr.endswith("stderr still works\n")
    copied = log.read_bytes()
    assert 0 < len(copied) <= 48 * 1024 and b"RuntimeWarning" not in copied
    assert b"after space freed" not in copied
    assert proc.stdout.encode().startswith(copied)


def test_a_vanished_run_folder_warns_once_and_is_not_made_again(tmp_path):
    """Row 5: the run folder is gone before the first output; one warning, nothing created."""
    log = tmp_path / "gone" / "files" / "output.log"
    proc = capture_child("""
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        for i in range(100):
            print("line", i)
        cap.stop()
    """, log)
    assert len(proc.stdout.splitlines()) == 100
    assert proc.stderr.count("RuntimeWarning") == 1 and str(log.parent) in proc.stderr
    assert not (tmp_path / "gone").exists()


def test_a_forked_child_never_writes_the_parents_file(log):
    """Row 7: an os.fork child (exiting normally) and fork Pool workers print to their stdout
    but not into the file, not even the parent's unfinished line."""
    proc = capture_child("""
        import multiprocessing
        def work(i):
            sys.stdout.write(f"worker {i}\\n")   # one write: workers share the pipe
            return i
        cap = ConsoleCapture(LOG, 0)
        cap.start()
        print("parent before fork")
        sys.stdout.write("parent partial")      # pending, not in the file yet
        pid = os.fork()
        if pid == 0:
            print("forked child line")
            sys.stderr.write("forked child stderr\\n")
            sys.stdout.flush()
            cap.stop()
            sys.exit(0)                          # a normal exit: the streams are flushed
        assert os.waitpid(pid, 0)[1] == 0
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map(work, range(4)) == [0, 1, 2, 3]
        print(" end")
        cap.stop()
    """, log)
    assert "forked child line\n" in proc.stdout and "forked child stderr\n" in proc.stderr
    assert all(f"worker {i}\n" in proc.stdout for i in range(4)), proc.stdout
    assert log.read_text() == "parent before fork\nparent partial end\n"


class _Outer:
    """Something else (another tool) wrapping sys.stdout after us."""

    def __init__(self, inner):
        self.inner = inner

    def write(self, text):
        return self.inner.write(text)

    def flush(self):
        self.inner.flush()


def test_stop_restores_the_streams_and_is_idempotent(tmp_path):
    """After stop() sys.stdout and sys.stderr are the original objects; attributes answer
    as the original's while started."""
    saved = sys.stdout, sys.stderr
    log = tmp_path / "files" / "output.log"
    real = open(tmp_path / "real.txt", "w", encoding="latin-1", errors="replace")
    err = io.StringIO()
    try:
        sys.stdout, sys.stderr = real, err
        cap = ConsoleCapture(log, 0)
        cap.start()
        wrapped = sys.stdout
        assert wrapped is not real and sys.stderr is not err
        assert (wrapped.encoding, wrapped.errors, wrapped.fileno(), wrapped.name, wrapped.mode,
                wrapped.isatty(), wrapped.line_buffering, wrapped.buffer) == \
               (real.encoding, real.errors, real.fileno(), real.name, real.mode,
                real.isatty(), real.line_buffering, real.buffer)
        print("copied é")
        cap.stop()
        cap.stop()
        assert sys.stdout is real and sys.stderr is err
        print("not copied")
    finally:
        sys.stdout, sys.stderr = saved
        real.close()
    assert (tmp_path / "real.txt").read_bytes() == "copied é\nnot copied\n".encode("latin-1")
    assert log.read_text() == "copied é\n"


def test_stop_under_another_wrapper_leaves_it_and_passes_through(tmp_path):
    """If something wrapped our wrapper meanwhile, stop() leaves the chain and stops copying."""
    saved = sys.stdout, sys.stderr
    log = tmp_path / "files" / "output.log"
    out, err = io.StringIO(), io.StringIO()
    try:
        sys.stdout, sys.stderr = out, err
        cap = ConsoleCapture(log, 0)
        cap.start()
        outer = _Outer(sys.stdout)
        sys.stdout = outer
        print("before stop")
        cap.stop()
        assert sys.stdout is outer and sys.stderr is err
        print("after stop")
    finally:
        sys.stdout, sys.stderr = saved
    assert out.getvalue() == "before stop\nafter stop\n"
    assert log.read_text() == "before stop\n"


@pytest.mark.serial          # times one call: run alone, after the parallel part (docs/testing.md)
def test_printing_100k_lines_stays_fast(tmp_path):
    """100k prints with the copy on cost at most a few times the prints without it."""
    code = """
        import time
        if os.environ["ON"] == "1":
            ConsoleCapture(LOG, 0).start()
        t = time.perf_counter()
        for i in range(100_000):
            print(f"step {i} loss 0.1234")
        sys.stderr.write(f"{time.perf_counter() - t}\\n")
    """
    (tmp_path / "run").mkdir()
    log = tmp_path / "run" / "files" / "output.log"
    off = float(capture_child(code, log, ON="0").stderr.split()[-1])
    on = float(capture_child(code, log, ON="1").stderr.split()[-1])
    copied = log.read_text().splitlines()
    assert len(copied) == 100_001 and copied[-2] == "step 99999 loss 0.1234"   # + the timing
    assert on < max(5 * off, off + 2.0), (off, on)


def test_logging_configured_before_start_is_copied(tmp_path):
    """logging.basicConfig() at the top of a script, before the capture, still lands in the copy."""
    log = tmp_path / "run" / "files" / "output.log"
    (tmp_path / "run").mkdir()
    out = run_child(f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
        from nuboard.recording.capture.console import ConsoleCapture
        capture = ConsoleCapture({str(log)!r}, 0)
        capture.start()
        logging.getLogger("train").info("epoch 1 done")
        capture.stop()
        assert logging.getLogger().handlers[0].stream is sys.stderr
        logging.getLogger("train").info("after stop")
    """)
    assert log.read_text() == "INFO epoch 1 done\n"
    assert "INFO epoch 1 done" in out.stderr and "INFO after stop" in out.stderr
