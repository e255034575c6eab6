"""The one reader of JSON files: regular files only, and a lone surrogate is bad JSON."""
from __future__ import annotations

import os
import socket
import threading

import pytest

from nuboard.files.jsonfile import NotRegularFileError, open_regular, read_json


def test_a_fifo_is_refused_at_once_without_blocking(tmp_path):
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    done = threading.Event()
    errors = []

    def read():
        try:
            read_json(fifo)
        except OSError as exc:
            errors.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(2), "read_json blocked on a FIFO"
    assert isinstance(errors[0], NotRegularFileError)
    assert str(fifo) in str(errors[0])


def test_a_socket_and_a_folder_are_refused(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    with pytest.raises(NotRegularFileError):
        open_regular(tmp_path / "s")
    with pytest.raises(NotRegularFileError):
        open_regular(tmp_path)
    sock.close()


def test_a_regular_file_reads_and_a_lone_surrogate_is_a_value_error(tmp_path):
    good = tmp_path / "good.json"
    good.write_bytes(b'{"a": "\\ud83d\\ude00"}')
    assert read_json(good) == {"a": "\N{GRINNING FACE}"}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"name": "\\ud800"}')
    with pytest.raises(ValueError, match="surrogate"):
        read_json(bad)
