#!/usr/bin/env python3
"""Benchmark of references to object storage: a dataset of 10,000 objects referenced and used.

    python3 scripts/bench_remote_refs.py [--objects 10000] [--size 200] [--plain]

Starts its own moto S3 server (tests/helpers_s3.py: the server the tests use, a child process on
a loopback port), puts --objects small objects (--size bytes each) into a bucket that keeps
versions (--plain: one that does not), then times, with the requests the server answered:

  add        nb.add_artifact(..., reference=True): one version-aware listing (ListObjectVersions,
             1,000 object versions a request) gives each object's size, ETag and version id;
  check      Artifact.check(): one listing (ListObjectsV2, 1,000 keys a request);
  cold use   use_artifact with an empty cache: the check, then one GET per object (16 at once);
  warm use   use_artifact again: the check, and nothing downloaded (the cache is checked by
             version id or ETag);

then rewrites one object at the same size and deletes another, and shows use_artifact's warning
naming both. Each figure is printed beside its target. Targets: requests are exact (a listing
request per 1,000 objects, one GET per object downloaded, none on a warm use). Times depend on
the server: moto answers a listing page in about 0.3 s (ListObjectsV2) to 1 s (ListObjectVersions)
here, so the add, the check and a warm use are held to 1.5 times boto3's own listing of the same
prefix plus 1 s (NuBoard's part: parsing, comparing, writing the manifest), and a cold use to
1.5 times boto3's own GETs of the objects, 16 at once (timed on 500, scaled), plus the check
(moto serves a few hundred small GETs a second on two cores; S3 itself serves far more at once).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<50} {value:>12}   target {target:<26} {'ok' if ok else 'MISSED'}", flush=True)


def secs(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 10 else f"{seconds:.2f} s"


def timed(s3, work):
    """(result, seconds, requests answered) of work()."""
    with s3.counting() as requests:
        start = time.perf_counter()
        result = work()
        took = time.perf_counter() - start
    return result, took, requests()


def kinds(requests) -> tuple[int, int, int]:
    """(listings, GETs of objects, HEADs) among the requests."""
    listings = sum(1 for m, p in requests if m == "GET" and ("list-type" in p or "versions" in p.split("?")[-1]))
    heads = sum(1 for m, _ in requests if m == "HEAD")
    gets = sum(1 for m, _ in requests if m == "GET") - listings
    return listings, gets, heads


def list_by_boto3(client, bucket: str, method: str) -> float:
    """Seconds boto3 takes to list the prefix page by page with the parameters s3fs sends."""
    start = time.perf_counter()
    kwargs = {"Bucket": bucket, "Prefix": "dataset/", "Delimiter": ""}
    while True:
        out = getattr(client, method)(**kwargs)
        if not out.get("IsTruncated"):
            return time.perf_counter() - start
        if method == "list_object_versions":
            kwargs.update(KeyMarker=out.get("NextKeyMarker", ""),
                          VersionIdMarker=out.get("NextVersionIdMarker", ""))
        else:
            kwargs["ContinuationToken"] = out["NextContinuationToken"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=200, help="bytes per object")
    parser.add_argument("--plain", action="store_true", help="a bucket that keeps no versions")
    args = parser.parse_args()
    n = args.objects

    from helpers_s3 import S3Server

    work = Path(tempfile.mkdtemp(prefix="nuboard-bench-refs-"))
    os.environ["NUBOARD_CACHE_DIR"] = str(work / "cache")
    root = work / "experiments"
    with S3Server() as s3:
        os.environ.update(s3.env)
        url = s3.bucket(versioned=not args.plain) + "/dataset"
        bucket = url[5:].split("/")[0]
        client = s3.client()
        start = time.perf_counter()

        def key(i: int) -> str:
            return f"dataset/shard-{i // 1000:03d}/obj-{i:06d}.bin"

        def put(i: int) -> None:
            client.put_object(Bucket=bucket, Key=key(i),
                              Body=(b"%08d" % i) * (args.size // 8) + b"x" * (args.size % 8))

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, range(n)))
        print(f"{n:,} objects of {args.size} B put into a {'plain' if args.plain else 'versioned'} "
              f"bucket in {secs(time.perf_counter() - start)} (moto {s3.endpoint})\n", flush=True)

        import nuboard as nb
        from nuboard.artifacts import get_artifact, use_artifact

        pages = math.ceil(n / 1000)
        # the baselines: the listings s3fs makes, by boto3 alone (moto's time per page is most of
        # it), and GETs; recorded as the measured calls are (moto's recorder costs time per request)
        recording = s3.counting()
        recording.__enter__()
        plain = list_by_boto3(client, bucket, "list_objects_v2")
        line("baseline: boto3 ListObjectsV2 of the prefix", secs(plain), "-", True)
        if args.plain:
            versioned = plain
        else:
            versioned = list_by_boto3(client, bucket, "list_object_versions")
            line("baseline: boto3 ListObjectVersions of the prefix", secs(versioned), "-", True)
        add_limit = 1.5 * versioned + 1
        check_limit = 1.5 * plain + 1
        recording.__exit__(None, None, None)

        made, took, req = timed(s3, lambda: nb.add_artifact("bench", "data", url, reference=True,
                                                            type="dataset", dir=root))
        listings, gets, heads = kinds(req)
        versions = sum(1 for e in made.manifest["files"] if e.get("version_id"))
        line(f"add_artifact(reference=True), {n:,} objects", secs(took),
             f"< {add_limit:.1f} s (1.5x boto3 + 1)", took < add_limit)
        line("  requests (listing pages)", f"{len(req)}", f"{pages} (1 per 1,000)", len(req) == pages and not gets)
        line("  objects with a version id", f"{versions:,}", f"{0 if args.plain else n:,}",
             versions == (0 if args.plain else n))

        sample = made.manifest["files"][:500]    # GETs by boto3 (by version id), 16 at once, scaled
        with s3.counting():
            start = time.perf_counter()
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda e: client.get_object(
                    Bucket=bucket, Key="dataset/" + e["path"],
                    **({"VersionId": e["version_id"]} if e.get("version_id") else {}))["Body"].read(),
                    sample))
            gets_by_boto3 = (time.perf_counter() - start) * n / len(sample)
        line(f"baseline: boto3 GET of {n:,} objects, 16 at once", secs(gets_by_boto3),
             f"- (from {len(sample)})", True)
        cold_limit = 1.5 * gets_by_boto3 + check_limit

        version = get_artifact("bench/data:v1", dir=root)
        problems, took, req = timed(s3, version.check)
        line(f"check of {n:,} objects (one listing)", secs(took), f"< {check_limit:.1f} s (1.5x boto3 + 1)",
             took < check_limit and not problems)
        line("  requests", f"{len(req)}", f"{pages} (1 per 1,000)", len(req) == pages)

        def use():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                artifact = use_artifact("bench/data:v1", dir=root)
            return artifact, [str(w.message) for w in caught]

        (artifact, caught), took, req = timed(s3, use)
        listings, gets, heads = kinds(req)
        line("use_artifact, cold (check + download all)", secs(took), f"< {cold_limit:.1f} s (1.5x boto3)",
             took < cold_limit and not caught)
        line("  requests: listing + GETs", f"{listings} + {gets:,}", f"{pages} + {n:,}",
             listings == pages and gets == n and not heads)
        size = sum(p.stat().st_size for p in artifact.files.rglob("*.bin"))
        line("  bytes in the local copy", f"{size:,}", f"{n * args.size:,}", size == n * args.size)

        (artifact, caught), took, req = timed(s3, use)
        listings, gets, heads = kinds(req)
        line("use_artifact, warm (check, nothing to download)", secs(took), f"< {check_limit:.1f} s",
             took < check_limit and not caught)
        line("  requests: listing + GETs", f"{listings} + {gets}", f"{pages} + 0", listings == pages and gets == 0)

        changed, deleted = "shard-000/obj-000007.bin", f"shard-{(n - 1) // 1000:03d}/obj-{n - 1:06d}.bin"
        client.put_object(Bucket=bucket, Key=f"dataset/{changed}", Body=b"Z" * args.size)
        client.delete_object(Bucket=bucket, Key=f"dataset/{deleted}")
        (artifact, caught), took, req = timed(s3, use)
        named = len(caught) == 1 and changed in caught[0] and deleted in caught[0]
        line("one rewritten (same size), one deleted", secs(took), "both named", named)
        line("  requests: listing + GETs", f"{kinds(req)[0]} + {kinds(req)[1]}",
             f"{pages} + {0 if not args.plain else 1}", kinds(req)[:2] == (pages, 0 if not args.plain else 1))
        print("  " + (caught[0] if caught else "(no warning)"))
        kept = artifact[changed].read_bytes()
        line("  the rewritten object's bytes in the copy", "recorded" if kept != b"Z" * args.size else "new",
             "recorded" if not args.plain else "new", (kept != b"Z" * args.size) == (not args.plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
