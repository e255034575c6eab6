"""One demo run in its own process, as a training script would run it.

    python -m nuboard.demo.job llm-pretrain/lr1e-3-s1 --dir experiments
    python -m nuboard.demo.job llm-pretrain/lr6e-4-long --dir experiments --resume <run_id>
    python -m nuboard.demo.job datasets --dir experiments     # fineweb-edu v1, imagenet-100 v1

The demo starts it through replay.py, on the run's replay clock (clock.py), whose time starts
to pass at the first step (language.Pace) and stops after the last.

The run's id is written, as JSON, to the file $NUBOARD_DEMO_RESULT names (when set), as soon
as the run has started, so the demo can resume or fork it. A run whose story ends in a crash
exits 1; one that is preempted dies of SIGTERM; one that is lost dies of SIGKILL.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

RESULT_VAR = "NUBOARD_DEMO_RESULT"
DATASETS_KEY = "datasets"
SYSTEM_INTERVAL = 0.1        # seconds: a run of about a second gets a handful of samples
FLUSH_INTERVAL = 0.2


def parse_args(argv: "list[str] | None") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m nuboard.demo.job",
                                     description="Run one run of the NuBoard demo.")
    parser.add_argument("key", help="the run, as project/name (see nuboard/demo/plan.py)")
    parser.add_argument("--dir", required=True, help="the experiments folder")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue this run (a new session)")
    parser.add_argument("--fork-from", metavar="RUN_ID", help="fork this run at the plan's step")
    return parser.parse_args(argv)


def report_start(run) -> None:
    """Tell the demo which run this process writes (rank 0 only)."""
    target = os.environ.get(RESULT_VAR)
    if target and run.rank == 0:
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"run_id": run.id, "project": run.project}, fh)
        os.replace(tmp, target)


def main(argv: "list[str] | None" = None) -> int:
    """Start the run the key names, play its story, finish it."""
    args = parse_args(argv)
    import nuboard as nb

    from . import clock
    if args.key == DATASETS_KEY:
        from .datasets import add_datasets
        clock.start()
        add_datasets(Path(args.dir))
        return 0
    from .data import data_dir
    from .plan import run_spec
    from .terminal import paint
    spec = run_spec(args.key)
    root = Path(args.dir)
    options = dict(run_name=spec.name, config=spec.config, tags=list(spec.tags), group=spec.group,
                   notes=spec.notes, dir=root, code_dir=data_dir(root),
                   system_interval=SYSTEM_INTERVAL, flush_interval=FLUSH_INTERVAL)
    if args.resume:
        options.update(run_id=args.resume, resume="must")
    if args.fork_from:
        options["fork_from"] = (args.fork_from, spec.fork_step)
    loop = _loop(spec.kind)
    with nb.init(spec.project, **options) as run:
        report_start(run)
        try:
            loop(run, spec, resumed=bool(args.resume))
            clock.pause()
        except Exception:
            clock.pause()          # the crash is marked at the step it happened
            print("\n" + paint("ERROR", "bold", "red") + " training failed:", file=sys.stderr)
            raise
    return 0


def _loop(kind: str):
    if kind == "vit":
        from .vision import train_classifier
        return train_classifier
    if kind == "eval":
        from .evaluation import evaluate_mmlu
        return evaluate_mmlu
    from .language import prepare_data, train_language_model
    return prepare_data if kind == "prepare" else train_language_model


if __name__ == "__main__":
    sys.exit(main())
