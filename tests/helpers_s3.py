"""A real S3-compatible server for the object-storage tests: moto's standalone server (the one
s3fs's own suite uses), started as a child process on a free loopback port, reached through
s3fs and boto3 as a user would reach S3 or MinIO (AWS_ENDPOINT_URL and the AWS_* keys).

    with S3Server() as s3:                  # the `s3` fixture of conftest.py: one per worker
        url = s3.bucket()                   # "s3://b-1a2b3c": a fresh, empty bucket
        env = s3.env                        # the AWS_* settings, for a child process
        with s3.counting() as requests:     # every request the server answered meanwhile
            ...
        requests()                          # [("GET", "/b-1a2b3c?list-type=2..."), ...]

    with CutProxy(s3.port) as proxy:        # a second door to the same server
        env = s3.env_via(proxy.port)
        proxy.cut()                         # every connection dropped, new ones refused
        proxy.restore()

`S3Server(auth=True)` checks credentials (moto's IAM): `s3.env` holds a user's real keys and any
other key is refused, as S3 refuses it. Use it for the wrong-credentials cases only: moto's
signature check also refuses the right keys on a listing with a delimiter (fsspec's ls and find).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def closed_port():
    """A loopback port where nothing listens, for as long as the block lasts: the socket is bound
    and never listens, so a connection is refused and no other process (another worker's server)
    can take the port meanwhile, as it could a port from free_port()."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


class S3Server:
    """moto's S3 server in a child process; a context manager that stops it on leaving."""

    def __init__(self, auth: bool = False):
        self.auth = auth
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._folder = Path(tempfile.mkdtemp(prefix="nuboard-s3-"))
        self._record = self._folder / "requests.jsonl"
        self.key_id, self.secret = "testing", "testing"
        self.proc: subprocess.Popen | None = None

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> "S3Server":
        env = dict(os.environ, MOTO_RECORDER_FILEPATH=str(self._record), MOTO_ALLOW_NONEXISTENT_REGION="true")
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"   # create_user, create_access_key, attach policy
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=open(self._folder / "server.log", "wb"), env=env,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/data.json", timeout=2).read()
                break
            except OSError as exc:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's server did not start: "
                                       + (self._folder / "server.log").read_text(errors="replace")[-2000:]) from exc
                time.sleep(0.1)
        if self.auth:
            self._make_user()
        return self

    def stop(self) -> None:
        """SIGKILL the server (its buckets are gone with it)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _make_user(self) -> None:
        import boto3
        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name=REGION,
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="nuboard")
        key = iam.create_access_key(UserName="nuboard")["AccessKey"]
        iam.put_user_policy(UserName="nuboard", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]

    # -- what a client needs ------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """The settings a user would export to reach this server."""
        return self.env_via(self.port)

    def env_via(self, port: int) -> dict[str, str]:
        """The settings that reach this server through `port` (a CutProxy's)."""
        return {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": self.key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_DEFAULT_REGION": REGION,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self, port: int | None = None):
        """A boto3 S3 client of this server, for a test to look at or damage the bucket."""
        import boto3
        return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port or self.port}", region_name=REGION,
                            aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)

    def bucket(self, versioned: bool = False, name: str | None = None) -> str:
        """A new empty bucket's URL, s3://<name>."""
        name = name or f"b-{uuid.uuid4().hex[:12]}"
        client = self.client()
        client.create_bucket(Bucket=name)
        if versioned:
            client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        return f"s3://{name}"

    def keys(self, url: str) -> dict[str, int]:
        """Every object under `url` (s3://bucket/prefix), key -> size, read past any fsspec cache."""
        bucket, _, prefix = url[len("s3://"):].partition("/")
        out: dict[str, int] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                out[item["Key"]] = item["Size"]
        return out

    # -- counting requests --------------------------------------------------------------------
    def _api(self, what: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/{what}", method="POST", data=b"")
        urllib.request.urlopen(req, timeout=10).read()

    @contextlib.contextmanager
    def counting(self):
        """Record the requests the server answers inside the block; yields a function that
        returns them as (method, path and query) pairs."""
        self._api("reset-recording")
        self._api("start-recording")
        seen: list[tuple[str, str]] = []

        def requests() -> list[tuple[str, str]]:
            if not seen and self._record.exists():
                # moto writes each entry and its newline in two calls, so requests answered at
                # once may share a line: read the entries as a stream of JSON objects
                text, at, decoder = self._record.read_text(), 0, json.JSONDecoder()
                while (at := _skip_space(text, at)) < len(text):
                    entry, at = decoder.raw_decode(text, at)
                    url = entry["url"]
                    seen.append((entry["method"], url.split("://", 1)[-1].partition("/")[2]))
            return list(seen)

        try:
            yield requests
        finally:
            self._api("stop-recording")
            requests()


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


class CutProxy:
    """A TCP door to the server that a test can shut mid-transfer: cut() drops every open
    connection and refuses new ones (as a server that died), restore() opens it again.
    `delay` seconds are waited before each chunk a client sends is passed on (a slow link), so
    that a child process can be killed while its transfer is under way."""

    def __init__(self, target_port: int, delay: float = 0.0):
        self.target = target_port
        self.delay = delay
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open = True
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> "CutProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.cut()
        self._listener.close()

    def cut(self) -> None:
        with self._lock:
            self._open = False
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    conn.close()
            self._conns.clear()

    def restore(self) -> None:
        with self._lock:
            self._open = True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if not self._open:
                    client.close()
                    continue
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.target))
                except OSError:
                    client.close()
                    continue
                self._conns += [client, upstream]
            for a, b, delay in ((client, upstream, self.delay), (upstream, client, 0.0)):
                threading.Thread(target=self._pipe, args=(a, b, delay), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, delay: float) -> None:
        try:
            while data := src.recv(65536):
                if delay:
                    time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
