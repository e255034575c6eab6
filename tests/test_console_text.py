"""The Console tab: output.log read from its end and rendered as a terminal would."""
from __future__ import annotations

import sys

import nuboard as nb
from nuboard.web.console_text import ConsoleView, read_console, render_console


def tqdm_bar(n: int, total: int = 100) -> str:
    """A progress bar drawn as tqdm draws it: a carriage return, then the whole bar."""
    filled = n * 10 // total
    return f"\rtrain: {n * 100 // total:3d}%|{'#' * filled}{' ' * (10 - filled)}| {n:3d}/{total}"


def test_redraws_collapse_to_the_final_state():
    text = "epoch 1\n" + "".join(tqdm_bar(i) for i in range(101)) + "\ndone\n"
    assert render_console(text) == ["epoch 1", "train: 100%|##########| 100/100", "done"]


def test_a_shorter_redraw_leaves_the_tail_of_a_longer_one():
    assert render_console("loss 0.12345\rloss 9\n") == ["loss 9.12345"]
    assert render_console("12345\r\r\rab") == ["ab345"]


def test_crlf_is_a_plain_newline():
    assert render_console("a\r\nb\r\n") == ["a", "b"]


def test_colours_are_removed():
    text = "\x1b[1m\x1b[31mError\x1b[0m: \x1b[38;5;208mdisk\x1b[39m full\n"
    assert render_console(text) == ["Error: disk full"]


def test_erase_in_line_is_applied():
    assert render_console("progress 99%\r\x1b[Kdone\n") == ["done"]
    assert render_console("abcdef\r\x1b[2Kxy\n") == ["xy"]
    assert render_console("abcdef\x1b[3D\x1b[1K!\n") == ["   !ef"]
    assert render_console("ab\x1b[2Kc") == ["  c"]


def test_cursor_up_keeps_nested_bars_on_their_lines():
    # tqdm draws a bar at position 1 by moving down a line, drawing, and moving back up.
    text = ""
    for outer in range(3):
        for inner in range(5):
            text += f"\nbatch {inner}/4\x1b[A\repoch {outer}/2"
    text += "\n\nfinished\n"
    assert render_console(text) == ["epoch 2/2", "batch 4/4", "finished"]


def test_backspace_other_escapes_and_controls():
    assert render_console("ab\bc\n") == ["ac"]
    assert render_console("a\x07b\x00c\x1b]0;window title\x07d\x1b(Be\x1b7f\n") == ["abcdef"]
    assert render_console("col\x1b[10Gx\n") == ["col      x"]
    assert render_console("tab\there\n") == ["tab\there"]


def test_text_is_not_escaped():
    assert render_console("<script>alert('x') & \"y\"</script>\n") == [
        "<script>alert('x') & \"y\"</script>"]


def test_blank_lines_and_the_last_newline():
    assert render_console("") == []
    assert render_console("a\n\nb") == ["a", "", "b"]
    assert render_console("a\n") == ["a"]


def test_a_long_file_is_cut_at_a_line_boundary(tmp_path):
    path = tmp_path / "output.log"
    path.write_bytes(b"".join(b"line %05d\n" % i for i in range(1000)))   # 11 bytes each
    view = read_console(path, limit=1100 + 5)        # the window starts inside line 899
    assert isinstance(view, ConsoleView)
    assert view.truncated and view.size == 11_000
    assert view.lines[0] == "line 00900" and view.lines[-1] == "line 00999"
    assert len(view.lines) == 100 and view.start == 9900
    whole = read_console(path)
    assert not whole.truncated and len(whole.lines) == 1000 and whole.start == 0


def test_a_long_line_of_redraws_is_cut_at_a_carriage_return(tmp_path):
    path = tmp_path / "output.log"
    path.write_text("".join(tqdm_bar(i % 101) for i in range(2000)))
    view = read_console(path, limit=4096)
    assert view.truncated
    assert view.lines == [tqdm_bar(1999 % 101)[1:]]


def test_bad_utf8_is_replaced(tmp_path):
    path = tmp_path / "output.log"
    path.write_bytes(b"ok \xff\xfe bad\ncaf\xc3\xa9\n")
    assert read_console(path).lines == ["ok \ufffd\ufffd bad", "café"]


def test_a_missing_file_shows_nothing(tmp_path):
    view = read_console(tmp_path / "output.log")
    assert view.lines == [] and view.size == 0 and not view.exists and not view.truncated


def test_captured_output_of_a_real_run(root):
    with nb.init("p", dir=root, system_metrics=False, capture_env=False,
                 capture_console=True) as run:
        print("starting")
        for i in range(101):
            sys.stderr.write(tqdm_bar(i))
            sys.stderr.flush()
        sys.stderr.write("\n")
        print("\x1b[32mgreen\x1b[0m <b>bold</b>")
    view = read_console(run.path / "files" / "output.log")
    assert view.exists and not view.truncated
    assert view.lines == ["starting", "train: 100%|##########| 100/100", "green <b>bold</b>"]
