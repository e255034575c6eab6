"""The demo's first dataset versions, added outside any run (its `datasets` job)."""
from __future__ import annotations

from pathlib import Path

from .data import data_dir, write_images, write_token_shards
from .plan import DATASETS


def add_datasets(root: Path) -> None:
    """fineweb-edu v1 and imagenet-100 v1, added outside any run, as references."""
    import nuboard as nb
    data = data_dir(root)
    fineweb = write_token_shards(data / "fineweb-edu" / "2026-09", train=4, seed=1,
                                 snapshot="2026-09")
    nb.add_artifact(DATASETS, "fineweb-edu", fineweb, type="dataset", reference=True, dir=root,
                    description="FineWeb-Edu, Sep 2026 snapshot: deduplicated, edu score >= 3, "
                                "GPT-2 tokens",
                    metadata={"tokens": "10B", "docs": 8_100_000, "snapshot": "CC-MAIN-2026-09",
                              "tokenizer": "gpt2", "min_edu_score": 3})
    images = write_images(data / "imagenet-100")
    nb.add_artifact(DATASETS, "imagenet-100", images, type="dataset", reference=True, dir=root,
                    description="ImageNet-100: 100 ImageNet-1k classes (the CMC subset), a sample "
                                "of its images",
                    metadata={"classes": 100, "train_images": 126_689, "val_images": 5_000,
                              "resolution": 224})
