#!/usr/bin/env python3
"""Benchmark of artifacts: a reference to a million small files, and SHA-256 against sha256sum.

    python3 scripts/bench_artifacts.py [--files 1000000] [--gigabytes 2] [--large-files 4]
                                       [--dir DIR] [--keep]

The small files (a few hundred folders of a few thousand files, 50 to 249 bytes each, sparse)
are registered with add_artifact(reference=True), then opened with use_artifact, which checks every
file by size. The large files are hashed by sha256sum and by add_artifact(checksum=True), both
from the page cache. The data is made under --dir (default a temporary folder on the disk of
this checkout) and removed at the end unless --keep is given; a kept tree is reused by the next
run with the same sizes. Each figure is printed beside its target.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = "bench"
BLOCK = 16 << 20                       # the large files repeat one random block of this size


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<52} {value:>16}   target {target:<22} {'ok' if ok else 'MISSED'}", flush=True)


def secs(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 10 else f"{seconds:.2f} s"


def scaled(per_million: float, files: int, unit: str) -> tuple[float, str]:
    """A target given per million files, scaled to `files`: (limit, how to print it)."""
    limit = per_million * files / 1e6
    if files == 1_000_000:
        return limit, f"< {per_million:g} {unit}"
    return limit, f"< {limit:.3g} {unit} ({per_million:g} per 1M)"


def default_parent() -> Path:
    """The system's temporary folder when it is on the checkout's disk, else the checkout."""
    tmp = Path(tempfile.gettempdir())
    try:
        if os.stat(tmp).st_dev == os.stat(REPO).st_dev:
            return tmp
    except OSError:
        pass
    return REPO


# --- making the data ---------------------------------------------------------------------------

def _make_folder(job: tuple[str, int, int, int]) -> int:
    """Make one folder of small files (os.open, os.ftruncate); return how many.

    The files are sparse: they have their sizes (50 to 249 bytes) but no data blocks, which
    spares the disk gigabytes of writes. A reference without checksum=True, and use_artifact,
    look only at sizes and times, so they see the same as with real data.
    """
    folder, first, count, seed = job
    os.mkdir(folder)
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        for i in range(first, first + count):
            fd = os.open(f"img_{i:08d}.jpg", flags, 0o644, dir_fd=dfd)
            os.ftruncate(fd, 50 + (i * 7919 + seed) % 200)
            os.close(fd)
    finally:
        os.close(dfd)
    return count


def make_small_files(folder: Path, files: int) -> int:
    """`files` small files in about sqrt(files) folders (at most 500), written by a process pool."""
    folders = max(1, min(500, round(math.sqrt(files))))
    per = math.ceil(files / folders)
    folder.mkdir(parents=True)
    jobs, first = [], 0
    for k in range(folders):
        count = min(per, files - first)
        if count <= 0:
            break
        jobs.append((str(folder / f"class_{k:04d}"), first, count, k))
        first += count
    with multiprocessing.get_context("fork").Pool(max(2, os.cpu_count() or 1)) as pool:
        return sum(pool.imap_unordered(_make_folder, jobs, chunksize=4))


def make_large_files(folder: Path, total: int, count: int) -> list[Path]:
    """`count` files of total/count bytes (a repeated random block), fsynced."""
    folder.mkdir(parents=True)
    block = os.urandom(min(BLOCK, max(1, total // count)))
    paths = []
    for k in range(count):
        path = folder / f"shard-{k:03d}.bin"
        left = total // count + (1 if k < total % count else 0)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            while left:
                left -= os.write(fd, block[:min(left, len(block))])
            os.fsync(fd)
        finally:
            os.close(fd)
        paths.append(path)
    return paths


def remove_tree(folder: Path) -> None:
    """Remove a tree; its subfolders in a process pool, since a million unlinks take a while."""
    if not folder.exists():
        return
    subs = [str(p) for p in folder.rglob("class_*") if p.is_dir()]
    if subs:
        with multiprocessing.get_context("fork").Pool(max(2, os.cpu_count() or 1)) as pool:
            list(pool.imap_unordered(shutil.rmtree, subs, chunksize=4))
    shutil.rmtree(folder, ignore_errors=True)


def read_all(paths: list[Path]) -> None:
    """Read files once so that they are in the page cache."""
    buf = bytearray(8 << 20)
    for path in paths:
        with open(path, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass


# --- the figures -------------------------------------------------------------------------------

def bench_small(data: Path, root: Path, files: int) -> None:
    from nuboard import artifacts as nb

    calls: dict[str, int] = {}

    def progress(phase: str, done: int, total: int | None) -> None:
        calls[phase] = calls.get(phase, 0) + 1

    t = time.perf_counter()
    art = nb.add_artifact(PROJECT, "images", data, type="dataset", reference=True, dir=root,
                          progress=progress)
    added = time.perf_counter() - t
    assert len(art) == files, (len(art), files)
    limit, target = scaled(60, files, "s")
    line(f"add_artifact reference to {files:,} files", secs(added), target, added < limit)
    print(f"  (progress called {sum(calls.values())} times: "
          + ", ".join(f"{k} {v}" for k, v in calls.items()) + ")")
    del art
    size = (root / PROJECT / "artifacts" / "images" / "v1" / "manifest.json").stat().st_size
    limit, target = scaled(120, files, "MB")
    line("manifest.json", f"{size / 1e6:.1f} MB", target, size / 1e6 < limit)
    line("  bytes per file in the manifest", f"{size / files:.0f} B", "(no target)", True)

    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = nb.use_artifact(f"{PROJECT}/images:v1", dir=root)
    used = time.perf_counter() - t
    assert len(art) == files and not caught, [str(w.message)[:200] for w in caught]
    limit, target = scaled(20, files, "s")
    line(f"use_artifact (reads it, stats {files:,} files)", secs(used), target, used < limit)
    del art


def bench_checksum(paths: list[Path], root: Path, repeats: int) -> None:
    from nuboard import artifacts as nb

    total = sum(p.stat().st_size for p in paths)
    read_all(paths)
    print(f"  (page cache warmed: {len(paths)} files of {total / 1e6:,.0f} MB read once, so both "
          "hash from memory)")
    best_sum, sums = math.inf, {}
    for _ in range(repeats):
        t = time.perf_counter()
        out = subprocess.run(["sha256sum", *map(str, paths)], capture_output=True, text=True,
                             check=True).stdout
        best_sum = min(best_sum, time.perf_counter() - t)
        sums = {Path(f.lstrip("*")).name: h for h, f in (row.split(None, 1) for row in out.splitlines())}
    best_nb, art = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        art = nb.add_artifact(PROJECT, "shards", paths[0].parent, reference=True, checksum=True,
                              dir=root)
        best_nb = min(best_nb, time.perf_counter() - t)
    got = {f["path"]: f["sha256"] for f in art.manifest["files"]}
    assert got == sums, "add_artifact's SHA-256 differs from sha256sum's"
    rate_sum, rate_nb = total / best_sum / 1e6, total / best_nb / 1e6
    line(f"sha256sum over {len(paths)} files (best of {repeats})", f"{rate_sum:,.0f} MB/s",
         "(the reference)", True)
    line(f"add_artifact checksum=True (best of {repeats})", f"{rate_nb:,.0f} MB/s",
         f">= {0.8 * rate_sum:,.0f} MB/s (80%)", rate_nb >= 0.8 * rate_sum)
    line("  as a share of sha256sum", f"{rate_nb / rate_sum:.0%}", ">= 80%", rate_nb >= 0.8 * rate_sum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000, help="small files (default 1,000,000)")
    parser.add_argument("--gigabytes", type=float, default=2.0, help="of large files to hash (default 2)")
    parser.add_argument("--large-files", type=int, default=4, help="how many large files (default 4)")
    parser.add_argument("--repeats", type=int, default=2, help="hashing runs; the best counts")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the data is made (default a temporary folder on this disk)")
    parser.add_argument("--keep", action="store_true", help="keep the data, to reuse it next time")
    args = parser.parse_args()
    total = int(args.gigabytes * 1e9)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {args.files:,} small files, "
          f"{args.large_files} files of {total / args.large_files / 1e6:,.1f} MB")
    parent = args.dir if args.dir is not None else default_parent()
    parent.mkdir(parents=True, exist_ok=True)
    work = parent / "nuboard-bench-artifacts" if args.keep else Path(
        tempfile.mkdtemp(prefix="nuboard-bench-artifacts-", dir=parent))
    try:
        run_bench(work, args, total)
    finally:
        if not args.keep:
            t = time.perf_counter()
            remove_tree(work)
            line("removing the data (not a target)", secs(time.perf_counter() - t), "(no target)", True)


def run_bench(work: Path, args, total: int) -> None:
    stamp = work / "sizes.json"
    sizes = {"files": args.files, "bytes": total, "large": args.large_files}
    small, large = work / "small", work / "large"
    if not (stamp.is_file() and json.loads(stamp.read_text()) == sizes):
        remove_tree(work)
        work.mkdir(parents=True)
        t = time.perf_counter()
        made = make_small_files(small, args.files)
        assert made == args.files, made
        line(f"setup: writing {args.files:,} small files (not a target)",
             secs(time.perf_counter() - t), "(no target)", True)
        t = time.perf_counter()
        make_large_files(large, total, args.large_files)
        line(f"setup: writing {total / 1e6:,.0f} MB of large files (not a target)",
             secs(time.perf_counter() - t), "(no target)", True)
        stamp.write_text(json.dumps(sizes))
    else:
        print(f"  (reusing the data kept in {work})")
    root = work / "experiments"
    shutil.rmtree(root, ignore_errors=True)
    try:
        bench_small(small, root, args.files)
        bench_checksum(sorted(large.iterdir()), root, args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    line("peak memory of this process", f"{rss:,.0f} MB", "(no target)", True)


if __name__ == "__main__":
    main()
