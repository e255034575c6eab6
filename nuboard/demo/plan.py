"""What the demo writes: its projects, its dataset versions and every run, with its story."""
from __future__ import annotations

from dataclasses import dataclass, field

DATASETS = "datasets"
LLM = "llm-pretrain"
VIT = "vit-ablations"
PROJECTS = (DATASETS, LLM, VIT)
FINEWEB_V2 = "datasets/fineweb-edu:v2"
IMAGENET_V1 = "datasets/imagenet-100:v1"
MODEL_V1 = "model:v1"
STEP_SECONDS = 1.2 / 3000          # real time per step: a 3,000-step run lasts about 1.2 s
EVAL_STEP_SECONDS = 0.0045         # real time per MMLU batch (its timer sleeps 4 ms)
DAY = 86400.0


@dataclass(frozen=True)
class RunSpec:
    """One run of the demo and what happens to it.

    kind: 'prepare' (writes fineweb-edu v2), 'train' (a language model), 'eval' (MMLU on
    model:v1) or 'vit' (an image classifier). after: keys of runs that must be finished
    first. The story fields (crash_at, kill_at, preempt_at with resume_from, fork_of with
    fork_step) say how the run ends.
    """
    project: str
    name: str
    kind: str
    config: dict
    tags: tuple = ()
    group: str | None = None
    notes: str | None = None
    uses: tuple = ()
    steps: int = 3000
    ranks: int = 1
    seed: int = 1
    after: tuple = ()
    crash_at: int | None = None
    kill_at: int | None = None
    preempt_at: int | None = None
    resume_from: int | None = None
    fork_of: str | None = None
    fork_step: int = 0
    saves_model: bool = False
    extra: dict = field(default_factory=dict)
    day: int = 1
    at: str = "09:00"
    step_s: float = 4.0
    resume_day: int | None = None
    resume_at: str = "08:10"

    @property
    def key(self) -> str:
        return f"{self.project}/{self.name}"


def began(spec: RunSpec, midnight: float, session: int = 0) -> float:
    """When a session of the run starts (epoch seconds); midnight: the demo day's, local."""
    day, at = (spec.resume_day, spec.resume_at) if session else (spec.day, spec.at)
    hours, minutes = (int(part) for part in at.split(":"))
    return midnight - day * DAY + hours * 3600 + minutes * 60


def speed(spec: RunSpec) -> float:
    """How many times faster than real time the run's replayed clock goes."""
    real = {"prepare": 1.0 / spec.steps, "vit": 1.1 / spec.steps,
            "eval": EVAL_STEP_SECONDS}.get(spec.kind, STEP_SECONDS)
    return spec.step_s / real


def lm_config(lr: float, seed: int, *, width: int = 1024, depth: int = 24, batch: int = 64,
              steps: int = 3000, ranks: int = 1) -> dict:
    """A GPT-style pretraining config, nested as a real one is."""
    return {
        "model": {"arch": "gpt", "width": width, "depth": depth, "heads": width // 64,
                  "vocab_size": 50304, "context": 2048, "dropout": 0.0, "tie_embeddings": True},
        "optimizer": {"name": "adamw", "lr": lr, "betas": [0.9, 0.95], "eps": 1e-8,
                      "weight_decay": 0.1, "grad_clip": 1.0},
        "schedule": {"kind": "cosine", "warmup_steps": 200, "min_lr_ratio": 0.1},
        "data": {"dataset": FINEWEB_V2, "seq_len": 2048, "batch_size": batch, "num_workers": 8},
        "train": {"steps": steps, "eval_every": 250, "precision": "bf16", "seed": seed,
                  "compile": True, "devices": ranks},
    }


def vit_config(*, patch: int = 16, mixup: float = 0.8, drop_path: float = 0.1) -> dict:
    return {
        "model": {"arch": "vit-small", "patch": patch, "width": 384, "depth": 12, "heads": 6,
                  "drop_path": drop_path},
        "optimizer": {"name": "adamw", "lr": 1e-3, "weight_decay": 0.05, "betas": [0.9, 0.999]},
        "schedule": {"kind": "cosine", "warmup_steps": 100},
        "data": {"dataset": IMAGENET_V1, "image_size": 224, "batch_size": 256,
                 "augment": {"randaug": "rand-m9-mstd0.5", "mixup": mixup, "cutmix": 1.0}},
        "train": {"steps": 2000, "eval_every": 100, "precision": "bf16", "seed": 0},
    }


def _sweep(lr: float, seed: int, label: str, **story) -> RunSpec:
    tags = ("sweep", "baseline") if story.pop("baseline", False) else ("sweep",)
    return RunSpec(LLM, f"lr{label}-s{seed}", "train", lm_config(lr, seed), tags=tags,
                   group="lr-sweep", uses=(FINEWEB_V2,), seed=seed, after=(f"{LLM}/prepare-data",),
                   **story)


