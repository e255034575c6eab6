"""Media the demo's runs log at each evaluation, as a training script would: sample images and
the confidence histogram of the vision runs, generations, a weight histogram and a table of
answers of the language runs. Each run draws them from its own random stream, apart from the
curves' streams, so the scalars are the same with or without them. They are made in plain
Python, in well under a millisecond (no numpy to import): the replay clock runs meanwhile, and
a slow one would stretch the runs' hours."""
from __future__ import annotations

import functools
import math
import random

import nuboard as nb
from nuboard.media.png import encode_png

SIDE = 32                          # pixels a side of a sample image
PROMPTS = ("The capital of France is", "Water boils at", "The largest planet is",
           "Photosynthesis turns light into")
ANSWERS = ("Paris.", "100 degrees Celsius at sea level.", "Jupiter.", "chemical energy in sugars.")
NOISE_WORDS = ("the", "of", "and", "a", "to", "in", "is", "was", "that", "for", "it", "on")


@functools.lru_cache(maxsize=1)
def _picture() -> bytes:
    """The clean sample: stripes, a gradient and a disc, RGB bytes row after row."""
    out = bytearray()
    for y in range(SIDE):
        for x in range(SIDE):
            inside = (x - SIDE / 2) ** 2 + (y - SIDE / 2) ** 2 < SIDE * SIDE / 12
            out += bytes((int(127 + 127 * math.sin(x / 4)), int(127 + 127 * math.cos(y / 6)),
                          230 if inside else 30))
    return bytes(out)


def vision_samples(step: int, top1: float, rng: random.Random) -> dict:
    """A sample image whose noise fades as top-1 rises, and the histogram of the predicted
    class's confidence over 1,000 validation images."""
    noise = int(max(0.05, 1.0 - top1) * 160)
    shake = rng.randbytes(SIDE * SIDE * 3)
    pixels = bytes(min(255, max(0, v + s * noise // 255 - noise // 2)) for v, s in zip(_picture(), shake))
    image = nb.Image(encode_png(pixels, SIDE, SIDE, 3), caption=f"step {step}: top-1 {top1:.3f}")
    confidence = [rng.betavariate(1 + 8 * top1, 2.0) for _ in range(1_000)]
    return {"eval/samples": image, "eval/confidence": _histogram(confidence, 40, 0.0, 1.0)}


def language_samples(step: int, loss: float, rng: random.Random, width: int, last: bool) -> dict:
    """A generation for one prompt (more of it right as the loss falls), the histogram of
    an attention weight matrix, and at the last evaluation a table of every prompt's answer."""
    right = max(0.0, min(1.0, (4.5 - loss) / 2.2))
    spread = (1 + step / 20_000) / math.sqrt(width)
    weights = [rng.gauss(0, spread) for _ in range(2_048)]
    out = {"eval/generation": _generate(rng, step % len(PROMPTS), right),
           "weights/attn_qkv": _histogram(weights, 48, -4 / math.sqrt(width), 4 / math.sqrt(width))}
    if last:
        rows = [[prompt, _generate(rng, i, right), round(right, 3)] for i, prompt in enumerate(PROMPTS)]
        out["eval/answers"] = nb.Table(columns=["prompt", "answer", "score"], data=rows)
    return out


def _histogram(values: list[float], bins: int, low: float, high: float) -> nb.Histogram:
    """values counted into equal bins over [low, high] (outside values in the end bins)."""
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / (high - low) * bins)))] += 1
    return nb.Histogram(counts=counts, edges=[low + (high - low) * i / bins for i in range(bins + 1)])


def _generate(rng: random.Random, which: int, right: float) -> str:
    words = ANSWERS[which].split()
    kept = [w if rng.random() < right else rng.choice(NOISE_WORDS) for w in words]
    return f"{PROMPTS[which]} {' '.join(kept)}"
