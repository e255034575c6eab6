"""The small files the demo's datasets reference, under <root>/.demo-data/.

Project discovery skips folders that start with a dot, so this one is never taken for a
project. Token shards hold random uint16 token ids; images are tiny real PNGs.
"""
from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path

DATA_FOLDER = ".demo-data"
SHARD_TOKENS = 8192                # 16 KiB of uint16 token ids per shard
CLASSES = [("n01440764", "tench"), ("n01443537", "goldfish"), ("n01484850", "great white shark"),
           ("n01491361", "tiger shark"), ("n01494475", "hammerhead"), ("n01496331", "electric ray"),
           ("n01498041", "stingray"), ("n01514668", "cock"), ("n01514859", "hen"),
           ("n01518878", "ostrich")]


def data_dir(root: Path) -> Path:
    """The folder that holds the demo's data: <root>/.demo-data."""
    return Path(root) / DATA_FOLDER


def write_token_shards(folder: Path, *, train: int, seed: int, snapshot: str) -> Path:
    """train/shard-*.bin, val/shard-00000.bin and index.json: a tokenized text corpus."""
    rng = random.Random(seed)
    shards = [f"train/shard-{i:05d}.bin" for i in range(train)] + ["val/shard-00000.bin"]
    for rel in shards:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tokens = [min(50256, int(rng.paretovariate(1.1))) for _ in range(SHARD_TOKENS)]
        path.write_bytes(struct.pack(f"<{SHARD_TOKENS}H", *tokens))
    index = {"snapshot": snapshot, "tokenizer": "gpt2", "dtype": "uint16",
             "tokens_per_shard": SHARD_TOKENS, "shards": shards}
    (folder / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return folder


def png_bytes(width: int, height: int, pixel) -> bytes:
    """A truecolour PNG; pixel(x, y) gives (r, g, b) in 0-255."""
    rows = b"".join(b"\x00" + bytes(c for x in range(width) for c in pixel(x, y))
                    for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def write_images(folder: Path, *, per_class: int = 2, size: int = 16) -> Path:
    """images/<wnid>/*.png for a few classes, classes.txt (all 100) and train.csv."""
    rng = random.Random(100)
    names = CLASSES + [(f"n0{1530000 + 7919 * i}", f"class-{i:03d}") for i in range(len(CLASSES), 100)]
    lines = []
    for label, (wnid, _) in enumerate(CLASSES[:4]):
        for k in range(per_class):
            base = [rng.randrange(40, 220) for _ in range(3)]
            image = png_bytes(size, size, lambda x, y, b=base: (
                (b[0] + 6 * x) % 256, (b[1] + 6 * y) % 256, (b[2] + 3 * (x + y)) % 256))
            rel = f"images/{wnid}/{wnid}_{k + 1:04d}.png"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(image)
            lines.append(f"{rel},{label}")
    (folder / "classes.txt").write_text("".join(f"{w} {n}\n" for w, n in names), encoding="utf-8")
    (folder / "train.csv").write_text("path,label\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return folder


def write_checkpoint(path: Path, *, step: int, width: int, seed: int) -> Path:
    """A small file in the safetensors layout: a JSON header, then the tensor bytes."""
    rng = random.Random(seed)
    values = [rng.gauss(0, 0.02) for _ in range(256)]
    data = struct.pack(f"<{len(values)}f", *values)
    header = {"__metadata__": {"format": "pt", "step": str(step), "width": str(width),
                               "note": "nuboard demo: a sample of the weights"},
              "lm_head.weight": {"dtype": "F32", "shape": [16, 16], "data_offsets": [0, len(data)]}}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path
