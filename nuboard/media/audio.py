"""nb.Audio: a clip of sound at a step, stored as a 16-bit PCM WAV file.

The samples are checked and copied when the object is made (as int16, frames x channels), so
the caller may reuse its buffer; the WAV is written later, with the standard library's `wave`:

    Audio(waveform, 16_000)                     # 1-D: mono
    Audio(stereo, 44_100, caption="sample 3")   # 2-D: frames x channels, or channels x frames

A 2-D array is channels x frames when its first axis is 1 or 2 and its last is not (torchaudio's
layout), else frames x channels. Floats must lie in [-1, 1] (NaN and values outside are refused,
not clipped) and become round(x * 32767); int16 samples are kept as they are; other dtypes are
refused. At most 8 channels, 10 minutes and 256 MB of 16-bit samples; sample_rate an int from 1 to 384,000.
"""
from __future__ import annotations

import io
import numbers
import wave
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media
from nuboard.media.values import check_caption, is_ndarray, is_tensor, tensor_array

MAX_SAMPLE_RATE = 384_000
MAX_CHANNELS = 8
MAX_SECONDS = 600
MAX_BYTES = 256_000_000           # 16-bit samples held until written, as an image's pixels
WHO = "nb.Audio"
_CHUNK = 1 << 20                # samples scaled per numpy pass (bounds the float64 temporary)


class Audio(Media):
    """A clip: data (1-D mono, or 2-D; numpy array, torch tensor or list), sample_rate (Hz)
    and an optional caption. Raises InvalidTypeError / InvalidArgumentError when made."""
    kind = "audio"
    in_log = False

    def __init__(self, data: Any, sample_rate: Any, caption: str | None = None):
        self.sample_rate = _check_rate(sample_rate)
        self.caption = check_caption(caption, WHO)
        array = _samples_array(data)
        frames_first = _frames_by_channels(array)
        frames, channels = frames_first.shape
        if array.size == 0:
            raise InvalidArgumentError(f"{WHO}: an array of shape {tuple(array.shape)} holds no samples: "
                                       "give at least one frame of at least one channel")
        if channels > MAX_CHANNELS:
            raise InvalidArgumentError(f"{WHO}: an array of shape {tuple(array.shape)} has {channels:,} "
                                       f"channels: give at most {MAX_CHANNELS}, as frames x channels "
                                       "(transpose a channels x frames array)")
        if frames > MAX_SECONDS * self.sample_rate:
            raise InvalidArgumentError(f"{WHO}: {frames:,} frames at {self.sample_rate:,} Hz last "
                                       f"{frames / self.sample_rate:,.1f} s: give at most {MAX_SECONDS} s "
                                       "(10 minutes)")
        if frames * channels * 2 > MAX_BYTES:
            raise InvalidArgumentError(f"{WHO}: {frames:,} frames x {channels} channels are "
                                       f"{frames * channels * 2:,} bytes of 16-bit samples: give at "
                                       f"most {MAX_BYTES:,} (256 MB)")
        self._samples = _to_int16(frames_first)         # a fresh C-ordered int16 array

    @property
    def channels(self) -> int:
        return int(self._samples.shape[1])

    @property
    def frames(self) -> int:
        return int(self._samples.shape[0])

    def encode(self) -> Encoded:
        """A 16-bit PCM WAV, with {"sample_rate", "channels", "frames", "seconds", "caption"}."""
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(self.channels)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(self._samples.tobytes())    # native order: wave swaps on big-endian
        return Encoded(buffer.getvalue(), "wav",
                       {"sample_rate": self.sample_rate, "channels": self.channels, "frames": self.frames,
                        "seconds": self.frames / self.sample_rate, "caption": self.caption})

    def __repr__(self) -> str:
        return f"Audio({self.frames:,} frames x {self.channels} channels at {self.sample_rate:,} Hz)"


def _check_rate(rate: Any) -> int:
    if isinstance(rate, bool) or not isinstance(rate, numbers.Integral):
        raise InvalidTypeError(f"{WHO}: sample_rate of type {type(rate).__name__} ({rate!r}): give an int "
                               f"from 1 to {MAX_SAMPLE_RATE:,} (Hz)")
    if not 1 <= rate <= MAX_SAMPLE_RATE:
        raise InvalidArgumentError(f"{WHO}: sample_rate={rate!r}: give an int from 1 to {MAX_SAMPLE_RATE:,} (Hz)")
    return int(rate)


def _samples_array(data: Any):
    """data as a numpy array of floats or int16 (a view where it can be: copied later)."""
    if isinstance(data, (list, tuple)):
        import numpy as np
        try:
            array = np.array(data)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"{WHO}: a {type(data).__name__} that is not a flat or rectangular "
                                   f"nesting of numbers ({exc}): give a numpy array, a torch tensor "
                                   "or a list of numbers") from None
        if array.dtype.kind in "iu":            # a list's numbers are samples as floats
            array = array.astype(np.float64)
    elif is_tensor(data):
        array = tensor_array(data, WHO, "samples")
    elif is_ndarray(data):
        array = data
    else:
        raise InvalidTypeError(f"{WHO}: data of type {type(data).__name__}: give a numpy array, a torch "
                               "tensor or a list of numbers (1-D mono, or 2-D)")
    if array.dtype.kind != "f" and array.dtype.name != "int16":
        raise InvalidTypeError(f"{WHO}: samples of dtype {array.dtype}: give floats in [-1, 1] or int16")
    if array.ndim not in (1, 2):
        raise InvalidArgumentError(f"{WHO}: an array of shape {tuple(array.shape)} has {array.ndim} axes: "
                                   "give 1-D (mono) or 2-D (frames x channels, or channels x frames "
                                   "with 1 or 2 channels)")
    return array


def _frames_by_channels(array):
    """The array as frames x channels (a view): 1-D is one channel; 2-D is channels x frames
    when its first axis is 1 or 2 and its last is not."""
    if array.ndim == 1:
        return array.reshape(-1, 1)
    first, last = array.shape
    if first in (1, 2) and last not in (1, 2):
        return array.T
    return array


def _to_int16(frames):
    """A fresh C-ordered int16 copy: int16 as it is; floats checked (no NaN, within [-1, 1])
    and scaled to round(x * 32767), half to even, a chunk at a time."""
    import numpy as np
    if frames.dtype == np.int16:
        return np.array(frames, dtype=np.int16, order="C", copy=True)
    flat = np.ascontiguousarray(frames)
    if np.isnan(flat).any():
        at = int(np.flatnonzero(np.isnan(flat.reshape(-1)))[0])
        frame, channel = divmod(at, flat.shape[1])
        raise InvalidArgumentError(f"{WHO}: the samples hold NaN (first at frame {frame:,}, channel "
                                   f"{channel}): give floats in [-1, 1]")
    low, high = float(flat.min()), float(flat.max())
    if low < -1.0 or high > 1.0:
        raise InvalidArgumentError(f"{WHO}: the samples range from {low!r} to {high!r}: floats must lie in "
                                   "[-1, 1] (scale or clip them, e.g. np.clip(x, -1, 1)), or give int16")
    out = np.empty(flat.shape, dtype=np.int16)
    source, target = flat.reshape(-1), out.reshape(-1)
    for start in range(0, source.size, _CHUNK):
        part = source[start:start + _CHUNK].astype(np.float64)
        part *= 32767.0
        np.rint(part, out=part)
        target[start:start + _CHUNK] = part
    return out
