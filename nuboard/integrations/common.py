"""What the trainer integrations share: nb.init's arguments checked early, the run started with
the ranks torch.distributed knows, metric keys turned into scalar names, and numbers logged."""
from __future__ import annotations

import contextlib
import inspect
import numbers
import os
import sys
import warnings
from typing import Any, Iterator, Mapping

from nuboard.errors import InvalidNameError
from nuboard.eventlog.reader import own_prefixes
from nuboard.files.names import MAX_SCALAR_NAME, check_scalar_name, safe_scalar_name
from nuboard.recording.init_args import check_init_args
from nuboard.recording.ranks import detect_ranks
from nuboard.recording.run import Run
from nuboard.recording.start import init

KEPT_ON_RESUME = ("run_name", "config", "tags", "notes", "group", "run_id", "resume", "fork_from")
"""nb.init's arguments that a resumed session leaves out: the run keeps what it recorded."""


def init_arguments(project: str | None, **kwargs: Any) -> dict:
    """nb.init's keyword arguments, checked now as nb.init will check them (a typo or a bad
    value fails where the integration is made, not at the first step of training)."""
    bound = inspect.signature(init).bind(project, **kwargs)
    bound.apply_defaults()
    check_init_args(**bound.arguments)
    return dict(bound.arguments)


def resume_arguments(arguments: dict, run_id: str) -> dict:
    """nb.init's arguments for a new session of the finished run `run_id` (trainer.test() after
    trainer.fit(), trainer.evaluate() after trainer.train())."""
    kept = {k: v for k, v in arguments.items() if k not in KEPT_ON_RESUME}
    return {**kept, "run_id": run_id, "resume": "must"}


def start_run(arguments: dict) -> Run:
    """nb.init(**arguments), with RANK, LOCAL_RANK and WORLD_SIZE set for the call from
    torch.distributed where the launcher left them out (Lightning's own DDP launcher sets
    LOCAL_RANK, NODE_RANK and WORLD_SIZE only), so every rank joins one run."""
    with _ranks_from_torch():
        return init(**arguments)


@contextlib.contextmanager
def _ranks_from_torch() -> Iterator[None]:
    extra = _torch_ranks()
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _torch_ranks() -> dict[str, str]:
    """The rank variables nb.init should see: {} where it already detects torch.distributed's
    rank and world size (torchrun, SLURM, Open MPI) or where torch.distributed is not running."""
    dist = sys.modules.get("torch.distributed")      # never imported for this
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return {}
    rank, size = dist.get_rank(), dist.get_world_size()
    found = detect_ranks()
    if size <= 1 or (found.rank, found.world_size) == (rank, size):
        return {}
    return {"RANK": str(rank), "LOCAL_RANK": os.environ.get("LOCAL_RANK", str(rank)),
            "WORLD_SIZE": str(size)}


def scalar_name(key: object, reserved: frozenset[str] = frozenset()) -> str:
    """A trainer's metric key as a NuBoard scalar name, the same every time; a name NuBoard
    takes is kept.

    As the importers map names (files.names.safe_scalar_name: control characters to '_', empty
    segments dropped, a long name cut and ended by a hash); a first segment the run reserves
    gets a '_' ('system/cpu' is 'system_/cpu').
    """
    text = key if isinstance(key, str) else str(key)
    try:
        return check_scalar_name(text, reserved)
    except InvalidNameError:
        pass
    name = safe_scalar_name(text)
    head, sep, rest = name.partition("/")
    if head not in reserved:
        return name
    while head in reserved:
        head += "_"
    return safe_scalar_name(head + sep + rest)


def is_number(value: object) -> bool:
    """A real number, or a one-element tensor or array: what run.add_scalar takes."""
    if isinstance(value, numbers.Real):
        return True
    size = getattr(value, "numel", None) or getattr(value, "size", None)
    try:
        count = size() if callable(size) else size
    except TypeError:
        return False
    return count == 1 and hasattr(value, "item") and isinstance(value.item(), numbers.Real)


class MetricLog:
    """Logs a trainer's metric dicts into one run: keys mapped by scalar_name (a key that had to
    change is named once in a warning; a key whose name an earlier key of the run already has
    gets '~2', '~3', ...), values that are no numbers left out with a warning."""

    def __init__(self, run: Run, who: str, earlier: "MetricLog | None" = None):
        """earlier: the log of the run's previous session in this process, whose names go on."""
        self.run = run
        self.who = who
        self._reserved = own_prefixes(run.folder)
        self._names: dict[str, str] = dict(earlier._names) if earlier else {}   # key -> scalar name
        self._taken: set[str] = set(earlier._taken) if earlier else set()      # the names given
        self._warned: set[str] = set(earlier._warned) if earlier else set()

    def name(self, key: str) -> str:
        name = self._names.get(key)
        if name is None:
            name = base = scalar_name(key, self._reserved)
            n = 1
            while name in self._taken:        # an earlier key has that name: never merge two
                n += 1
                name = f"{base[:MAX_SCALAR_NAME - len(str(n)) - 1]}~{n}"
            self._names[key] = name
            self._taken.add(name)
            if name != key:
                warnings.warn(f"{self.who}: metric {key!r} is logged as {name!r}, a name NuBoard "
                              "takes (see docs/integrations.md).", RuntimeWarning, stacklevel=4)
        return name

    def log(self, metrics: Mapping[str, Any], step: int | None) -> None:
        """Log the numbers of `metrics` at `step` (None: one past the latest step)."""
        values = {}
        for key, value in metrics.items():
            if is_number(value):
                values[self.name(key)] = value
            else:
                self._skip(key, f"its value {value!r:.60} is not a number")
        if not values:
            return
        try:
            self.run.log(values, step=step)
        except (TypeError, ValueError):      # one value out of range: log the others
            for name, value in values.items():
                try:
                    self.run.add_scalar(name, value, step=step)
                except (TypeError, ValueError) as exc:
                    self._skip(name, str(exc))

    def _skip(self, key: str, why: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"{self.who}: metric {key!r} is not logged: {why}.", RuntimeWarning,
                          stacklevel=4)
