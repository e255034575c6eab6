"""Writers of hostile import sources for tests/test_import_hostile.py and test_import_fuzz.py.

TensorBoard: event files in the real TFRecord framing (length, masked CRC-32C of it, data,
masked CRC-32C of it), each record an Event proto built with the `tensorboard` package's own
protos, so what is written is what TensorBoard reads; the writer returns each record's byte
range, so a test knows what a cut or a flipped byte leaves readable. MLflow: `mlruns` folders in
the file store's layout (meta.yaml through yaml.safe_dump, one `timestamp value step` line a
point), as MLflow 2 and 3 write them.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

EVENT_FILE = "events.out.tfevents.1700000000.fuzzhost.1.0"


# -- TensorBoard ---------------------------------------------------------------------------------

def masked_crc(data: bytes) -> int:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    return masked_crc32c(data)


def frame(data: bytes) -> bytes:
    """One TFRecord: the data with its length and both checksums."""
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked_crc(head)) + data + struct.pack("<I", masked_crc(data))


def version_event(wall: float = 1.7e9) -> bytes:
    from tensorboard.compat.proto import event_pb2
    return event_pb2.Event(wall_time=wall, file_version="brain.Event:2").SerializeToString()


def scalar_event(tag: str, step: int, wall: float, value: float, *, tensor: bool = False,
                 first: bool = False) -> bytes:
    """A simple_value summary, or (tensor=True) a double tensor of the scalars plugin whose
    metadata is on the tag's first point only, as TF2 writes them."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
    summary = summary_pb2.Summary.Value(tag=tag)
    if tensor:
        summary.tensor.CopyFrom(tensor_pb2.TensorProto(dtype=2, double_val=[value]))
        if first:
            summary.metadata.plugin_data.plugin_name = "scalars"
    else:
        summary.simple_value = value
    return event_pb2.Event(step=step, wall_time=wall,
                           summary=summary_pb2.Summary(value=[summary])).SerializeToString()


def string_tensor_event(tag: str, step: int, wall: float) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
    summary = summary_pb2.Summary.Value(tag=tag, tensor=tensor_pb2.TensorProto(dtype=7, string_val=[b"0.5"]))
    summary.metadata.plugin_data.plugin_name = "scalars"
    return event_pb2.Event(step=step, wall_time=wall,
                           summary=summary_pb2.Summary(value=[summary])).SerializeToString()


def vector_event(tag: str, step: int, wall: float) -> bytes:
    """A scalars-plugin tensor of two numbers: not one value."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
    tensor = tensor_pb2.TensorProto(dtype=2, double_val=[1.0, 2.0])
    tensor.tensor_shape.dim.add(size=2)
    summary = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    summary.metadata.plugin_data.plugin_name = "scalars"
    return event_pb2.Event(step=step, wall_time=wall,
                           summary=summary_pb2.Summary(value=[summary])).SerializeToString()


@dataclass
class EventFile:
    """What was written: the bytes, each record's (start, end) and the points each record holds."""
    data: bytes
    ranges: list = field(default_factory=list)
    points: list = field(default_factory=list)      # per record: [(tag, step, wall, value)]

    def kept(self, upto: int) -> dict[str, list[tuple]]:
        """{tag: [(step, wall, value)]} of the records wholly before byte `upto`, steps >= 0."""
        out: dict[str, list[tuple]] = {}
        for (_, end), points in zip(self.ranges, self.points):
            if end > upto:
                break
            for tag, step, wall, value in points:
                if step >= 0:
                    out.setdefault(tag, []).append((step, wall, value))
        return out

    def record_at(self, offset: int) -> int:
        """The start of the record that holds byte `offset`."""
        return next(start for start, end in self.ranges if start <= offset < end)


def event_file(records: list[tuple[bytes, list]]) -> EventFile:
    """records: [(serialized event, its points)] -> an EventFile of them, framed."""
    out = EventFile(b"")
    parts, at = [], 0
    for data, points in records:
        framed = frame(data)
        parts.append(framed)
        out.ranges.append((at, at + len(framed)))
        out.points.append(points)
        at += len(framed)
    out.data = b"".join(parts)
    return out


def write_events(folder: Path, data: bytes, name: str = EVENT_FILE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


def same_value(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


def read_run_points(run_dir: Path, renamed: dict) -> dict[str, list[tuple]]:
    """{source tag: [(step, wall, value)]} of an imported run, through nb.read_scalars."""
    import nuboard as nb
    back = {v: k for k, v in renamed.items()}
    return {back.get(name, name): list(zip(s.steps, s.wall_times, s.values))
            for name, s in nb.read_scalars(run_dir).items()}


def same_points(got: dict, expected: dict) -> bool:
    if sorted(got) != sorted(expected):
        return False
    for tag, points in expected.items():
        if len(got[tag]) != len(points):
            return False
        for (s1, w1, v1), (s2, w2, v2) in zip(got[tag], points):
            if s1 != s2 or w1 != w2 or not same_value(v1, v2):
                return False
    return True


# -- MLflow --------------------------------------------------------------------------------------

def write_experiment(store: Path, experiment_id: str, name: str) -> Path:
    import yaml
    folder = store / experiment_id
    folder.mkdir(parents=True)
    meta = {"artifact_location": folder.resolve().as_uri(), "creation_time": 1_700_000_000_000,
            "experiment_id": experiment_id, "last_update_time": 1_700_000_000_000,
            "lifecycle_stage": "active", "name": name}
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta))
    return folder


def write_mlflow_run(experiment: Path, run_id: str, metrics: dict[str, list[str]], *,
                     start: int = 1_700_000_000_000, params: dict | None = None,
                     folder_name: str | bytes | None = None) -> Path:
    """A FINISHED run: metrics {key: ['<timestamp ms> <value> <step>', ...]}, written as lines."""
    import yaml
    name = folder_name if folder_name is not None else run_id
    run = experiment / os.fsdecode(name) if isinstance(name, bytes) else experiment / name
    for sub in ("metrics", "params", "tags", "artifacts"):
        (run / sub).mkdir(parents=True)
    meta = {"artifact_uri": (run / "artifacts").resolve().as_uri(), "end_time": start + 60_000,
            "entry_point_name": "", "experiment_id": experiment.name, "lifecycle_stage": "active",
            "run_id": run_id, "run_name": f"run-{run_id[:6]}", "source_name": "",
            "source_type": 4, "source_version": "", "start_time": start, "status": 3, "tags": [],
            "user_id": "fuzz"}
    (run / "meta.yaml").write_text(yaml.safe_dump(meta))
    for key, lines in metrics.items():
        path = run / "metrics" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines))
    for key, value in (params or {}).items():
        (run / "params" / key).write_text(value)
    return run


def metric_points(lines: list[str]) -> list[tuple]:
    """[(step, wall seconds, value)] of well-formed metric lines with steps >= 0."""
    out = []
    for line in lines:
        ts, value, step = line.split(" ")
        if int(step) >= 0:
            out.append((int(step), int(ts) / 1000, float(value)))
    return out
