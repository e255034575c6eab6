"""The one reader of JSON files: regular files only, and a lone surrogate is bad JSON; exclusive
creates where hard links are refused."""
from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from helpers import child_env

from nuboard.files import jsonfile
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


# -- exclusive creates where hard links are refused (s3fs, gcsfuse, exFAT, some SMB) -------------

RACER = '''
import errno, json, os, sys, time, warnings
from pathlib import Path
warnings.simplefilter("ignore")


def refuse(*args, **kw):
    raise PermissionError(errno.EPERM, "Operation not permitted")


os.link = refuse                    # as a file system without hard links answers
from nuboard.files.jsonfile import write_json_atomic

folder, go, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
while not os.path.exists(go):
    time.sleep(0.002)
won = []
for i in range(count):
    try:
        write_json_atomic(folder / f"f{i}.json", {"pid": os.getpid()}, exclusive=True)
        won.append(i)
    except FileExistsError:
        pass
print(json.dumps({"pid": os.getpid(), "won": won}))
'''


def test_each_exclusive_create_has_one_winner_without_hard_links(tmp_path):
    """Four processes create the same 400 files exclusively where links are refused: each file
    is made by exactly one, holds that one's document, and no claim or temp file is left."""
    go, count = tmp_path / "go", 400
    children = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path), str(go), str(count)],
                                 env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(4)]
    time.sleep(1.0)
    go.touch()
    outs = [child.communicate(timeout=180) for child in children]
    assert all(c.returncode == 0 for c in children), "\n".join(err for _, err in outs)
    winners: dict[int, list[int]] = {}
    for out, _ in outs:
        result = json.loads(out)
        for i in result["won"]:
            winners.setdefault(i, []).append(result["pid"])
    assert sorted(winners) == list(range(count))
    assert all(len(pids) == 1 for pids in winners.values()), winners
    for i, (pid,) in winners.items():
        assert read_json(tmp_path / f"f{i}.json") == {"pid": pid}
    assert sorted(os.listdir(tmp_path)) == sorted(["go", *(f"f{i}.json" for i in range(count))])


@pytest.fixture
def no_links(monkeypatch):
    """os.link refused with EPERM in this process, as on s3fs; the claim goes stale in 0.5 s."""
    def refuse(*args, **kw):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "link", refuse)
    monkeypatch.setattr(jsonfile, "STALE_CLAIM", 0.5)


def test_a_claim_left_by_a_dead_claimer_is_taken_over(tmp_path, no_links):
    (tmp_path / ".run.json.claim").mkdir()          # its claimer died before the rename
    with pytest.warns(RuntimeWarning):
        jsonfile.write_json_atomic(tmp_path / "run.json", {"a": 1}, exclusive=True)
    assert read_json(tmp_path / "run.json") == {"a": 1}
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_claim_in_progress_ends_in_file_exists(tmp_path, no_links):
    claim = tmp_path / ".run.json.claim"
    claim.mkdir()

    def finish_claim():                              # the other claimer renames, then lets go
        time.sleep(0.2)
        (tmp_path / "run.json").write_text('{"theirs": true}\n')
        claim.rmdir()

    threading.Thread(target=finish_claim, daemon=True).start()
    with pytest.raises(FileExistsError):
        jsonfile.write_json_atomic(tmp_path / "run.json", {"mine": True}, exclusive=True)
    assert read_json(tmp_path / "run.json") == {"theirs": True}
    assert os.listdir(tmp_path) == ["run.json"]
