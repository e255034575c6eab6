"""TensorBoard event files (torch.utils.tensorboard, tensorboardX, TensorFlow) as NuBoard runs.

Each folder under the log dir that holds `events.out.tfevents.*` files is one run, named after
its folder relative to the log dir. The files are read, in name order, record by record
(tfrecord.Records: the framing TensorBoard's reader checks, every length bounded; a torn or
damaged record ends the file there, as in TensorBoard, with a note), each record parsed as the
`tensorboard` package's Event proto (the records as written; no compat layer). Both kinds of
scalar are read: the `simple_value` summaries of torch, tensorboardX and TF1, and the tensor
summaries of TF2 and `new_style=True` (plugin 'scalars' or data class scalar, the metadata only
on a tag's first point). Every point is kept with its step and wall time, its value as stored
(a float32 widened to a double). Images, histograms and text (legacy fields and plugin tensors)
are media entries at their step and wall time (tensorboard_media); audio and the other plugins
are left out, one note per kind with counts. The HParams plugin's session start info is the
config; the run starts at its earliest event and ends at its latest, status finished.

The points TensorBoard shows come in as it shows them. TensorBoard (its data server, what
`tensorboard --logdir` loads with) keeps, for each tag, only the points below each new point's
step: a restarted job (torch's `purge_step`, a resume from a checkpoint) writes a new event
file from a lower step, and its earlier points there and after are hidden. NuBoard's resume
rule hides the same points, scalar by scalar, so each event file is a session of the NuBoard
run, and so is what follows a step that repeats or goes back inside a file; the hidden points
stay in their earlier session (a note counts them). Past MAX_SESSIONS sessions (every point
logged at step 0), only the points TensorBoard shows are written, in one session.

A folder that cannot be read exactly (an event file that is a FIFO or cannot be opened, a
record that is not an Event, a scalar tensor that is not one number, a folder name that is not
UTF-8) is skipped by the import with the reason; the other folders are imported.
"""
from __future__ import annotations

import math
import os
import re
import stat
from array import array
from pathlib import Path

from nuboard.errors import import_extra

from .landing import Progress, import_runs
from .source_runs import (
    Candidate,
    ImportResult,
    ImportSourceError,
    Series,
    SourceRun,
    UnreadableRunError,
    describe,
    printable,
)
from .tensorboard_media import MediaValues, media_kind
from .tfrecord import Records, file_kind

FEATURE = "nuboard import tensorboard"
_HOST = re.compile(r"events\.out\.tfevents\.\d+\.(.+?)(\.\d+\.\d+)?\Z")


def import_tensorboard(logdir, project: str, dir=None, *, dry_run: bool = False,
                       progress: Progress | None = None) -> ImportResult:
    """Import every run under a TensorBoard log dir; see nuboard.importers.tensorboard."""
    from nuboard.files.layout import resolve_root
    from nuboard.files.names import check_project
    check_project(project)
    import_extra("tensorboard.compat.proto.event_pb2", "tensorboard", FEATURE)
    root = resolve_root(dir)
    logdir = Path(os.path.abspath(os.path.expanduser(os.fspath(logdir))))
    if printable(str(logdir)) != str(logdir):
        raise ImportSourceError(f"the TensorBoard log folder {printable(str(logdir))!r} has a path "
                                "that is not UTF-8: rename it, or pass a link to it with a UTF-8 name.")
    candidates = [Candidate(key, lambda key=key, files=files: read_run(logdir, key, files),
                            problem=folder_problem(key, files))
                  for key, files in run_folders(logdir)]
    return import_runs("tensorboard", str(logdir), project, root, candidates, dry_run=dry_run,
                       progress=progress)


