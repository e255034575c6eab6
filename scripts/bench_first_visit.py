#!/usr/bin/env python3
"""Benchmark of a fresh `nuboard up`: how soon it speaks, how soon it serves, and how fast the
first visit of each page that opens catalogs answers.

    python3 scripts/bench_first_visit.py [--dir EXPERIMENTS]

Without --dir it writes the demo (`nuboard demo`'s projects, with the real API) into a
temporary folder; with --dir it copies that folder (never writing into it). For each page
(none, the Artifacts page, each project's Runs page) it starts `nuboard up COPY --port 0` on a
fresh copy and times, from the start of the process, its first line and the line with the URL,
then the first visit of that page (one GET on a new connection, body read). It does so twice:
on copies with no catalog on disk (as the demo leaves the folder), then on copies holding the
catalogs an earlier server built. Each figure is printed beside its target; a missed target
says MISSED and the exit code stays 0 (non-zero only on an error).
"""
from __future__ import annotations

import argparse
import http.client
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FIRST_VISIT = 0.150          # seconds: the first visit of a page, once the URL is printed
FIRST_LINE = 0.5             # seconds from the start until `nuboard up` says something


class BenchError(RuntimeError):
    """Something went wrong (not a missed target): the bench exits non-zero."""


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<52} {value:>10}   target {target:<10} {'ok' if ok else 'MISSED'}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


class Server:
    """`nuboard up DIR --port 0` in a child; its output lines with the time each came."""

    def __init__(self, root: Path):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                                      "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for text in self.proc.stdout:
            self.lines.put((time.perf_counter() - self.started, text.rstrip("\n")))
        self.lines.put((time.perf_counter() - self.started, None))

    def wait_for_url(self, timeout: float = 120) -> tuple[float, float, str, int]:
        """(seconds to the first line, seconds to the URL line, host, port)."""
        first = None
        deadline = time.monotonic() + timeout
        while True:
            try:
                at, text = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError(f"no URL in {timeout:.0f} s; printed: {self.seen}") from None
            if text is None:
                raise BenchError(f"nuboard up ended; printed: {self.seen}")
            self.seen.append(text)
            first = at if first is None else first
            found = re.search(r" at http://([^\s/]+):(\d+)/", text)
            if found:
                return first, at, found.group(1), int(found.group(2))

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def timed_get(host: str, port: int, path: str) -> float:
    """Seconds for one GET on a new connection, body read; BenchError unless 200."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        began = time.perf_counter()
        conn.request("GET", path, headers={"Host": f"{host}:{port}"})
        response = conn.getresponse()
        response.read()
        took = time.perf_counter() - began
    finally:
        conn.close()
    if response.status != 200:
        raise BenchError(f"GET {path} answered {response.status}")
    return took


def first_visit(root: Path, path: str | None, label: str) -> bool:
    """Start a server on root, time its lines, then the first visit of path (None: the pages
    are not visited). Whether every target was met."""
    server = Server(root)
    try:
        first, ready, host, port = server.wait_for_url()
        ok = first < FIRST_LINE
        if path is None:
            print(f"-- {label}: printed before the URL: {server.seen[:-1]}", flush=True)
            line("first line printed", ms(first), f"< {ms(FIRST_LINE)}", ok)
            line("URL printed (the catalogs opened)", ms(ready), "-", True)
            return ok
        took = timed_get(host, port, path)
        line(f"first visit: {path}", ms(took), f"< {ms(FIRST_VISIT)}", took < FIRST_VISIT)
        return ok and took < FIRST_VISIT
    finally:
        server.stop()


def project_names(root: Path) -> list[str]:
    from nuboard.files.layout import find_projects
    return find_projects(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="an experiments folder to copy (default: the demo)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-first-visit-") as scratch:
        source = Path(scratch) / "source"
        if args.dir:
            if not args.dir.is_dir():
                raise BenchError(f"--dir {str(args.dir)!r} is not a folder")
            shutil.copytree(args.dir, source, symlinks=True)
            print(f"copied {str(args.dir)!r}", flush=True)
        else:
            from nuboard.demo import write_demo
            began = time.perf_counter()
            write_demo(source, progress=lambda _line: None)
            print(f"wrote the demo in {time.perf_counter() - began:.1f} s", flush=True)
        pages = [None, "/artifacts", *(f"/p/{name}" for name in project_names(source))]
        ok = True
        for state in ("no catalog on disk", "catalogs on disk"):
            print(f"-- {state}: a fresh `nuboard up` for each page", flush=True)
            kept = Path(scratch) / "kept"
            for path in pages:
                root = Path(scratch) / "experiments"
                shutil.rmtree(root, ignore_errors=True)
                shutil.copytree(kept if state == "catalogs on disk" else source, root,
                                symlinks=True)
                ok &= first_visit(root, path, state)
                if path == "/artifacts" and not kept.exists():
                    shutil.copytree(root, kept, symlinks=True)   # every catalog built
    print("all targets met" if ok else "some targets MISSED", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"bench_first_visit: {exc}", file=sys.stderr)
        sys.exit(1)
