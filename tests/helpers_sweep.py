"""A generated hyperparameter sweep of many runs, for the tests of the sweep views (parallel
coordinates, Scatter, Diff, grouped Charts) at the size a sweep analyst brings: config lr
(log-uniform), width, opt (adam, sgd, adamw) and seed; scalars train/loss (STEPS steps) and
val/acc (every VAL_EVERY steps).

nb.init and a run's finish cost about 30 ms here, so 2,000 runs written one by one would take a
minute. Instead the runs of one cell (opt, width and a half-decade band of lr) share one curve:
the first run of a cell is written by the real API, and every other run of the cell is a copy
of that folder (its event log, data.parquet and heartbeat, byte for byte) with its own run.json
(id, name, start and end, config) written by run.json's owner (files/runjson.create_run), as
scripts/bench_viewer.py's copy_runs does. Each run's own config is drawn at random; only its
scalars are its cell's. What a test expects is computed from the SweepRun list this returns.
"""
from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import NamedTuple

from helpers import QUIET

import nuboard as nb
from nuboard.files import layout
from nuboard.files.runjson import RUN_JSON, create_run, read_run

OPTS = ("adam", "sgd", "adamw")
WIDTHS = (128, 256, 512)
LR_LOW, LR_HIGH = 1e-5, 1e-1                    # lr is drawn log-uniform in this range
BANDS_PER_DECADE = 2                             # a cell's lr band: half a decade
STEPS = 20                                       # train/loss at steps 0 .. STEPS - 1
VAL_EVERY = 5                                    # val/acc at steps 4, 9, 14, 19
BEST_LR = {"adam": 1e-3, "adamw": 2e-3, "sgd": 3e-2}


class SweepRun(NamedTuple):
    """One run of the sweep: its id, name, config, its scalars' points ({name: [(step,
    value)]}, the same object for every run of its cell) and whether the API wrote it (else it
    is a copy of the run of its cell that the API wrote)."""
    id: str
    name: str
    config: dict
    points: dict
    written: bool


def band_of(lr: float) -> int:
    """lr's band: 0 for the lowest half-decade of the range."""
    return int((math.log10(lr) - math.log10(LR_LOW)) * BANDS_PER_DECADE)


def cell_points(opt: str, width: int, band: int) -> dict[str, list[tuple[int, float]]]:
    """The curves of a cell: quality peaks at the optimizer's best lr and grows with width;
    train/loss falls towards a floor that quality lowers, val/acc climbs towards quality."""
    centre = math.log10(LR_LOW) + (band + 0.5) / BANDS_PER_DECADE
    quality = math.exp(-((centre - math.log10(BEST_LR[opt])) / 1.1) ** 2)
    quality *= 0.8 + 0.1 * WIDTHS.index(width)
    loss = [(s, round(0.15 + 1.2 * (1 - quality) + 2.0 * math.exp(-s / (3 + 4 * quality)), 6))
            for s in range(STEPS)]
    acc = [(s, round(0.1 + 0.85 * quality * (1 - math.exp(-(s + 1) / 6)), 6))
           for s in range(VAL_EVERY - 1, STEPS, VAL_EVERY)]
    return {"train/loss": loss, "val/acc": acc}


def last(run: SweepRun, name: str) -> float:
    """The run's last value of a scalar (its summary's `last`)."""
    return run.points[name][-1][1]


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _copy_run(template: Path, folder: Path, blobs: dict[str, bytes], run_id: str, name: str,
              config: dict, began: dt.datetime) -> None:
    """A copy of the template run's folder with its own run.json."""
    doc = read_run(template)
    folder.mkdir()                                   # an id taken already: FileExistsError
    for file_name, data in blobs.items():
        (folder / file_name).write_bytes(data)
    doc.update(id=run_id, name=name, config=config, start_time=_stamp(began),
               end_time=_stamp(began + dt.timedelta(minutes=3, seconds=len(name))))
    for session in doc.get("sessions") or []:
        session["start_time"] = doc["start_time"]
    create_run(folder, doc)


def make_sweep(root: Path, project: str = "sweep", runs: int = 2000, seed: int = 33
               ) -> list[SweepRun]:
    """`runs` finished runs of a sweep in project `project` under root, named sweep-0000 on;
    configs drawn from a random.Random(seed). Returns them in the order written."""
    rnd = random.Random(seed)
    started = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    written: dict[tuple, tuple[Path, dict, dict[str, bytes]]] = {}
    out = []
    for i in range(runs):
        lr = 10 ** rnd.uniform(math.log10(LR_LOW), math.log10(LR_HIGH))
        config = {"lr": lr, "width": rnd.choice(WIDTHS), "opt": rnd.choice(OPTS), "seed": i}
        cell = (config["opt"], config["width"], band_of(lr))
        name = f"sweep-{i:04d}"
        if cell not in written:
            points = cell_points(*cell)
            with nb.init(project, dir=root, run_name=name, config=config, **QUIET) as run:
                for scalar, pairs in points.items():
                    for step, value in pairs:
                        run.add_scalar(scalar, value, step=step)
            folder = Path(run.path)
            blobs = {p.name: p.read_bytes() for p in folder.iterdir()
                     if p.is_file() and p.name != RUN_JSON and not p.name.startswith(".")}
            written[cell] = (folder, points, blobs)
            out.append(SweepRun(run.id, name, config, points, True))
            continue
        template, points, blobs = written[cell]
        run_id = f"{template.name.split('-')[0]}-{i:08x}"
        _copy_run(template, layout.run_dir(root, project, run_id), blobs, run_id, name, config,
                  started + dt.timedelta(minutes=7 * i))
        out.append(SweepRun(run_id, name, config, points, False))
    return out