def run_folders(logdir: Path) -> list[tuple[str, list[Path]]]:
    """(key, event files in name order) of each folder that holds event files, by key.

    The key is the folder's path relative to the log dir with '/' ('.' for the log dir itself).
    Raises ImportSourceError when the log dir is not a folder or holds no event file.
    """
    if not logdir.is_dir():
        what = "does not exist" if not logdir.exists() else "is not a folder"
        raise ImportSourceError(f"no TensorBoard log folder {str(logdir)!r}: it {what}. Pass the "
                                "folder given to SummaryWriter(log_dir=...) or tensorboard --logdir.")
    found = []
    for folder, subdirs, files in os.walk(logdir):
        subdirs.sort()
        events = sorted(f for f in files if "tfevents" in f and not f.endswith(".profile-empty"))
        if events:
            key = Path(folder).relative_to(logdir).as_posix()
            found.append((key, [Path(folder) / f for f in events]))
    if not found:
        raise ImportSourceError(f"no TensorBoard event files (events.out.tfevents.*) under "
                                f"{str(logdir)!r}: pass the folder given to SummaryWriter(log_dir=...).")
    return sorted(found)


def folder_problem(key: str, files: list[Path]) -> str | None:
    """Why a run folder cannot be imported, seen without opening a file; None when none is seen.

    A name that is not UTF-8 (run.json keeps names as UTF-8) and an event file that is not a
    regular file (a FIFO would block the read for ever) are known from the folder listing.
    """
    if printable(key) != key:
        return "its folder name is not UTF-8 (rename the folder to import it)"
    for path in files:
        if printable(path.name) != path.name:
            return f"the name of its event file {printable(path.name)!r} is not UTF-8"
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            return f"cannot read its event file {path.name!r}: {exc.strerror or exc}"
        if not stat.S_ISREG(mode):
            return f"its event file {path.name!r} is {file_kind(mode)}, not a regular file"
    return None


def read_run(logdir: Path, key: str, files: list[Path]) -> SourceRun:
    """One folder's events as a SourceRun: every scalar point and media entry, the hparams, the times.

    The loop runs once an event (a million for a big log): each tag's kind is settled at its
    first value with metadata, and its points go straight to its arrays. Raises
    UnreadableRunError naming the file and the event for what cannot be read exactly.
    """
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    parse = event_pb2.Event.FromString
    scalar = summary_pb2.DATA_CLASS_SCALAR
    kinds: dict[str, tuple[str, int]] = {}      # tag -> (plugin, data class) of its first metadata
    series: dict[str, Series] = {}
    adders: dict[str, tuple] = {}               # tag -> its series' (steps, walls, values).append
    config: dict = {}
    first = last = None
    negative = 0
    left_out = []
    unread: dict[tuple[str, str], dict[str, int]] = {}   # (noun, plural) -> {tag: values}
    media = MediaValues()
    session, starts = 0, [0.0]                  # the NuBoard session now; each one's start
    at: dict[str, int] = {}                     # tag -> its last step in this session
    for path in files:
        records = Records(path, masked_crc32c)
        fresh, file_start = True, None          # no point read from this file yet
        for index, record in enumerate(records):
            try:
                event = parse(record)
            except DecodeError:
                raise UnreadableRunError(f"event file {path.name!r}: record {index:,} is not a "
                                         "TensorBoard event") from None
            wall = event.wall_time
            if file_start is None:
                file_start = wall
            if first is None or wall < first:
                first = wall
            if last is None or wall > last:
                last = wall
            step = event.step
            for value in event.summary.value:       # none when the event has no summary
                tag = value.tag
                if tag not in kinds and value.HasField("metadata"):
                    meta = value.metadata
                    if meta.plugin_data.plugin_name or meta.data_class:
                        kinds[tag] = (meta.plugin_data.plugin_name, meta.data_class)
                plugin, data_class = kinds.get(tag, _NO_KIND)
                kind = value.WhichOneof("value")
                if plugin == "hparams":
                    config.update(_hparams(value, path))
                    continue
                what = None
                if kind == "simple_value":
                    number = value.simple_value
                elif kind == "tensor" and (plugin == "scalars" or data_class == scalar):
                    number = _number(value.tensor, tag, step, path)
                else:
                    what = media_kind(kind, plugin)
                    if what is None:
                        left = unread.setdefault(_unread_kind(kind, plugin), {})
                        left[tag] = left.get(tag, 0) + 1
                        continue
                if step < 0:
                    negative += 1
                    continue
                # TensorBoard shows a tag's points at steps below each new one: a step that
                # does not go forward, or a restart's file, begins a session of the run.
                if step <= at.get(tag, -1) or (fresh and at):
                    session += 1
                    starts.append(file_start if fresh else wall)
                    at = {}
                fresh = False
                at[tag] = step
                if what is not None:
                    media.read(what, value, tag, step, wall, session)
                    continue
                add = adders.get(tag)
                if add is None:
                    found = series[tag] = Series(tag)
                    add = adders[tag] = (found.steps.append, found.walls.append,
                                         found.values.append, found.sessions.append)
                add[0](step)
                add[1](wall)
                add[2](number)
                add[3](session)
        if records.stopped:
            left_out.append(records.stopped)
    start = first if first is not None else os.stat(files[0]).st_mtime
    name = key if key != "." else (logdir.name or str(logdir))
    if negative:
        left_out.append(f"{negative:,} point{'s' * (negative != 1)} with a negative step left out "
                        "(NuBoard steps start at 0)")
    left_out.extend(_unread_note(noun, tags) for noun, tags in sorted(unread.items()))
    left_out.extend(media.notes())
    starts[0] = start
    kept = list(series.values())
    if session >= MAX_SESSIONS:
        left = _only_shown(kept, media.points)
        if left:
            left_out.append(f"{left:,} point{'s' * (left != 1)} TensorBoard does not show left "
                            f"out: its files and steps that went back or repeated make "
                            f"{session + 1:,} sessions, more than the {MAX_SESSIONS} a run is "
                            "written in")
        starts = []
    elif session:
        hidden = sum(len(s.steps) - len(_shown(s.steps, s.sessions)) for s in kept)
        hidden += len(media.points) - len(_shown([p.step for p in media.points],
                                                 [p.session for p in media.points],
                                                 [p.name for p in media.points]))
        if hidden:
            left_out.append(f"{hidden:,} point{'s' * (hidden != 1)} TensorBoard does not show "
                            "(logged again at a step, or after a step that went back, as by a "
                            f"restart) kept in {session:,} earlier session{'s' * (session != 1)}, "
                            "hidden by the resume rule as TensorBoard hides them")
    else:
        starts = []
        for found in kept:
            del found.sessions[:]
    match = _HOST.match(files[0].name)
    return SourceRun(key=key, name=_label(name), start=start, end=last if last is not None else start,
                     config=config, host=match.group(1) if match else None,
                     series=kept, left_out=left_out, media=media.points, sessions=starts,
                     details={"files": [p.name for p in files]})


