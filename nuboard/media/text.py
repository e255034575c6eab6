"""nb.Text: a string logged at a step (a generation, a prompt, a note).

Short text, at most 64 KiB as UTF-8, lives in the event log itself (`in_log` True, record()
{"text": ...}); longer text, up to 16 MiB, is a file of its own (`in_log` False, encode() gives
its UTF-8 bytes as a .txt). Over 16 MiB is refused, and so is a str with a lone surrogate
(e.g. from `errors="surrogateescape"`), which UTF-8 cannot hold: the error names its position.

    Text("the model said: ...")
    from_value("a plain str")       # what run.log does with a str value
"""
from __future__ import annotations

from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media

MAX_IN_LOG_BYTES = 64 * 1024            # up to this, the text is in the event-log record
MAX_BYTES = 16 * 1024 * 1024            # up to this, a .txt file; over it, refused
WHO = "nb.Text"


class Text(Media):
    """A str, checked (UTF-8 encodable, at most 16 MiB) when made. `in_log` says where it is
    stored: True for at most 64 KiB of UTF-8, else a .txt file."""
    kind = "text"

    def __init__(self, text: Any):
        if not isinstance(text, str):
            if isinstance(text, (bytes, bytearray, memoryview)):
                raise InvalidTypeError(f"{WHO}: a {type(text).__name__} value ({len(text):,} bytes): give a "
                                       "str; decode it first, e.g. data.decode('utf-8')")
            raise InvalidTypeError(f"{WHO}: a value of type {type(text).__name__}: give a str")
        text = str.__str__(text)        # a plain str, whatever subclass was given
        size = _utf8_size(text)
        if size > MAX_BYTES:
            raise InvalidArgumentError(f"{WHO}: a text of {size:,} bytes as UTF-8: give at most "
                                       f"{MAX_BYTES:,} (16 MiB); log a longer one as a file of the run")
        self._text = text
        self._bytes = size
        self.in_log = size <= MAX_IN_LOG_BYTES

    @property
    def text(self) -> str:
        """The text as given."""
        return self._text

    def record(self) -> dict[str, Any]:
        """{"text": ...}, for a text that lives in the event log (in_log True)."""
        if not self.in_log:
            return super().record()
        return {"text": self._text}

    def encode(self) -> Encoded:
        """The text's UTF-8 bytes as a .txt, with {"chars", "bytes"} (in_log False)."""
        if self.in_log:
            return super().encode()
        return Encoded(self._text.encode("utf-8"), "txt", {"chars": len(self._text), "bytes": self._bytes})

    def __repr__(self) -> str:
        where = "in the log" if self.in_log else "a file"
        return f"Text({len(self._text):,} chars, {self._bytes:,} bytes, {where})"


def from_value(value: Any) -> Text:
    """A Text for a plain str (a Text as it is); InvalidTypeError for anything else."""
    if isinstance(value, Text):
        return value
    return Text(value)


def _utf8_size(text: str) -> int:
    """The text's length in UTF-8 bytes; InvalidArgumentError naming the first lone surrogate."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{WHO}: the text has a lone surrogate {text[exc.start]!r} at position {exc.start:,} "
            f"(of {len(text):,} characters), which UTF-8 cannot hold: remove it, or decode the "
            "source with errors='replace'") from None
