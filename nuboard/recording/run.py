"""The Run: logging scalars, artifacts and timers, and finishing (process_hooks: what happens
at exit, on SIGTERM and after fork())."""
from __future__ import annotations

import itertools
import os
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError, RunFinishedError
from nuboard.eventlog.points import MAX_STEP, as_step, as_value, as_values, as_wall, step_error
from nuboard.eventlog.writer import SERIES_CAP, EventWriter, Group, ScalarBuffer
from nuboard.files import layout, runjson  # runjson now: a SIGTERM handler must not import
from nuboard.files.names import check_scalar_name
from nuboard.files.sigterm import defer_sigterm
from nuboard.media import Media

from . import process_hooks
from .media_queue import MediaQueue
from .process_hooks import note_cuda_device

if TYPE_CHECKING:
    from nuboard.artifacts import Artifact

    from .timer import Timer

STATUSES = ("finished", "crashed", "killed", "failed")
MAX_GROUPS = 64              # dict shapes of run.log with a buffer of their own
_time = time.time


class Run:
    """A run being recorded. Made by nb.init; see its docstring for the parameters.

    Attributes:
        id: the run id, which is also its folder name.
        path: the run's folder, <dir>/<project>/runs/<id>.
        name, project, config, tags, notes, group: as given to nb.init (or kept on resume).
        rank, session: this process's rank and session number (events.r<rank>.s<session>.log).
        step: the step of the latest point logged by this process (-1 before the first).
    """

    def __init__(self, *, path: Path, doc: dict, rank: int, session: int, reserved: tuple,
                 last_steps: "dict[str, int] | None", flush_interval: float,
                 heartbeat, compact: bool, meta: dict, timing_all_ranks: bool = False,
                 start_step: int | None = None):
        self.path = path
        self._abs = Path(os.path.abspath(path))
        self._doc = doc
        self.id: str = doc["id"]
        self.project: str = doc["project"]
        self.rank = rank
        self.session = session
        self.step = -1
        self._reserved = reserved
        self._last_steps = last_steps        # earlier sessions' last steps, read lazily
        self._start_step = start_step        # own scalars' step before the first point
        self._compact = compact
        self._prefixes = dict(doc["prefixes"])
        self._timing_all_ranks = timing_all_ranks
        self._services: list = []             # the sampler and the console copy, stopped at finish
        self._sync = None                     # sync_thread.RunSync of sync_to, closed last
        self._all: dict[str, ScalarBuffer] = {}     # every scalar's buffer: what the writer drains
        self._series: Any = {}                # the user's scalars that no Group holds
        self._own: dict[str, ScalarBuffer] = {}     # the run's own scalars (system/..., timing/...)
        self._groups: Any = {}                # run.log's dict shapes: tuple of names -> Group
        self._ungrouped: set[tuple] = set()   # shapes logged scalar by scalar from now on
        self._key_ids = itertools.count()     # next() is atomic: the sampler thread opens series too
        self._open_lock = threading.Lock()
        self._read_lock = threading.Lock()      # one read of the earlier sessions
        self._pid = os.getpid()
        self._finished = False
        self._finish_lock = threading.RLock()
        log = self._abs / layout.log_name(rank, session)
        self._writer = EventWriter(log, self._all, meta, flush_interval, heartbeat, self._groups)
        self._media = MediaQueue(self._abs, self._writer)
        self._media_steps: dict[str, int] = {}     # each media key's last step
        process_hooks.live.add(self)
        process_hooks.install_hooks()
        note_cuda_device()

    # -- what nb.init recorded ------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._doc["name"]

    @property
    def config(self) -> dict:
        return self._doc["config"]

    @property
    def tags(self) -> list:
        return list(self._doc["tags"])

    @property
    def notes(self) -> str | None:
        return self._doc["notes"]

    @property
    def group(self) -> str | None:
        return self._doc["group"]

    @property
    def status(self) -> str:
        return self._doc["status"]

    @property
    def folder(self) -> Path:
        """The run's folder as an absolute path (`path` is as nb.init was given it)."""
        return self._abs

    def update_record(self, fn) -> dict:
        """Apply fn to run.json in place under the run's lock and write it (runjson.update_run);
        where run.json cannot be read, fn gets the copy this process holds. The result is that
        copy from now on; returns it. fn returning False writes nothing. Raises OSError."""
        self._doc = runjson.update_run(self._abs, fn, fallback=self._doc)
        return self._doc

    @property
    def dropped_points(self) -> int:
        """Points that could not be written (a full disk, a vanished folder)."""
        return self._writer.dropped_points

    @property
    def dropped_media(self) -> int:
        """Media entries that could not be stored (a full disk, a vanished folder)."""
        return self._media.dropped

    def __repr__(self) -> str:
        return f"<nuboard.Run {self.project}/{self.id} name={self.name!r} status={self.status}>"

    def _repr_html_(self) -> str:
        """The run in a notebook: status, config, each scalar's last value, a link to its page
        in the viewer nb.show started (nuboard/notebook.py)."""
        from nuboard.notebook import run_html
        if not self._finished:
            self.flush()
        return run_html(project=self.project, run_id=self.id, name=self.name, status=self.status,
                        config=self.config, folder=self._abs)

    # -- logging --------------------------------------------------------------------------
    def add_scalar(self, name: str, value: float, step: int | None = None,
                   wall_time: float | None = None) -> None:
        """Log one point of a scalar.

        Args:
            name: '/'-separated segments, such as 'train/loss'; the run's system and timing
                prefixes are reserved for its own scalars.
            value: a real number (int, float, bool, a numpy scalar, a one-element tensor);
                NaN and infinities are kept.
            step: an int from 0 to 2**63-1. None logs at one past this scalar's last step in
                the run (0 for its first point; a resumed run goes on after the earlier sessions).
            wall_time: seconds since the epoch, a finite number; None takes time.time().

        The call appends to a buffer and returns; a background thread writes it every
        flush_interval seconds. When the disk cannot keep up and a scalar's buffer holds
        262,144 points, the call waits for the writer rather than losing points. A call that
        raises logs nothing and changes nothing.

        Raises:
            ValueError: a bad name, a step out of 0..2**63-1, a value out of the float range,
                a wall_time that is not finite.
            TypeError: a value that is not a real number, a step that is not an int, a
                wall_time that is not a number.
        """
        try:
            s = self._series.get(name)
        except TypeError:                   # an unhashable name: _open_series says why
            s = None
        if s is None:
            s = self._open_series(name)
        if type(value) is not float:
            value = as_value(value, name)
        if step is None:
            step = s.last_step + 1
        elif type(step) is not int or step < 0:
            step = as_step(step, name)
        if wall_time is None:
            wall_time = _time()
        elif type(wall_time) is not float or wall_time - wall_time != 0.0:   # inf and NaN too
            wall_time = as_wall(wall_time, name)
        try:
            s.steps.append(step)            # the first change: a step past 2**63-1 stops here
        except OverflowError:
            raise step_error(step, name) from None
        s.walls.append(wall_time)
        s.values.append(value)
        s.last_step = step
        self.step = step
        if len(s.values) >= SERIES_CAP:
            self._writer.wait_for_room(s.steps)

    def log(self, values: Mapping, step: int | None = None) -> None:
        """Log several scalars at one step: run.log({'train/loss': 0.3, 'lr': 1e-3}).

        step=None puts every point at one past the largest last step of the scalars named
        (0 when none was logged before), so the dict's scalars share a step. Every name and
        value is checked before anything is logged; a call that raises changes nothing.

        A dict whose names come again in the same order costs one step, one wall time and
        one C call for its values (its shape's Group); other calls go scalar by scalar.
        """
        if type(values) is dict:
            g = self._groups.get(tuple(values))
            if g is not None:
                try:
                    row = g.pack(*values.values())
                except Exception:           # the checks of add_scalar, with their messages
                    if any(isinstance(v, (str, Media)) for v in values.values()):
                        return self._log_each(values, step)     # it says which name is a scalar
                    row = g.pack(*as_values(values))
                if step is None:
                    step = g.last_step + 1
                elif type(step) is not int or step < 0:
                    step = as_step(step, "run.log")
                steps = g.steps
                try:
                    steps.append(step)      # the first change: a step past 2**63-1 stops here
                except OverflowError:
                    raise step_error(step, "run.log") from None
                g.walls.append(_time())
                g.values.frombytes(row)     # last: the writer counts rows by the values
                g.last_step = step
                self.step = step
                if len(steps) >= SERIES_CAP:
                    self._writer.wait_for_room(steps)
                return
        self._log_each(values, step)

    def _log_each(self, values: Mapping, step: int | None) -> None:
        """run.log of a shape that no Group holds: check everything, then log the points into
        a new Group for the shape, or scalar by scalar."""
        if not isinstance(values, Mapping):
            raise InvalidTypeError(
                f"run.log takes a dict of name to value, not {type(values).__name__} ({values!r:.80}).")
        ungrouped_before = len(self._ungrouped)
        items = []
        media = []
        for name, value in values.items():
            if isinstance(value, (str, Media)):
                media.append((self._media_key(name, "run.log"), _as_media(value)))
                continue
            try:
                s = self._series.get(name)
            except TypeError:
                s = None
            if s is None:
                s = self._open_series(name)
            items.append((s, value if type(value) is float else as_value(value, name)))
        if step is None:
            step = max([s.last_step for s, _ in items] + [self._media_last(k) for k, _ in media],
                       default=-1) + 1
            if step > MAX_STEP:
                raise step_error(step, "run.log")
        elif type(step) is not int or not 0 <= step <= MAX_STEP:
            step = as_step(step, "run.log")
        if media:
            self._put_media(media, step, _time())
        if not items:
            return
        keys = tuple(values) if type(values) is dict and type(self._series) is dict and not media else None
        if keys is not None and len(self._ungrouped) != ungrouped_before:
            self._ungrouped.add(keys)       # it took a scalar from another shape: stay apart
        if keys is not None and keys not in self._ungrouped and len(self._groups) < MAX_GROUPS:
            g = self._writer.form_group(keys, [s for s, _ in items])
            for s, _ in items:
                self._series.pop(s.name, None)
            g.steps.append(step)
            g.walls.append(_time())
            g.values.frombytes(g.pack(*[v for _, v in items]))
            g.last_step = step
        else:
            now = _time()
            for s, value in items:
                s.steps.append(step)
                s.walls.append(now)
                s.values.append(value)
                s.last_step = step
                if len(s.values) >= SERIES_CAP:
                    self._writer.wait_for_room(s.steps)
        self.step = step

    # -- media --------------------------------------------------------------------------------
    def add_media(self, key: str, media: "Media | str", step: int | None = None,
                  wall_time: float | None = None) -> None:
        """Log one media entry: an nb.Image, nb.Histogram, nb.Text, nb.Table or nb.Audio, or a
        str (text), at `step` (None: one past the key's last step) and `wall_time` (None: now).

        The entry is stored by a background thread (encoded, written whole as a file under
        media/, then named in the event log); flush() and finish() wait for it.

        Raises:
            ValueError: a bad key (the scalar naming rule), a key this run logs scalars under,
                a bad step or wall time.
            TypeError: a value that is not a media object or a str.
        """
        key = self._media_key(key, "add_media")
        if not isinstance(media, (str, Media)):
            raise InvalidTypeError(
                f"add_media {key!r}: a {type(media).__name__} is not a media object: give an "
                "nb.Image, nb.Histogram, nb.Text, nb.Table, nb.Audio or a str.")
        if step is None:
            step = self._media_last(key) + 1
        elif type(step) is not int or not 0 <= step <= MAX_STEP:
            step = as_step(step, key)
        wall = _time() if wall_time is None else as_wall(wall_time, key)
        self._put_media([(key, _as_media(media))], step, wall)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW",
                  caption: str | None = None) -> None:
        """TensorBoard's add_image: an array or tensor in `dataformats` order (CHW by default,
        as TensorBoard), a PIL image, PNG/JPEG bytes, a path or an nb.Image."""
        from nuboard.media.image import Image
        image = img_tensor if isinstance(img_tensor, Image) else Image(img_tensor, caption,
                                                                       dataformats=dataformats)
        self.add_media(tag, image, global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: "int | str" = 64, walltime: float | None = None) -> None:
        """TensorBoard's add_histogram: the values' histogram in `bins` equal bins (64; the
        str "tensorflow", TensorBoard's default, means 64 here), or an nb.Histogram."""
        from nuboard.media.histogram import Histogram
        if isinstance(bins, str) and bins == "tensorflow":
            bins = 64
        hist = values if isinstance(values, Histogram) else Histogram(values, bins)
        self.add_media(tag, hist, global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """TensorBoard's add_text: one text entry."""
        from nuboard.media.text import from_value
        self.add_media(tag, from_value(text_string), global_step, walltime)

    def _media_key(self, name: object, who: str) -> str:
        """A media key checked: the scalar naming rule, and not a scalar of this run."""
        if isinstance(self._series, _Closed):
            self._series.get(name)                  # raises RunFinishedError
        if name in self._media_steps:
            return name                             # type: ignore[return-value]
        check_scalar_name(name, self._reserved)
        if name in self._all:
            raise InvalidArgumentError(
                f"{who}: {name!r} is a scalar of this run: a media entry needs a name of its own "
                f"(such as {name + '/media'!r}).")
        return name                                 # type: ignore[return-value]

    def _media_last(self, key: str) -> int:
        """The key's last step: this session's, else the earlier sessions' (-1 for none)."""
        last = self._media_steps.get(key)
        if last is None:
            last = self._earlier_last_steps().get(key, -1) if self.session > 0 else -1
        return last

    def _put_media(self, entries: list, step: int, wall: float) -> None:
        """Queue checked media entries at one step (the forked child's run drops them)."""
        if isinstance(self._series, _ForkedChild):
            self._series.get("media")
            return
        for key, media in entries:
            self._media.put(key, media, step, wall)
            self._media_steps[key] = step
        self.step = step

    def _open_series(self, name: str, internal: bool = False) -> ScalarBuffer:
        """Check a new scalar name and give it a key id and a buffer. A scalar that a Group
        holds goes back to its own buffer, with the group's other scalars."""
        if not isinstance(self._series, dict):      # finished, or a forked child
            return self._series.get(name)
        check_scalar_name(name, () if internal else self._reserved)
        if name in self._media_steps:
            raise InvalidArgumentError(
                f"scalar {name!r} is a media key of this run: a scalar needs a name of its own.")
        if not internal:
            note_cuda_device()
        s = self._all.get(name)
        if s is not None and s.group is not None:
            self._release(s.group)
            return s
        with defer_sigterm, self._open_lock:
            s = self._all.get(name)
            if s is None:
                last = -1
                if self.session > 0 and not internal:
                    last = self._earlier_last_steps().get(name, -1)
                s = ScalarBuffer(next(self._key_ids), name, last)
                self._all[name] = s
            (self._own if internal else self._series)[name] = s
        return s

    def _release(self, group: Group) -> None:
        """Log a Group's scalars one by one from now on: another call named one of them."""
        self._writer.release_group(group)
        self._ungrouped.add(group.keys)
        for s in group.series:
            self._series[s.name] = s

    def _log_own(self, values: "dict[str, float]", step: int | None = None) -> None:
        """Log the run's own scalars (system/..., timing/...) at `step` or the current step.

        For the sampler and timers, from any thread; names are full names under the
        reserved prefixes, values floats. Before this session's first point, the current
        step is the step the run reached (see _own_start).
        """
        if isinstance(self._series, (_Closed, _ForkedChild)):
            return
        if step is None:
            step = self.step if self.step >= 0 else self._own_start()
        own = self._own
        now = _time()
        for name, value in values.items():
            s = own.get(name) or self._open_series(name, internal=True)
            value = float(value)
            s.steps.append(step)
            s.walls.append(now)
            s.values.append(value)
            s.last_step = step

    def _own_start(self) -> int:
        """The step of the run's own points before this session logs one: the largest last
        step of the earlier sessions of this rank, the fork step of a fork, else 0."""
        start = self._start_step
        if start is None:
            start = 0
            if self.session > 0:
                try:
                    start = max(self._earlier_last_steps().values(), default=0)
                except OSError:
                    pass
            self._start_step = start
        return start

    def _earlier_last_steps(self) -> dict[str, int]:
        """Each scalar's largest step in the earlier sessions of this rank, read once (by the
        training thread or the sampler, whichever needs it first)."""
        with self._read_lock:
            if self._last_steps is None:
                from nuboard.eventlog.reader import RunReader
                reader = RunReader(self._abs, rank=self.rank, sessions_below=self.session)
                reader.refresh()
                self._last_steps = reader.last_steps()
        return self._last_steps

    def timer(self, name: str, all_ranks: bool | None = None) -> "Timer":
        """Time a block or a function; logs seconds as <timing_prefix>/<name> at the current step.

            with run.timer("data"):
                batch = next(loader)

            @run.timer("step")
            def train_step(batch): ...

        Args:
            name: '/'-separated segments under the timing prefix.
            all_ranks: log from every rank, not only rank 0; defaults to nb.init's
                timing_all_ranks.

        Each timed block or call logs one point at the step of the latest point logged; a
        name timed several times in one step logs several points at that step.
        """
        from .timer import Timer
        if all_ranks is not None and not isinstance(all_ranks, bool):
            raise InvalidTypeError(f"all_ranks must be True, False or None, not {all_ranks!r:.80}.")
        wanted = self._timing_all_ranks if all_ranks is None else all_ranks
        note_cuda_device()
        return Timer(self, name, enabled=self.rank == 0 or wanted)

    def flush(self) -> None:
        """Write everything buffered now (finish() does this too)."""
        if not self._finished and self._pid == os.getpid():
            note_cuda_device()
            self._media.join()
            self._writer.flush()

    # -- artifacts ------------------------------------------------------------------------
    def add_artifact(self, name: str, path: "str | os.PathLike[str]", *, type: str = "other",
                     metadata: "Mapping[str, Any] | None" = None, reference: bool = False,
                     checksum: bool = False, description: str | None = None) -> "Artifact":
        """Add a version of an artifact made by this run, which becomes its producer.

        `name` is 'model' for the run's own project, or 'project/name' for another
        ('datasets/fineweb-edu'). The other arguments are those of nb.add_artifact. The
        version is listed in run.json's outputs.
        """
        self._check_open("add_artifact")
        from . import run_links
        return run_links.add(self, name, path, type=type, metadata=metadata, reference=reference,
                             checksum=checksum, description=description)

    def use_artifact(self, spec: str) -> "Artifact":
        """Find a version ('datasets/fineweb-edu:v2', ':latest', or 'model:v1' in the run's own
        project), record that this run used it, and return it.

        Every file is compared with the manifest by size first; missing or changed files,
        and a ${VAR} not set here, are named in one RuntimeWarning.
        """
        self._check_open("use_artifact")
        from . import run_links
        return run_links.use(self, spec)

    def _check_open(self, what: str) -> None:
        if self._finished:
            raise RunFinishedError(f"run {self.id!r} is finished: call {what} before finish() "
                                   "(or inside the 'with nb.init(...)' block).")

    # -- finishing ------------------------------------------------------------------------
    def finish(self, status: str = "finished") -> None:
        """Write what is buffered, fsync, and mark the run; calling it again does nothing.

        Args:
            status: 'finished', 'crashed', 'killed' or 'failed'.
        """
        if status not in STATUSES:
            raise InvalidArgumentError(
                f"status {status!r} is not one of {', '.join(repr(s) for s in STATUSES)}.")
        self._end(status, self._compact)

    def _end(self, status: str, compact: bool, error: BaseException | None = None) -> None:
        """Finish as `status`; a crash's exception, when known, goes to run.json's `error`."""
        if self._pid != os.getpid():
            return
        with defer_sigterm, self._finish_lock:   # a SIGTERM now waits for the status
            if self._finished:
                return
            self._finished = True
            for service in self._services:
                try:
                    service.stop()
                except Exception:
                    pass
            self._series = self._groups = _Closed(self)
            self._media.close()                # every queued entry stored and named first
            self._writer.close()               # it drains every buffer and group it was given
            process_hooks.live.discard(self)
            if self.rank != 0:
                return
            self._write_end(status, error)
        if compact:
            self._write_parquet()
        if self._sync is not None:             # the last push, after run.json says how it ended
            from .sync_thread import FINAL_WAIT, KILLED_WAIT
            sync, self._sync = self._sync, None
            sync.close(KILLED_WAIT if status == "killed" else FINAL_WAIT)

    def _write_end(self, status: str, error: BaseException | None = None) -> None:
        def mark_end(doc: dict) -> None:
            doc.update(status=status, end_time=runjson.now_iso(),
                       dropped_points=doc.get("dropped_points", 0) + self._writer.dropped_points)
            if status == "crashed" and error is not None:
                doc["error"] = runjson.error_record(error)
            else:                                # an earlier session's crash is over
                doc.pop("error", None)
            self._doc = doc                      # kept even when the write then fails

        if self._folder_gone():                  # the writer has warned; nowhere to write
            mark_end(self._doc)
            return
        try:
            self.update_record(mark_end)
        except OSError as exc:
            warnings.warn(f"nuboard: cannot write {self._abs / layout.RUN_JSON}: {exc}",
                          RuntimeWarning, stacklevel=4)

    def _write_parquet(self) -> None:
        import importlib.util
        if self._folder_gone() or importlib.util.find_spec("pyarrow") is None:
            return
        try:
            from nuboard.eventlog.parquet import write_parquet
            write_parquet(self._abs, rank=self.rank)
        except Exception as exc:  # compaction is an optimisation; the logs stay the record
            warnings.warn(f"nuboard: could not write {self._abs / layout.PARQUET}: {exc}",
                          RuntimeWarning, stacklevel=4)

    def _folder_gone(self) -> bool:
        """The writer found its log removed and the run's folder is not there: finishing
        writes nothing more into it, and adds no warning to the writer's one."""
        return self._writer.vanished and not self._abs.is_dir()

    def _forked(self) -> None:
        """In a child forked while this run was open: drop whatever is logged, write nothing."""
        self._series = _ForkedChild(self.id)
        self._finished = True
        if self._sync is not None:
            self._sync.abandon()
            self._sync = None
        self._media.abandon()
        self._writer.abandon()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None or (exc_type is SystemExit and exc.code in (0, None)):
            self.finish("finished")
        else:
            for service in self._services:
                copy = getattr(service, "copy_traceback", None)
                if copy is not None:
                    copy(exc_type, exc, tb)
            self._end("crashed", self._compact, exc)


def _as_media(value: "str | Media") -> Media:
    """A value of run.log that is media: a Media object as it is, a str as nb.Text."""
    if isinstance(value, str):
        from nuboard.media.text import Text
        return Text(value)
    return value


class _Closed:
    """Stands in for the series and group dicts after finish(): logging raises RunFinishedError."""

    def __init__(self, run: Run):
        self.run_id = run.id

    def get(self, name):
        what = f"scalars {list(name)!r:.80}" if isinstance(name, tuple) else f"scalar {name!r:.80}"
        raise RunFinishedError(
            f"run {self.run_id!r} is finished: nothing more can be logged to it "
            f"({what}). Start or resume a run with nb.init.")


class _ForkedChild:
    """Stands in for the series dict in a forked child: points are dropped, never written."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.warned = False

    def get(self, name):
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"nuboard: run {self.run_id!r} was started in the parent process; this forked "
                "child (pid {}) does not log to it.".format(os.getpid()), RuntimeWarning, stacklevel=3)
        return _SINK

    def values(self):
        return []


class _Sink:
    """A buffer that keeps nothing."""

    def append(self, item) -> None:
        pass

    def __len__(self) -> int:
        return 0


class _SinkSeries:
    __slots__ = ("steps", "walls", "values", "last_step", "key_id", "name")

    def __init__(self):
        self.steps = self.walls = self.values = _Sink()
        self.last_step = -1


_SINK = _SinkSeries()
