#!/usr/bin/env python3
"""Benchmark of media logging, beside tensorboardX in the same process and run.

    python3 scripts/bench_media.py [--images 100] [--histograms 30]

Each call is timed on the training thread, with a 10 ms pause between calls standing in for a
training step (NuBoard's media thread encodes and writes during it; tensorboardX encodes on the
caller). Printed: the median time per call of each side and their ratio against the target
(an image at most 1/10 of tensorboardX's add_image, a 1,000,000-value histogram at most 1/3 of
its add_histogram with its default bins), bytes on disk per entry of each side, and the cost of
add_scalar on the training thread with and without images logged beside it (bench_logging's
figure; the target: unchanged, within 10%).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

PAUSE = 0.010


def line(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<58} {value:>18}   target {target:<20} {'ok' if ok else 'MISSED'}")


def timed_calls(call, n: int) -> list[float]:
    """Seconds of each of n calls of call(i) on this thread, PAUSE between them."""
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - t0)
        time.sleep(PAUSE)
    return out


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def nuboard_side(root: Path, kind: str, make, n: int) -> tuple[float, float]:
    """(median seconds per call, bytes on disk per entry) of NuBoard logging n entries."""
    import nuboard as nb
    run = nb.init("bench", dir=root, run_name=kind, compact=False, capture_env=False,
                  capture_console=False, system_metrics=False)
    before = folder_bytes(run.folder)
    times = timed_calls(lambda i: run.log({kind: make(nb)}, step=i), n)
    run.finish()
    media = folder_bytes(run.folder / "media") if (run.folder / "media").exists() else 0
    logs = sum(p.stat().st_size for p in run.folder.glob("events.*.log"))
    return statistics.median(times), (media + logs - min(before, logs)) / n


def tensorboardx_side(root: Path, kind: str, call, n: int) -> tuple[float, float]:
    """(median seconds per call, bytes on disk per entry) of tensorboardX logging n entries."""
    from tensorboardX import SummaryWriter
    folder = root / f"tbx-{kind}"
    writer = SummaryWriter(str(folder))
    writer.flush()
    before = folder_bytes(folder)
    times = timed_calls(lambda i: call(writer, i), n)
    writer.close()
    return statistics.median(times), (folder_bytes(folder) - before) / n


def scalar_cost(root: Path, images_every: int | None, steps: int = 20_000, scalars: int = 10) -> float:
    """Training-thread CPU per add_scalar (µs), with an image logged every `images_every` steps
    (its own call left out of the figure) or none."""
    import numpy as np

    import nuboard as nb
    pic = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    names = [f"train/metric_{i}" for i in range(scalars)]
    run = nb.init("bench", dir=root, run_name="scalars", compact=False, capture_env=False,
                  capture_console=False, system_metrics=False)
    add = run.add_scalar
    spent = 0.0
    for step in range(steps):
        t0 = time.thread_time()
        v = step * 0.5
        for name in names:
            add(name, v, step)
        spent += time.thread_time() - t0
        if images_every and step % images_every == 0:
            run.log({"samples": nb.Image(pic)}, step=step)
    run.finish()
    return spent / (steps * scalars) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=100, help="image calls per side")
    parser.add_argument("--histograms", type=int, default=30, help="histogram calls per side")
    args = parser.parse_args()
    try:
        import numpy as np
        import tensorboardX  # noqa: F401
    except ImportError as exc:
        sys.exit(f"bench_media needs numpy and tensorboardX ({exc.name} is missing): "
                 "pip install numpy tensorboardX")
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:256, 0:256]
    smooth = np.stack([xx, yy, (xx + yy) // 2], axis=-1).astype(np.uint8)
    pic = np.clip(smooth + rng.integers(0, 24, smooth.shape), 0, 255).astype(np.uint8)   # a photo-like 256x256x3
    values = rng.normal(size=1_000_000).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nb_img, nb_img_bytes = nuboard_side(root, "image", lambda nb: nb.Image(pic), args.images)
        tb_img, tb_img_bytes = tensorboardx_side(
            root, "image", lambda w, i: w.add_image("image", pic, i, dataformats="HWC"), args.images)
        nb_hist, nb_hist_bytes = nuboard_side(root, "hist", lambda nb: nb.Histogram(values), args.histograms)
        tb_hist, tb_hist_bytes = tensorboardx_side(
            root, "hist", lambda w, i: w.add_histogram("hist", values, i), args.histograms)
        line("image 256x256x3 uint8: NuBoard run.log (median)", f"{nb_img * 1e3:.3f} ms", "", True)
        line("image: tensorboardX add_image (median)", f"{tb_img * 1e3:.3f} ms", "", True)
        line("image: NuBoard / tensorboardX", f"{nb_img / tb_img:.3f}", "<= 0.1", nb_img / tb_img <= 0.1)
        line("histogram 1M values: NuBoard run.log (median)", f"{nb_hist * 1e3:.3f} ms", "", True)
        line("histogram: tensorboardX add_histogram (median)", f"{tb_hist * 1e3:.3f} ms", "", True)
        line("histogram: NuBoard / tensorboardX", f"{nb_hist / tb_hist:.3f}", "<= 0.333",
             nb_hist / tb_hist <= 1 / 3)
        line("bytes on disk per image: NuBoard", f"{nb_img_bytes:,.0f} B", "(beside theirs)", True)
        line("bytes on disk per image: tensorboardX", f"{tb_img_bytes:,.0f} B", "", True)
        line("bytes on disk per histogram: NuBoard (64 bins)", f"{nb_hist_bytes:,.0f} B", "(beside theirs)", True)
        line("bytes on disk per histogram: tensorboardX", f"{tb_hist_bytes:,.0f} B", "", True)
        alone = min(scalar_cost(root / "a", None) for _ in range(3))
        beside = min(scalar_cost(root / "b", 50) for _ in range(3))
        line("add_scalar training-thread CPU, no images", f"{alone:.3f} µs", "", True)
        line("add_scalar training-thread CPU, an image every 50 steps", f"{beside:.3f} µs",
             f"<= {alone * 1.1:.3f} µs", beside <= alone * 1.1)


if __name__ == "__main__":
    main()
