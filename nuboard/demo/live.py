"""`nuboard demo --live`: one more llm-pretrain run that logs until it is stopped."""
from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path
from typing import Callable

from .curves import LanguageCurve, cosine_lr, throughput
from .language import TOKENS_PER_GPU
from .plan import LLM, lm_config
from .terminal import Bar, paint

LIVE_NAME = "live-lr3e-4"
LIVE_STEPS = 100_000           # the schedule's length: at 25 steps a second, an hour away
LIVE_LR = 3e-4


def run_live(root: "str | os.PathLike[str]", *, stop: threading.Event | None = None,
             tick: float = 0.2, steps_per_tick: int = 5, max_steps: int | None = None,
             progress: Callable[[str], None] = print) -> str:
    """Start the live run in root/llm-pretrain and log to it until stopped; return its id.

    It logs steps_per_tick steps every `tick` seconds until `stop` is set, SIGINT (Ctrl-C)
    or SIGTERM arrives (caught only when called from the main thread), or max_steps steps
    are logged; then it finishes the run (status finished).
    """
    import nuboard as nb
    stop = threading.Event() if stop is None else stop
    why: list[str] = []
    config = lm_config(LIVE_LR, 1, steps=LIVE_STEPS)
    main = threading.current_thread() is threading.main_thread()
    before = {}
    if main:
        before[signal.SIGINT] = signal.signal(signal.SIGINT, _stopper(stop, why))
    try:
        run = nb.init(LLM, run_name=LIVE_NAME, config=config, tags=["live"],
                      dir=Path(os.path.abspath(root)), system_interval=2.0, flush_interval=0.5,
                      notes="Started by 'nuboard demo --live': logs until it is stopped.")
        if main:   # after init, so that SIGTERM finishes the run here rather than as killed
            before[signal.SIGTERM] = signal.signal(signal.SIGTERM, _stopper(stop, why))
        with run:
            progress(f"Live run {LIVE_NAME} ({run.id}) is logging to {run.path}; "
                     "press Ctrl-C to stop it.")
            step = _stream(run, stop, tick, steps_per_tick, max_steps)
            reason = why[0] if why else "asked to stop"
            print(paint("stopped", "yellow") + f" at step {step} ({reason}); finishing the run")
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    return run.id


def _stopper(stop: threading.Event, why: list):
    def handler(signum, _frame):
        why.append(signal.Signals(signum).name)
        stop.set()
    return handler


def _stream(run, stop: threading.Event, tick: float, per_tick: int, max_steps: int | None) -> int:
    """Log until stopped; return the number of steps logged."""
    curve = LanguageCurve(cosine_lr(LIVE_LR, 200, LIVE_STEPS), peak=LIVE_LR, seed=42)
    rng = random.Random(42)
    tokens = run.config["data"]["batch_size"] * run.config["data"]["seq_len"]
    print(paint(f"==> {run.project}/{run.name}", "bold") + f"  run {run.id}  (live)")
    bar = Bar(LIVE_STEPS, "train", every=per_tick)
    step = 0
    while not stop.is_set() and (max_steps is None or step < max_steps):
        for _ in range(per_tick):
            point = curve.point(step)
            speed = throughput(TOKENS_PER_GPU, step, rng)
            run.log({**point, "train/tokens_per_s": speed, "train/tokens": float((step + 1) * tokens)},
                    step=step)
            if step % 50 == 0:
                bar.write(f"step {step:6d} | loss {point['train/loss']:.4f} | lr "
                          f"{point['train/lr']:.2e} | grad_norm {point['train/grad_norm']:.3f} | "
                          f"{speed / 1e3:.1f}k tok/s")
            if step and step % 200 == 0:
                with run.timer("eval"):
                    scores = curve.evaluate()
                run.log(scores, step=step)
                bar.write(paint("eval", "cyan") + f" step {step:6d} | loss "
                          f"{scores['eval/loss']:.4f} | accuracy {scores['eval/accuracy']:.4f}")
            step += 1
        bar.update(per_tick, loss=point["train/loss"], lr=point["train/lr"])
        stop.wait(tick)
    bar.close()
    return step