PREPARE = RunSpec(
    LLM, "prepare-data", "prepare",
    {"source": "HuggingFaceFW/fineweb-edu", "snapshot": "CC-MAIN-2026-10", "min_edu_score": 3,
     "dedup": {"method": "minhash", "threshold": 0.8}, "tokenizer": "gpt2", "shards": 5,
     "workers": 64},
    tags=("data",), steps=2000, seed=7, day=9, at="09:40", step_s=1.2,
    notes="Tokenizes the October snapshot into datasets/fineweb-edu:v2.")

TRAINING = (
    _sweep(1e-4, 1, "1e-4", day=8, at="10:15"),
    _sweep(3e-4, 1, "3e-4", day=8, at="10:16"),
    _sweep(1e-3, 1, "1e-3", baseline=True, saves_model=True, day=8, at="10:18",
           notes="Best of the sweep; its final checkpoint is model:v1."),
    _sweep(3e-3, 1, "3e-3", day=8, at="10:20"),
    _sweep(1e-2, 1, "1e-2", crash_at=1100, notes="Diverged: loss went to NaN.", day=8,
           at="10:21"),
    _sweep(3e-4, 2, "3e-4", day=7, at="09:30"),
    _sweep(1e-3, 2, "1e-3", day=7, at="09:32"),
    RunSpec(LLM, "ddp-lr1e-3-bs128", "train", lm_config(1e-3, 1, batch=128, ranks=2),
            tags=("ddp",), group="ddp", uses=(FINEWEB_V2,), ranks=2, seed=3,
            after=(f"{LLM}/prepare-data",), day=6, at="11:00", step_s=2.6),
    RunSpec(LLM, "ddp-lr2e-3-bs128", "train", lm_config(2e-3, 1, batch=128, ranks=2),
            tags=("ddp",), group="ddp", uses=(FINEWEB_V2,), ranks=2, seed=4,
            after=(f"{LLM}/prepare-data",), day=6, at="11:05", step_s=2.6),
    RunSpec(LLM, "lr6e-4-long", "train", lm_config(6e-4, 1), tags=("baseline", "preempted"),
            uses=(FINEWEB_V2,), seed=5, preempt_at=1800, resume_from=1500,
            after=(f"{LLM}/prepare-data",), day=6, at="20:00", resume_day=5, resume_at="08:10",
            notes="Preempted at step 1800; resumed from the step-1500 checkpoint."),
    RunSpec(LLM, "lr1e-3-s1-halflr", "train", lm_config(1e-3, 1), tags=("fork",),
            uses=(FINEWEB_V2,), seed=6, fork_of=f"{LLM}/lr1e-3-s1", fork_step=1500,
            after=(f"{LLM}/lr1e-3-s1",), extra={"lr_scale": 0.5}, day=5, at="14:00",
            notes="Forked from lr1e-3-s1 at step 1500 with the learning rate halved."),
    RunSpec(LLM, "wide-d2048", "train", lm_config(6e-4, 1, width=2048, depth=24),
            tags=("scaling",), uses=(FINEWEB_V2,), seed=8, kill_at=1400,
            after=(f"{LLM}/prepare-data",), day=4, at="10:00", step_s=9.0),
)

EVAL = RunSpec(
    LLM, "eval-mmlu", "eval",
    {"task": "mmlu", "shots": 5, "checkpoint": MODEL_V1, "batch_size": 16, "subjects": 57,
     "max_length": 2048},
    tags=("eval",), uses=(MODEL_V1,), steps=228, seed=9, after=(f"{LLM}/lr1e-3-s1",), day=4,
    at="16:30", step_s=3.0)

ABLATIONS = tuple(
    RunSpec(VIT, name, "vit", vit_config(**options), tags=tags, group="vit-s16",
            uses=(IMAGENET_V1,), steps=2000, seed=20 + i,
            extra={"quality": quality, "overfit": overfit, "images_per_s": images_per_s},
            day=day, at=at, step_s=256 / images_per_s * 16)
    for i, (name, options, tags, quality, overfit, images_per_s, day, at) in enumerate((
        ("vit-s16-baseline", {}, ("ablation", "baseline"), 0.0, 0.0, 3150.0, 3, "09:00"),
        ("vit-s16-no-mixup", {"mixup": 0.0}, ("ablation",), -0.02, 0.09, 3170.0, 3, "09:02"),
        ("vit-s16-droppath0.2", {"drop_path": 0.2}, ("ablation",), 0.012, -0.02, 3120.0, 3,
         "09:04"),
        ("vit-p8", {"patch": 8}, ("ablation", "slow"), 0.035, 0.01, 820.0, 2, "13:00"),
    )))

RUNS = (PREPARE,) + TRAINING + (EVAL,) + ABLATIONS


def run_spec(key: str) -> RunSpec:
    """The run of the demo named 'project/name'."""
    for spec in RUNS:
        if spec.key == key:
            return spec
    raise KeyError(f"no demo run {key!r}")
