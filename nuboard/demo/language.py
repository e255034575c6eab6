"""The llm-pretrain loops: preparing fineweb-edu v2, and pretraining a language model."""
from __future__ import annotations

import math
import os
import random
import signal
import time
import warnings

from . import clock
from .curves import LanguageCurve, cosine_lr, throughput
from .data import data_dir, write_checkpoint, write_token_shards
from .plan import FINEWEB_V2, STEP_SECONDS, RunSpec
from .samples import language_samples
from .terminal import Bar, describe, paint, print_header

LOG_EVERY = 250
PACE_EVERY = 50                    # steps between sleeps that spread the run over its seconds
TOKENS_PER_GPU = 76_000.0          # tokens/s of one GPU for the 1024-wide model


class Pace:
    """Spreads steps over wall time, so points and system samples land at realistic steps.
    Made just before the first step: the run's replay clock starts to move then."""

    def __init__(self, first: int, seconds_per_step: float = STEP_SECONDS):
        clock.start()
        self.first = first
        self.per_step = seconds_per_step
        self.began = time.monotonic()

    def wait(self, step: int) -> None:
        if step % PACE_EVERY == 0:
            ahead = self.began + (step - self.first) * self.per_step - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)


def prepare_data(run, spec: RunSpec, resumed: bool = False) -> None:
    """Filter and tokenize the October snapshot; the output is datasets/fineweb-edu:v2."""
    rng = random.Random(spec.seed)
    print_header(run, spec.ranks, [f"source: {spec.config['source']} {spec.config['snapshot']}"])
    pace = Pace(0, seconds_per_step=1.0 / spec.steps)
    batch = 24_500                        # documents read per batch
    seen = kept_docs = tokens = 0
    bar = Bar(spec.steps, "tokenize", unit="batch", every=20, seconds_per_unit=batch / 48_000)
    for step in range(spec.steps):
        kept = 0.24 + 0.03 * math.sin(step / 170) + rng.gauss(0, 0.01)
        seen += batch
        kept_docs += int(batch * kept)
        tokens += int(batch * kept * 1_020)
        run.log({"data/docs_seen": seen, "data/docs_kept": kept_docs, "data/tokens": tokens,
                 "data/kept_fraction": kept, "data/docs_per_s": throughput(48_000, step, rng)},
                step=step)
        if step and step % 400 == 0:
            bar.write(f"batch {step:5d} | {seen / 1e6:.1f}M docs read | {kept_docs / 1e6:.2f}M kept "
                      f"| {tokens / 1e9:.2f}B tokens")
        bar.update(1, tokens=f"{tokens / 1e9:.1f}B")
        pace.wait(step)
    bar.close()
    folder = data_dir(run.path.parents[2]) / "fineweb-edu" / "2026-10"
    with run.timer("write_shards"):
        write_token_shards(folder, train=spec.config["shards"], seed=spec.seed, snapshot="2026-10")
    version = run.add_artifact(
        "datasets/fineweb-edu", folder, type="dataset", reference=True,
        description="FineWeb-Edu, Oct 2026 snapshot: deduplicated, edu score >= 3, GPT-2 tokens",
        metadata={"tokens": "12B", "docs": kept_docs, "snapshot": "CC-MAIN-2026-10",
                  "tokenizer": "gpt2", "min_edu_score": 3, "dedup": "minhash-0.8"})
    print(paint("done", "green") + f": {kept_docs / 1e6:.1f}M docs, {tokens / 1e9:.1f}B tokens -> "
          f"{version.spec} ({len(version)} files)")


def train_language_model(run, spec: RunSpec, resumed: bool = False) -> None:
    """Pretrain: the story fields of spec decide where it starts, and how it ends."""
    config = spec.config
    peak, total = config["optimizer"]["lr"], spec.steps
    scale = spec.extra.get("lr_scale")
    lr_at = cosine_lr(peak, config["schedule"]["warmup_steps"], total,
                      scale_after=(spec.fork_step, scale) if scale else None)
    width = config["model"]["width"]
    curve = LanguageCurve(lr_at, peak=peak, seed=spec.seed * 10 + run.rank, width=width,
                          diverge_at=spec.crash_at)
    first = 0
    if resumed:
        first = spec.resume_from
    elif spec.fork_of is not None:
        first = spec.fork_step + 1
    data = run.use_artifact(FINEWEB_V2)
    depth = config["model"]["depth"]
    params = 12 * depth * width ** 2 + config["model"]["vocab_size"] * width
    lines = [f"data: {describe(data)}",
             f"model: {params / 1e6:.1f}M parameters (width {width}, depth {depth})"]
    if first:
        how = "resuming from checkpoint" if resumed else f"forked at step {spec.fork_step}; starting at"
        lines.append(paint(f"{how} step {first}", "yellow"))
    print_header(run, spec.ranks, lines)
    if run.rank == 0 and not first:
        warnings.warn("TF32 matmul is disabled; torch.backends.cuda.matmul.allow_tf32 = True "
                      "would be faster on this GPU.", UserWarning, stacklevel=1)
    curve.skip_to(first)
    end = total
    if spec.preempt_at is not None and not resumed:
        end = spec.preempt_at + 1
    _loop(run, spec, curve, first, end)
    clock.pause()                   # saving the checkpoint takes seconds, not a replayed hour
    if spec.saves_model and run.rank == 0:
        save_model(run, spec, curve)


