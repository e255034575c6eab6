#!/usr/bin/env python3
"""Benchmark of the Artifacts pages on a version of a million files, over HTTP.

    python3 scripts/bench_artifact_pages.py [--files 1000000] [--repeat 9]

One version is added with the real API (a reference to one file); its manifest is then
rewritten by the real manifest writer with --files synthetic entries, as a reference to a
folder of that many files would have it (making a million real files takes minutes on some
file systems, and the pages read only the manifest). The viewer is served by waitress on a
loopback port in this process. Each figure is printed beside its target.
"""
from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<58} {value:>12}   target {target:<12} {'ok' if ok else 'MISSED'}")


def timed(conn: http.client.HTTPConnection, path: str, repeat: int) -> tuple[float, float, bytes]:
    """The first request's time, the median of `repeat` more, and the last body."""
    times = []
    body = b""
    for _ in range(repeat + 1):
        t = time.perf_counter()
        conn.request("GET", path)
        reply = conn.getresponse()
        body = reply.read()
        times.append(time.perf_counter() - t)
        if reply.status != 200:
            raise SystemExit(f"GET {path} answered {reply.status}: {body[:200]!r}")
    return times[0], statistics.median(times[1:] or times), body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    import nuboard as nb
    from nuboard.artifacts.manifest import write_manifest
    from nuboard.web.app import create_app
    from nuboard.web.server import bound_port, make_server

    scratch = Path(tempfile.mkdtemp(prefix="nuboard-bench-artifacts-"))
    try:
        root = scratch / "experiments"
        source = scratch / "data"
        source.mkdir()
        (source / "one.bin").write_bytes(b"x")
        made = nb.add_artifact("datasets", "images", str(source), reference=True, dir=root,
                               type="dataset")
        doc = json.loads((made.path / "manifest.json").read_text())
        doc["files"] = [{"path": f"shard-{i // 1000:04d}/img-{i:07d}.jpg", "size": 900 + i % 97,
                         "mtime": 1_796_000_000.0 + i} for i in range(args.files)]
        doc["file_count"] = args.files
        doc["total_bytes"] = sum(f["size"] for f in doc["files"])
        t = time.perf_counter()
        write_manifest(made.path / "manifest.json", doc)
        size = (made.path / "manifest.json").stat().st_size
        del doc
        print(f"python {sys.version.split()[0]}; a version of {args.files:,} files, manifest "
              f"{size / 1e6:.1f} MB written in {time.perf_counter() - t:.1f} s; "
              f"median of {args.repeat} after a first request")

        app = create_app(root)
        server = make_server(app, "127.0.0.1", 0)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        conn = http.client.HTTPConnection("127.0.0.1", bound_port(server), timeout=120)
        base = "/p/datasets/.artifact/images/v1"
        first, _, _ = timed(conn, "/api/artifacts", 0)
        line("Artifacts list: first open (catalog sync reads the manifest)", f"{first:.2f} s",
             "(none)", True)
        first, median, body = timed(conn, base, args.repeat)
        line("a version page, its first 1,000 files", f"{median * 1000:.0f} ms", "< 150 ms",
             median < 0.15)
        line("  its size", f"{len(body) / 1024:.0f} KiB", "< 2 MiB", len(body) < 2 * 2**20)
        _, median, _ = timed(conn, f"{base}/files?offset=1000", args.repeat)
        line("Show more: files 1,000-2,000", f"{median * 1000:.0f} ms", "< 150 ms", median < 0.15)
        deep = max(0, args.files // 2)
        _, median, _ = timed(conn, f"/api{base}/files?offset={deep}", args.repeat)
        line(f"files from {deep:,} on (no filter)", f"{median * 1000:.0f} ms", "< 1 s",
             median < 1.0)
        _, median, body = timed(conn, f"/api{base}/files?q=img-09999", args.repeat)
        found = len(json.loads(body)["files"])
        line(f"filter on the path (all {args.files:,} lines; {found} found)",
             f"{median * 1000:.0f} ms", "< 1 s", median < 1.0)
        server.close()
        app.extensions["nuboard_catalogs"].close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