MAX_SESSIONS = 100
"""The most sessions a run is written in: past this many files and backward steps (a script
logging every point at step 0), only the points TensorBoard shows are written, in one."""


def _shown(steps, sessions, tags=None) -> list[int]:
    """The indices of the points TensorBoard shows, of points in the order read: per tag, a
    point hides those before it at its step or later (TensorBoard's data server preempts
    so, tag by tag). Points of one tag, step and session (the images of one event) stand
    together. `tags`: each point's tag; None when all are of one."""
    stacks: dict = {}
    for i, step in enumerate(steps):
        stack = stacks.setdefault(tags[i] if tags is not None else None, [])
        session = sessions[i]
        while stack and (steps[stack[-1]] > step or
                         (steps[stack[-1]] == step and sessions[stack[-1]] != session)):
            stack.pop()
        stack.append(i)
    return sorted(i for stack in stacks.values() for i in stack)


def _only_shown(series: list[Series], media: list) -> int:
    """Keep only the points TensorBoard shows, all in one session; how many are left out."""
    left = 0
    for found in series:
        keep = _shown(found.steps, found.sessions)
        left += len(found.steps) - len(keep)
        for name in ("steps", "walls", "values"):
            old = getattr(found, name)
            setattr(found, name, array(old.typecode, (old[i] for i in keep)))
        del found.sessions[:]
    keep = _shown([p.step for p in media], [p.session for p in media], [p.name for p in media])
    left += len(media) - len(keep)
    media[:] = [media[i] for i in keep]
    for point in media:
        point.session = 0
    return left


