"""The eval-mmlu loop: MMLU, 5-shot, on the checkpoint model:v1."""
from __future__ import annotations

import json
import random
import struct
import time

from . import clock
from .curves import throughput
from .plan import RunSpec
from .terminal import Bar, paint, print_header

SUBJECTS = (
    "abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology "
    "college_chemistry college_computer_science college_mathematics college_medicine "
    "college_physics computer_security conceptual_physics econometrics electrical_engineering "
    "elementary_mathematics formal_logic global_facts high_school_biology high_school_chemistry "
    "high_school_computer_science high_school_european_history high_school_geography "
    "high_school_government_and_politics high_school_macroeconomics high_school_mathematics "
    "high_school_microeconomics high_school_physics high_school_psychology "
    "high_school_statistics high_school_us_history high_school_world_history human_aging "
    "human_sexuality international_law jurisprudence logical_fallacies machine_learning "
    "management marketing medical_genetics miscellaneous moral_disputes moral_scenarios "
    "nutrition philosophy prehistory professional_accounting professional_law "
    "professional_medicine professional_psychology public_relations security_studies sociology "
    "us_foreign_policy virology world_religions").split()
STEM = ("algebra", "anatomy", "astronomy", "biology", "chemistry", "computer", "mathematics",
        "physics", "engineering", "statistics", "machine_learning", "genetics", "virology")
HUMANITIES = ("history", "law", "jurisprudence", "logic", "fallac", "moral", "philosophy",
              "prehistory", "religions")
SOCIAL = ("econom", "geography", "government", "psychology", "sexuality", "policy",
          "public_relations", "security_studies", "sociology")
BASE = {"stem": 0.29, "humanities": 0.33, "social_sciences": 0.36, "other": 0.34}
BATCHES_PER_SUBJECT = 4


def category(subject: str) -> str:
    """MMLU's four categories, by the subject's name."""
    for name, words in (("stem", STEM), ("humanities", HUMANITIES), ("social_sciences", SOCIAL)):
        if any(w in subject for w in words):
            return name
    return "other"


def checkpoint_step(path) -> str:
    """The step a safetensors checkpoint's metadata names ('?' when it has none)."""
    with open(path, "rb") as fh:
        size = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(size))
    return header.get("__metadata__", {}).get("step", "?")


def evaluate_mmlu(run, spec: RunSpec, resumed: bool = False) -> None:
    """Score the model subject by subject; log running and per-category accuracy."""
    rng = random.Random(spec.seed)
    model = run.use_artifact(spec.uses[0])
    name = next(iter(model))
    print_header(run, spec.ranks, [
        f"model: {model.spec} ({model.type}, {name}, step {checkpoint_step(model[name])})",
        f"task: mmlu, {spec.config['shots']}-shot, {len(SUBJECTS)} subjects"])
    right = seen = 0
    per_category: dict[str, list[int]] = {k: [0, 0] for k in BASE}
    bar = Bar(len(SUBJECTS) * BATCHES_PER_SUBJECT, "mmlu", unit="batch", every=4,
              seconds_per_unit=spec.config["batch_size"] / 410)
    step = 0
    clock.start()
    for subject in SUBJECTS:
        group = category(subject)
        got = 0
        for _ in range(BATCHES_PER_SUBJECT):
            with run.timer("batch"):
                time.sleep(0.004)
                hits = sum(rng.random() < BASE[group] + rng.gauss(0, 0.03) for _ in range(16))
            right, seen, got = right + hits, seen + 16, got + hits
            per_category[group][0] += hits
            per_category[group][1] += 16
            run.log({"eval/mmlu/accuracy": right / seen, "eval/mmlu/batch_accuracy": hits / 16,
                     "eval/mmlu/questions_per_s": throughput(410.0, step, rng)}, step=step)
            bar.update(1, acc=round(right / seen, 3))
            step += 1
        bar.write(f"{subject:<40s} {got / (16 * BATCHES_PER_SUBJECT):.3f}  ({group})")
    bar.close()
    scores = {f"eval/mmlu/{k}": hit / max(1, n) for k, (hit, n) in per_category.items()}
    scores["eval/mmlu/average"] = right / seen
    run.log(scores, step=step - 1)
    print(paint("MMLU (5-shot)", "bold"))
    for key, value in scores.items():
        print(f"  {key.rsplit('/', 1)[1]:<16s} {value:.4f}")