def _loop(run, spec: RunSpec, curve: LanguageCurve, first: int, end: int) -> None:
    rng = random.Random(spec.seed * 31 + run.rank)
    media_rng = random.Random(spec.seed * 37 + 5)
    batch = spec.config["data"]["batch_size"] * spec.config["data"]["seq_len"]
    per_gpu = TOKENS_PER_GPU * (1024 / spec.config["model"]["width"]) ** 2
    mine = run.rank == 0
    timed_data = run.timer("data", all_ranks=True)
    pace = Pace(first)
    bar = Bar(spec.steps, "train", every=25, start=first,
              seconds_per_unit=batch / (per_gpu * spec.ranks))
    best = math.inf
    for step in range(first, end):
        point = curve.point(step)
        check_finite(point["train/loss"], step)
        speed = throughput(per_gpu, step - first, rng)
        if mine:
            run.log({**point, "train/tokens_per_s": speed * spec.ranks,
                     "train/tokens": float((step + 1) * batch)}, step=step)
        else:   # another rank: its own shard's loss and its own throughput
            run.log({"train/loss": point["train/loss"], "train/tokens_per_s": speed}, step=step)
        if mine and step % LOG_EVERY == 0:
            bar.write(f"step {step:5d}/{spec.steps} | loss {point['train/loss']:.4f} | lr "
                      f"{point['train/lr']:.2e} | grad_norm {point['train/grad_norm']:.3f} | "
                      f"{speed * spec.ranks / 1e3:.1f}k tok/s")
        if mine and ((step and step % spec.config["train"]["eval_every"] == 0) or step == spec.steps - 1):
            with run.timer("eval"):
                time.sleep(0.004)
                scores = curve.evaluate()
            run.log(scores, step=step)
            run.log(language_samples(step, scores["eval/loss"], media_rng, spec.config["model"]["width"],
                                     last=step == spec.steps - 1), step=step)
            best = min(best, scores["eval/loss"])
            bar.write(paint("eval", "cyan") + f" step {step:5d} | loss {scores['eval/loss']:.4f} "
                      f"| accuracy {scores['eval/accuracy']:.4f}")
        bar.update(1, loss=point["train/loss"], lr=point["train/lr"])
        if step % PACE_EVERY == 0:
            with timed_data:
                time.sleep(0.0004)
        pace.wait(step)
        if step == spec.kill_at:
            bar.write(f"step {step}: allocating activations for the next micro-batch")
            run.flush()
            os.kill(os.getpid(), signal.SIGKILL)        # as the OOM killer would
        if step == spec.preempt_at and end == step + 1:
            bar.write(paint("SIGTERM", "yellow") + f": preempted at step {step}; the last "
                      f"checkpoint is step {spec.resume_from}")
            bar.close()
            clock.pause()
            os.kill(os.getpid(), signal.SIGTERM)        # as the scheduler would
            time.sleep(5)
    bar.close()
    if mine:
        shown = f"{best:.4f}" if best < math.inf else "-"
        print(paint("done", "green") + f": {end - first} steps, final loss "
              f"{curve.smooth():.4f}, best eval/loss {shown}")


def check_finite(loss: float, step: int) -> None:
    if not math.isfinite(loss):
        raise FloatingPointError(f"loss is {loss} at step {step}: lower the learning rate or "
                                 "add warmup")


def save_model(run, spec: RunSpec, curve: LanguageCurve) -> None:
    """Write the final checkpoint into the run's files, and add it as model:vN."""
    width = spec.config["model"]["width"]
    path = run.path / "files" / "checkpoints" / f"step_{spec.steps:06d}.safetensors"
    with run.timer("checkpoint"):
        write_checkpoint(path, step=spec.steps, width=width, seed=spec.seed)
    scores = curve.evaluate()
    version = run.add_artifact(
        "model", path, type="checkpoint",
        description=f"{run.name}: final checkpoint, step {spec.steps}",
        metadata={"step": spec.steps, "eval_loss": round(scores["eval/loss"], 4),
                  "width": width, "depth": spec.config["model"]["depth"],
                  "tokens_seen": spec.steps * spec.config["data"]["batch_size"]
                  * spec.config["data"]["seq_len"]})
    print(f"saved {path.name} as {version.spec}")
