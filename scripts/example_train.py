#!/usr/bin/env python3
"""A small training loop that logs a run with NuBoard and prints where it is.

    python3 scripts/example_train.py [--steps 2000] [--dir experiments]
"""
from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass

import nuboard as nb


@dataclass
class Config:
    lr: float = 3e-4
    batch_size: int = 64
    layers: int = 4
    steps: int = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="root folder (default: $NUBOARD_DIR or ./experiments)")
    args = parser.parse_args()
    config = Config(steps=args.steps)
    rng = random.Random(0)
    with nb.init("examples", run_name="toy-regression", config=config, tags=["example"],
                 dir=args.dir) as run:
        loss = 2.0
        for step in range(config.steps):
            loss = loss * (1 - config.lr * 10) + 0.01 * rng.random()
            run.log({"train/loss": loss, "train/lr": config.lr * (0.5 + 0.5 * math.cos(step / config.steps * math.pi))},
                    step=step)
            if step % 100 == 0:
                run.add_scalar("eval/accuracy", 1 / (1 + loss), step=step)
    points = sum(len(s) for s in nb.read_scalars(run.path).values())
    print(f"logged {points} points to run {run.id}")
    print(f"the run is in {run.path}")


if __name__ == "__main__":
    main()
