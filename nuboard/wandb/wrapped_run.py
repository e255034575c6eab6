"""The run that wandb.init returns: W&B's run surface (log, config, summary, define_metric,
alert, finish, id, name, dir, project, url) over a NuBoard Run, or over nothing for
mode="disabled" (every call accepted, nothing written)."""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.files import layout, runjson

from .run_config import Config
from .run_summary import AGGREGATES, Summary, matches
from .unsupported import unsupported

ALERT_LEVELS = ("INFO", "WARN", "ERROR")
MAX_ALERTS = 1000               # kept in run.json; the oldest go first
MAX_ALERT_TEXT = 10_000


class AlertWarning(UserWarning):
    """The warning wandb.alert gives."""


class WandbRun:
    """A run as W&B's scripts use it. `nb_run` is the NuBoard Run (None: disabled)."""

    def __init__(self, nb_run: Any, *, mode: str, project: str, doc: dict, start_step: int,
                 resumed: bool = False) -> None:
        self._run = nb_run
        self._mode = mode
        self._project = project
        self._step = start_step
        self._pending: dict = {}
        self._last: dict = {}              # the last value logged of each step metric
        metrics = doc.get("metrics") if isinstance(doc.get("metrics"), dict) else {}
        self._metrics: dict = {k: m for k, m in metrics.items() if isinstance(m, dict)}
        self._metrics_changed()
        self._finished = False
        self._id = doc.get("id")
        self._name = doc.get("name")
        self.resumed = resumed
        live = nb_run is not None
        self.config = Config(dict(doc.get("config") or {}), self._save_config if live else None)
        summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
        self.summary = Summary(summary, self._save_summary if live else None)
        self._disabled_dir: str | None = None

    # -- what W&B's run shows ------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._id

    @property
    def name(self) -> str:
        return self._run.name if self._run is not None else self._name

    @name.setter
    def name(self, value: str) -> None:
        from nuboard.recording.init_args import check_shown_label
        value = check_shown_label(value, "run.name")
        self._name = value
        self._record(lambda doc: doc.__setitem__("name", value))

    @property
    def tags(self) -> tuple:
        return tuple(self._run.tags) if self._run is not None else ()

    @tags.setter
    def tags(self, value: Any) -> None:
        from nuboard.files.names import check_tags
        tags = check_tags(list(value))
        self._record(lambda doc: doc.__setitem__("tags", tags))

    @property
    def notes(self) -> str | None:
        return self._run.notes if self._run is not None else None

    @notes.setter
    def notes(self, value: str) -> None:
        from nuboard.files.names import MAX_NOTES, check_label
        value = check_label(value, "run.notes", MAX_NOTES)
        self._record(lambda doc: doc.__setitem__("notes", value))

    @property
    def group(self) -> str | None:
        return self._run.group if self._run is not None else None

    @property
    def project(self) -> str:
        return self._project

    @property
    def entity(self) -> None:
        """W&B's team or user: there is none here (runs are local files)."""
        return None

    @property
    def path(self) -> str:
        return f"{self._project}/{self._id}"

    @property
    def dir(self) -> str:
        """Where the script's own files go: the run's files/ folder (shown under Files); for a
        disabled run, a temporary folder of its own."""
        if self._run is None:
            if self._disabled_dir is None:
                import tempfile
                self._disabled_dir = tempfile.mkdtemp(prefix="nuboard-wandb-disabled-")
            return self._disabled_dir
        folder = self._run.folder / layout.FILES
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    @property
    def url(self) -> str | None:
        """The run's folder (there is no web address until `nuboard up` serves it); None when
        disabled."""
        return str(self._run.folder) if self._run is not None else None

    @property
    def step(self) -> int:
        return self._step

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def disabled(self) -> bool:
        return self._run is None

    @property
    def offline(self) -> bool:
        return self._mode == "offline"

    @property
    def nuboard_run(self) -> Any:
        """The NuBoard Run underneath (None when disabled): add_scalar, timers, artifacts."""
        return self._run

    def __repr__(self) -> str:
        return f"<nuboard.wandb run {self.path} name={self.name!r} mode={self._mode}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"run.{name}", name)

    # -- logging -------------------------------------------------------------------------------
    def log(self, data: Mapping, step: int | None = None, commit: bool | None = None,
            sync: Any = None) -> None:
        """W&B's log: without step, the run's own step, which moves on after each commit;
        commit=False adds to the same step; a step below the current one is ignored with a
        warning, as W&B does; a larger one first commits what was pending."""
        self._check_open("log")
        if not isinstance(data, Mapping):
            raise InvalidTypeError(f"wandb.log takes a dict of name to value, not "
                                   f"{type(data).__name__} ({data!r:.80})")
        if step is not None:
            if isinstance(step, bool) or not hasattr(step, "__index__") or step.__index__() < 0:
                raise InvalidArgumentError(f"wandb.log: step {step!r:.60} must be an int from 0")
            step = step.__index__()
            if step < self._step:
                warnings.warn(f"nuboard.wandb: step {step} is below the current step "
                              f"{self._step}: steps only go up, so this data is ignored (as W&B "
                              "does).", RuntimeWarning, stacklevel=3)
                return
            if step > self._step:
                self._commit()
                self._step = step
            commit = False if commit is None else commit
        elif commit is None:
            commit = True
        row = {key: _media(key, value) for key, value in _flatten(data).items() if value is not None}
        row = {key: value for key, value in row.items() if value is not None}
        self._pending.update(row)          # checked first: a call that raises adds nothing
        if commit:
            self._commit()
            self._step += 1

    def _commit(self) -> None:
        """Write the pending row at the current step; the summary follows it."""
        row, self._pending = self._pending, {}
        if not row:
            return
        self._sync_step_metrics(row)
        out = row
        if self._run is not None:
            self._run.log(out, step=self._step)
        from nuboard.media import Media
        for key, value in out.items():
            if isinstance(value, Media):
                continue
            if key in self._step_metrics:
                self._last[key] = value
            metric = self._metric_of(key)
            modes = tuple(metric["summary"].split(",")) if metric and metric.get("summary") else None
            self.summary.observe(key, value, modes, metric.get("goal") if metric else None)

    def _sync_step_metrics(self, row: dict) -> None:
        """A key whose defined metric has a step metric gets that metric's last value beside
        it when the row lacks it (W&B's step_sync), so a chart can draw it against that x."""
        for key in list(row):
            metric = self._metric_of(key)
            x = metric.get("step_metric") if metric else None
            if x and x not in row and x in self._last and metric.get("step_sync", True) is not False:
                row[x] = self._last[x]

    def _metric_of(self, key: str) -> dict | None:
        """The definition that covers a key: its own, else the first glob that matches it."""
        if not self._metrics:
            return None
        try:
            return self._metric_cache[key]
        except KeyError:
            pass
        found = self._metrics.get(key)
        if found is None:
            found = next((m for pattern, m in self._metrics.items() if matches(pattern, key)), None)
        self._metric_cache[key] = found
        return found

    def _metrics_changed(self) -> None:
        self._metric_cache: dict = {}
        self._step_metrics = {m["step_metric"] for m in self._metrics.values()
                              if isinstance(m, dict) and isinstance(m.get("step_metric"), str)}

    def define_metric(self, name: str, step_metric: str | None = None, step_sync: bool | None = None,
                      hidden: bool | None = None, summary: str | None = None,
                      goal: str | None = None, overwrite: bool | None = None) -> dict:
        """Record a metric's definition in run.json's `metrics`: its step_metric (the scalar a
        chart of it takes as its x axis: Charts' x=scalar:NAME), its summary (aggregates of
        run.summary: 'min', 'max', 'mean', 'first', 'last', 'best', 'none', comma-separated)
        and goal ('minimize' or 'maximize', for 'best')."""
        self._check_open("define_metric")
        if not isinstance(name, str) or not name:
            raise InvalidTypeError(f"define_metric: name must be a non-empty str, not {name!r:.60}")
        if step_metric is not None and not isinstance(step_metric, str):
            raise InvalidTypeError(f"define_metric: step_metric must be a str, not {step_metric!r:.60}")
        if summary is not None:
            modes = [m.strip() for m in str(summary).split(",") if m.strip()]
            bad = [m for m in modes if m not in AGGREGATES]
            if bad:
                raise InvalidArgumentError(f"define_metric: summary {bad[0]!r} is not one of "
                                           f"{', '.join(AGGREGATES)}")
            summary = ",".join(modes)
        if goal is not None and goal not in ("minimize", "maximize"):
            raise InvalidArgumentError(f"define_metric: goal {goal!r:.40} is not 'minimize' or 'maximize'")
        entry = {k: v for k, v in (("step_metric", step_metric), ("step_sync", step_sync),
                                   ("hidden", hidden), ("summary", summary), ("goal", goal))
                 if v is not None}
        if overwrite is False and name in self._metrics:
            entry = {**entry, **self._metrics[name]}
        self._metrics[name] = entry
        self._metrics_changed()
        metrics = dict(self._metrics)
        self._record(lambda doc: doc.__setitem__("metrics", metrics))
        return dict(entry, name=name)

    def alert(self, title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
        """A Python warning now, and a record {time, level, title, text} appended to run.json's
        `alerts`, which the run page lists."""
        self._check_open("alert")
        level = getattr(level, "value", level) or "INFO"
        if level not in ALERT_LEVELS:
            raise InvalidArgumentError(f"wandb.alert: level {level!r:.40} is not one of "
                                       f"{', '.join(ALERT_LEVELS)}")
        for what, value in (("title", title), ("text", text)):
            if not isinstance(value, str):
                raise InvalidTypeError(f"wandb.alert: {what} must be a str, not {type(value).__name__}")
        title, text = title[:MAX_ALERT_TEXT], text[:MAX_ALERT_TEXT]
        warnings.warn(f"wandb.alert [{level}] {title}: {text}", AlertWarning, stacklevel=3)
        record = {"time": runjson.now_iso(), "level": level, "title": title, "text": text}

        def append(doc: dict) -> None:
            alerts = doc.get("alerts") if isinstance(doc.get("alerts"), list) else []
            doc["alerts"] = (alerts + [record])[-MAX_ALERTS:]
        self._record(append)

    # -- finishing -----------------------------------------------------------------------------
    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Commit the pending row, write the summary, and finish: 'finished', or 'crashed'
        for a non-zero exit_code. Calling it again does nothing."""
        if self._finished:
            return
        self._flush_end()
        self._finished = True
        if self._run is not None:
            self._run.finish("finished" if not exit_code else "crashed")
        from . import _forget
        _forget(self)

    def _flush_end(self) -> None:
        """What finish and the exit hook write before NuBoard finishes the run."""
        if self._finished:
            return
        self._commit()
        if self._run is not None and not self._run._finished:
            self.summary.save()

    def __enter__(self) -> "WandbRun":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        failed = exc_type is not None and not (exc_type is SystemExit and exc.code in (0, None))
        if failed and self._run is not None:
            self._flush_end()
            self._finished = True
            self._run.__exit__(exc_type, exc, tb)        # crashed, with its exception
            from . import _forget
            _forget(self)
            return
        self.finish(1 if failed else 0)

    # -- run.json --------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self._finished:
            from nuboard.errors import RunFinishedError
            raise RunFinishedError(f"run {self._id!r} is finished: call {what} before finish(), "
                                   "or start another run with wandb.init().")

    def _record(self, fn) -> None:
        if self._run is not None:
            self._run.update_record(fn)

    def _save_config(self, data: dict) -> None:
        self._record(lambda doc: doc.__setitem__("config", data))

    def _save_summary(self, data: dict) -> None:
        self._record(lambda doc: doc.__setitem__("summary", data))


def _flatten(data: Mapping, prefix: str = "") -> dict:
    """A log dict with nested dicts flattened by '/' ({'val': {'loss': 1}} is 'val/loss'), and a
    list of media objects as one key per item ('samples/0', 'samples/1', ...)."""
    out: dict = {}
    for key, value in data.items():
        if not isinstance(key, str):
            raise InvalidTypeError(f"wandb.log: keys are str, not {type(key).__name__} ({key!r:.60})")
        name = f"{prefix}/{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(_flatten(value, name))
        elif isinstance(value, (list, tuple)) and value and all(_is_media(v) for v in value):
            for i, item in enumerate(value):
                out[f"{name}/{i}"] = item
        else:
            out[name] = value
    return out


def _is_media(value: Any) -> bool:
    from nuboard.media import Media

    from .media import Table
    return isinstance(value, (Media, Table))


def _media(key: str, value: Any) -> Any:
    """A value as nb's run.log takes it: a number, a str (text) or an nb media object."""
    from nuboard.media import Media
    if isinstance(value, (str, Media)):
        return value
    from .media import Table
    if isinstance(value, Table):
        return value.to_media()
    if isinstance(value, (list, tuple, set)) or hasattr(value, "ndim") and getattr(value, "ndim", 0) > 0:
        from nuboard.media.histogram import Histogram  # as W&B does with many numbers
        try:
            return Histogram(list(value) if isinstance(value, set) else value)
        except (TypeError, ValueError) as exc:
            return _skipped(key, value, f"many values that are not numbers ({exc})")
    if type(value) is float or type(value) is int:
        return value
    from nuboard.eventlog.points import as_value
    try:
        return as_value(value, key)  # a number (numpy, a one-element tensor)
    except (TypeError, ValueError) as exc:
        return _skipped(key, value, str(exc))


def _skipped(key: str, value: Any, why: str) -> None:
    """A value NuBoard cannot log (a datetime, an object): one warning, and the rest of the row
    is logged, so a script that runs under W&B does not stop here."""
    warnings.warn(f"wandb.log: {key!r} ({type(value).__name__}) is not logged: {why}",
                  RuntimeWarning, stacklevel=4)
    return None


def earlier_last_step(nb_run: Any) -> int:
    """The step a resumed run's next row takes: one past the largest step of earlier sessions."""
    if nb_run is None or nb_run.session == 0:
        return 0
    try:
        last = nb_run._earlier_last_steps()
    except OSError:
        return 0
    return max(last.values(), default=-1) + 1
