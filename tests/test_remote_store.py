"""nuboard.remote: telling a URL from a path, and each failure of a store as the one line a user
reads (the failures themselves come from a real server in test_sync.py and
test_artifact_remote.py; these are the words, including ones a server cannot be made to say)."""
from __future__ import annotations

import pytest

from nuboard.errors import MissingExtraError, StorageError
from nuboard.remote.store import open_store, storage_error
from nuboard.remote.urls import is_url, join, shown


@pytest.mark.parametrize("text, url", [
    ("s3://lab/exp", True), ("gs://b", True), ("az://c/d", True), ("memory://x", True),
    ("file:///tmp/x", False), ("/data/x", False), ("C:/data/x", False), ("exp", False),
    ("${BUCKET}/x", False), (3, False), (None, False)])
def test_a_url_is_told_from_a_path(text, url):
    assert is_url(text) is url


def test_join_and_shown_leave_out_credentials():
    assert join("s3://lab/exp/", "llm", "/runs/") == "s3://lab/exp/llm/runs"
    assert shown("s3://key:secret@lab/exp") == "s3://lab/exp"


@pytest.mark.parametrize("error, says", [
    # a port with 403 in it is no refusal, and a dropped connection is never one
    (PermissionError('Connection was closed before we received a valid response from endpoint URL: '
                     '"http://127.0.0.1:44403/b/x".'), "cannot be reached"),
    (OSError('Could not connect to the endpoint URL: "http://127.0.0.1:9000/b"'), "cannot be reached"),
    (ConnectionRefusedError(111, "Connection refused"), "cannot be reached"),
    (PermissionError("An error occurred (403) when calling the HeadObject operation: Forbidden"),
     "access denied"),
    (OSError("An error occurred (SignatureDoesNotMatch) when calling the ListObjectsV2 operation"),
     "access denied"),
    (OSError("An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation"),
     "the bucket does not exist"),
    (type("NoCredentialsError", (Exception,), {})("Unable to locate credentials"), "no credentials found"),
    (FileNotFoundError("b/x"), "no such object"),
])
def test_each_failure_is_one_line_saying_what_to_do(error, says):
    line = str(storage_error(error, "s3://key:secret@b/x", "read"))
    assert line.startswith("cannot read s3://b/x: ") and says in line and "\n" not in line, line
    assert "secret" not in line


def test_a_path_or_an_unknown_scheme_is_refused_in_one_line():
    with pytest.raises(StorageError, match="is not an object-store URL"):
        open_store("/data/exp")
    with pytest.raises((StorageError, MissingExtraError), match="nosuchscheme://b"):
        open_store("nosuchscheme://b/x")
