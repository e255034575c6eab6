"""The vit-ablations loop: a small ViT on imagenet-100, epoch by epoch."""
from __future__ import annotations

import random
import time

from .curves import ImageCurve, cosine_lr, throughput
from .language import Pace
from .plan import RunSpec
from .samples import vision_samples
from .terminal import Bar, describe, paint, print_header

STEPS_PER_EPOCH = 500


def train_classifier(run, spec: RunSpec, resumed: bool = False) -> None:
    """Train for spec.steps steps; evaluate top-1 and top-5 every eval_every steps."""
    config = spec.config
    data = run.use_artifact(spec.uses[0])
    classes = data.metadata.get("classes", "?")
    print_header(run, spec.ranks, [f"data: {describe(data)}, {classes} classes"])
    curve = ImageCurve(spec.steps, quality=spec.extra["quality"], overfit=spec.extra["overfit"],
                       seed=spec.seed)
    lr_at = cosine_lr(config["optimizer"]["lr"], config["schedule"]["warmup_steps"], spec.steps,
                      floor=0.01)
    rng = random.Random(spec.seed)
    media_rng = random.Random(spec.seed * 7 + 1)
    pace = Pace(0, seconds_per_step=1.1 / spec.steps)
    epochs = -(-spec.steps // STEPS_PER_EPOCH)
    best = 0.0
    bar = None
    for step in range(spec.steps):
        if step % STEPS_PER_EPOCH == 0:
            if bar is not None:
                bar.close()
            epoch = step // STEPS_PER_EPOCH + 1
            bar = Bar(min(STEPS_PER_EPOCH, spec.steps - step), f"epoch {epoch}/{epochs}", every=20,
                      seconds_per_unit=config["data"]["batch_size"] / spec.extra["images_per_s"])
        point = curve.point(step)
        run.log({**point, "train/lr": lr_at(step), "train/epoch": step / STEPS_PER_EPOCH,
                 "train/images_per_s": throughput(spec.extra["images_per_s"], step, rng)},
                step=step)
        if (step + 1) % config["train"]["eval_every"] == 0:
            with run.timer("eval"):
                time.sleep(0.003)
                scores = curve.evaluate(step)
            run.log(scores, step=step)
            run.log(vision_samples(step, scores["eval/top1"], media_rng), step=step)
            best = max(best, scores["eval/top1"])
            bar.write(paint("eval", "cyan") + f" step {step + 1:5d} | top1 {scores['eval/top1']:.4f} "
                      f"| top5 {scores['eval/top5']:.4f} | loss {scores['eval/loss']:.4f}")
        bar.update(1, loss=point["train/loss"], acc=point["train/accuracy"])
        pace.wait(step)
    if bar is not None:
        bar.close()
    print(paint("done", "green") + f": best eval/top1 {best:.4f}")