_NO_KIND = ("", 0)
_UNREAD = {"image": ("image", "images"), "histo": ("histogram", "histograms"),
           "audio": ("audio clip", "audio clips"), "images": ("image", "images"),
           "histograms": ("histogram", "histograms"), "text": ("text", "texts")}


def _unread_kind(kind: str | None, plugin: str) -> tuple[str, str]:
    """What a value that is not a scalar is, as a note names it: (one, several)."""
    found = _UNREAD.get(plugin) or _UNREAD.get(kind or "")
    if found:
        return found
    what = f"{_label(plugin)} plugin value" if plugin else f"{kind or 'empty'} value"
    return what, what + "s"


def _unread_note(noun: tuple[str, str], tags: dict[str, int]) -> str:
    """One left_out line for one kind of value not imported: how many, in which tags."""
    count = sum(tags.values())
    names = sorted(tags)
    shown = ", ".join(_label(n) for n in names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
    return (f"{count:,} {noun[0] if count == 1 else noun[1]} in {len(names):,} "
            f"tag{'s' * (len(names) != 1)} ({shown}) left out: NuBoard does not import them yet")


def _number(tensor, tag: str, step: int, path: Path) -> float:
    """The value of a scalar tensor: float and double read directly, anything else by numpy.

    A tensor that is not one real number (a string, several elements, a complex number, bytes
    that do not fit its shape) raises UnreadableRunError: no value is made up for it.
    """
    if len(tensor.float_val) == 1 and not tensor.tensor_content and tensor.dtype == _DT_FLOAT:
        return tensor.float_val[0]
    if len(tensor.double_val) == 1 and not tensor.tensor_content and tensor.dtype == _DT_DOUBLE:
        return tensor.double_val[0]
    where = f"event file {path.name!r}: scalar {tag!r} at step {step:,}"
    if tensor.dtype == _DT_STRING:
        raise UnreadableRunError(f"{where} is a string tensor, not a number")
    shape = [d.size for d in tensor.tensor_shape.dim]
    if math.prod(shape) != 1:                        # checked before numpy allocates it
        raise UnreadableRunError(f"{where} is a tensor of shape {shape}, not one number")
    from tensorboard.util import tensor_util
    try:
        array = tensor_util.make_ndarray(tensor)
    except Exception as exc:
        raise UnreadableRunError(f"{where} is a tensor that cannot be read ({describe(exc)})") from None
    if array.size != 1:
        raise UnreadableRunError(f"{where} is a tensor of {array.size:,} elements, not one number")
    item = array.reshape(-1)[0]
    if getattr(item, "imag", 0) or array.dtype.kind not in "biuf":
        raise UnreadableRunError(f"{where} is a tensor of {array.dtype}, not a real number")
    return float(item)


_DT_FLOAT, _DT_DOUBLE, _DT_STRING = 1, 2, 7      # tensorflow DataType numbers


def _hparams(value, path: Path) -> dict:
    """The hparams of a session start info summary ({} for the plugin's other summaries)."""
    from tensorboard.plugins.hparams import metadata
    if value.tag != metadata.SESSION_START_INFO_TAG:
        return {}
    try:
        info = metadata.parse_session_start_info_plugin_data(value.metadata.plugin_data.content)
    except Exception as exc:
        raise UnreadableRunError(f"event file {path.name!r}: its hparams cannot be read "
                                 f"({describe(exc)})") from None
    return {name: _hparam_value(v) for name, v in info.hparams.items()}


def _hparam_value(value):
    kind = value.WhichOneof("kind")
    if kind in ("number_value", "string_value", "bool_value"):
        return getattr(value, kind)
    if kind in (None, "null_value"):
        return None
    from google.protobuf.json_format import MessageToDict
    return MessageToDict(value)


def _label(text: str) -> str:
    """A run name NuBoard takes: control characters as '_', at most 256 characters."""
    text = "".join("_" if ord(ch) < 32 or ord(ch) == 127 or 0xD800 <= ord(ch) <= 0xDFFF else ch
                   for ch in text)
    return text if len(text) <= 256 else text[:255] + "…"
