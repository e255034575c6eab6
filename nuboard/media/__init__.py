"""Media a run logs beside its scalars: images, histograms, text, tables and audio (issue 32).

Each kind is a class whose constructor checks and copies what the user gave, on the training
thread, and raises one clear error (InvalidTypeError / InvalidArgumentError naming the value
and the rule) for bad input; nothing is encoded there. Encoding happens later, on the writer
thread, through `encode()`:

    image = Image(array, caption="val sample")      # checked, pixels copied
    encoded = image.encode()                        # PNG bytes, "png", {"width", "height", ...}

Kinds that live in the event log itself (a histogram's counts and edges, short text) give
their record's body through `record()` instead, and say so with `in_log = True`.

`import nuboard.media` stays light: numpy, PIL and torch are imported only when the user's
object is one of theirs (a numpy array, a PIL image, a torch tensor).

This package is the first slice of issue 32 (its item 1, the types): `run.log` does not take
these objects yet; storage, reading back and the viewer come next.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class Encoded(NamedTuple):
    """What a media object becomes on the writer thread: the file's bytes, its extension
    (without the dot: "png", "jpg", "wav", "parquet", "txt") and what the record says of it
    (width and height of an image, sample_rate and frames of audio, rows of a table...)."""
    data: bytes
    ext: str
    meta: dict[str, Any]


class Media:
    """Base of the media kinds. `kind`: "image", "histogram", "text", "table" or "audio";
    `in_log`: whether the entry lives in the event log itself (record()) rather than in a
    file of its own (encode())."""
    kind: str = ""
    in_log: bool = False

    def encode(self) -> Encoded:
        """The file this entry is stored as (kinds with in_log False)."""
        raise NotImplementedError(f"a {self.kind} entry is kept in the event log: use record()")

    def record(self) -> dict[str, Any]:
        """The JSON-able body of the entry's event-log record (kinds with in_log True)."""
        raise NotImplementedError(f"a {self.kind} entry is a file of its own: use encode()")
