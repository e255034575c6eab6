"""The demo's curves: learning-rate schedules and noisy losses, accuracies and throughput.

Pure arithmetic with a seeded random.Random, so a run's curve depends only on its config and
seed, and a resumed session or a fork can replay the steps before it without logging them.
"""
from __future__ import annotations

import math
import random
from typing import Callable

UNIFORM_LOSS = 10.8          # ln(50257): a language model's loss before it has learned anything
LOSS_FLOOR = 2.25            # what a 1024-wide model reaches with a long, well-tuned run
IMAGE_LOSS = 4.6             # ln(100): a 100-class classifier's first loss


def cosine_lr(peak: float, warmup: int, total: int, floor: float = 0.1,
              scale_after: "tuple[int, float] | None" = None) -> Callable[[int], float]:
    """Linear warmup to `peak`, then cosine decay to floor*peak at `total`.

    scale_after=(step, factor) multiplies the rate from that step on (a fork that lowers it).
    """
    def lr_at(step: int) -> float:
        if step < warmup:
            lr = peak * (step + 1) / warmup
        else:
            progress = min(1.0, (step - warmup) / max(1, total - warmup))
            lr = peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))
        if scale_after is not None and step > scale_after[0]:
            lr *= scale_after[1]
        return lr
    return lr_at


class LanguageCurve:
    """A language model's training: call point(step) for steps 0, 1, 2, ... in order.

    The loss falls with the learning rate seen so far (its sum, saturating at high rates),
    towards a floor that a too-high peak rate raises; noise, rare spikes, and, when
    diverge_at is given, a blow-up to NaN at that step.
    """

    def __init__(self, lr_at: Callable[[int], float], *, peak: float, seed: int,
                 width: int = 1024, diverge_at: int | None = None):
        self.lr_at = lr_at
        self.rng = random.Random(seed)
        self.diverge_at = diverge_at
        self.floor = (LOSS_FLOOR - 0.18 * math.log2(width / 1024)
                      + 0.9 * max(0.0, math.log10(peak / 1.2e-3)))
        self.noise = 0.018 * (1 + 2 * max(0.0, math.log10(peak / 1e-3)))
        self.spike_chance = 0.0015 * peak / 1e-3
        self.area = 0.0
        self.spike = 0.0
        self.next_step = 0

    def smooth(self) -> float:
        """The loss without noise at the current point."""
        drop = (1 + self.area / 0.012) ** -0.55
        return self.floor + (UNIFORM_LOSS - self.floor) * drop

    def point(self, step: int) -> dict[str, float]:
        """train/loss, train/lr and train/grad_norm at `step` (the next one in order)."""
        lr = self.lr_at(step)
        self.area += lr / (1 + lr / 2e-3)
        self.next_step = step + 1
        smooth = self.smooth()
        self.spike *= 0.85
        if step > 50 and self.rng.random() < self.spike_chance:
            self.spike += self.rng.uniform(0.15, 0.5)
        blow = 0.0
        if self.diverge_at is not None and step > self.diverge_at - 260:
            blow = 0.03 * math.exp((step - self.diverge_at + 260) / 42)
        loss = smooth + self.spike + blow + self.rng.gauss(0, self.noise * (0.6 + smooth / 6))
        grad = (0.22 + 5.5 * math.exp(-step / 45) + 0.05 * (smooth - self.floor)
                + 4 * self.spike + 2 * blow) * (1 + abs(self.rng.gauss(0, 0.08)))
        if self.diverge_at is not None and step >= self.diverge_at:
            loss = grad = math.nan
        return {"train/loss": loss, "train/lr": lr, "train/grad_norm": grad}

    def skip_to(self, step: int) -> None:
        """Replay the steps before `step` without returning them (a resume, a fork)."""
        while self.next_step < step:
            self.point(self.next_step)

    def evaluate(self) -> dict[str, float]:
        """eval/loss and eval/accuracy (next-token) at the current point."""
        loss = self.smooth() + 0.035 + self.rng.gauss(0, 0.006)
        accuracy = 0.47 * (UNIFORM_LOSS - loss) / (UNIFORM_LOSS - 2.0) + self.rng.gauss(0, 0.002)
        return {"eval/loss": loss, "eval/accuracy": max(0.0, accuracy)}


def throughput(base: float, step: int, rng: random.Random) -> float:
    """Tokens (or images) per second: slow while compiling, then steady with jitter."""
    warm = 0.35 if step < 3 else 1.0
    return base * warm * (1 + rng.gauss(0, 0.012))


class ImageCurve:
    """An image classifier's training: loss, accuracy and top-1/top-5 over `total` steps.

    quality moves the final accuracy (an ablation that helps or hurts); overfit widens the
    gap between train and eval accuracy.
    """

    def __init__(self, total: int, *, quality: float, overfit: float, seed: int):
        self.total = total
        self.quality = quality
        self.overfit = overfit
        self.rng = random.Random(seed)

    def progress(self, step: int) -> float:
        return 1 - math.exp(-4.2 * step / self.total)

    def point(self, step: int) -> dict[str, float]:
        p = self.progress(step)
        acc = (0.74 + self.quality + self.overfit) * p
        loss = IMAGE_LOSS - (IMAGE_LOSS - 0.75 + 2.2 * self.quality) * p ** 0.8
        return {"train/loss": loss + self.rng.gauss(0, 0.06 + 0.04 * (1 - p)),
                "train/accuracy": min(1.0, max(0.0, acc + self.rng.gauss(0, 0.025)))}

    def evaluate(self, step: int) -> dict[str, float]:
        p = self.progress(step)
        top1 = (0.78 + self.quality - 0.6 * self.overfit * p) * p + self.rng.gauss(0, 0.004)
        top5 = 1 - (1 - top1) * 0.28
        loss = IMAGE_LOSS - (IMAGE_LOSS - 0.85 + 2 * self.quality - 1.5 * self.overfit) * p ** 0.8
        return {"eval/top1": top1, "eval/top5": top5, "eval/loss": loss + self.rng.gauss(0, 0.01)}
