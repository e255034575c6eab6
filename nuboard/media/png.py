"""PNG written with the standard library (zlib), and the size read from a PNG or JPEG header.

Pillow is not a dependency of NuBoard, so an image's pixels are encoded here: 8-bit grey (colour
type 0), grey and alpha (4), RGB (2) or RGBA (6), one IDAT chunk. Each row gets the PNG filter
("none", "sub" or "up") whose output has the smallest sum of absolute byte values, libpng's own
heuristic. The filters are computed for the whole image at once: with numpy when it is loaded
(as it is once the pixels came from an array), whose loops release the GIL; else with
byte-wise arithmetic on Python integers (no per-byte loop), about as much as zlib itself. ("average" made
photos no smaller and "paeth" needs a per-byte loop: both are left out.)

    data = encode_png(pixels, width=256, height=256, channels=3)   # pixels: HWC uint8 bytes

Bytes a user gives as PNG or JPEG are stored as they are; `read_header` checks their signature
and reads width, height and channels from the header without decoding a pixel.
"""
from __future__ import annotations

import struct
import sys
import zlib
from typing import NamedTuple

from nuboard.errors import InvalidArgumentError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"

# zlib level 6 (zlib's default). A 256x256x3 photo, measured 2026-12-07 on one core: level 6
# 10 ms and 110 kB (Pillow's default: 10 ms, 109 kB); level 1 6 ms and 7 % more bytes; level 9
# 43 ms for 1 % fewer. Noise costs 6 ms at any level (filters and zlib find nothing to save).
LEVEL = 6

_COLOUR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}          # channels -> PNG colour type
_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}       # PNG colour type -> channels (palette: RGB)
# min(b, 256 - b): a filtered byte's distance from 0, read as a signed byte.
_ABS = bytes(min(b, 256 - b) for b in range(256))
# The cost of a row's filter is summed over every 5th byte (5 shares no factor with 1-4 bytes a
# pixel, so every channel is sampled): a fifth of the work, the same choice nearly always.
_SAMPLE = 5


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _bytewise_sub(x: int, y: int, high: int, low: int) -> int:
    """(x - y) mod 256 in each byte of two equally long byte strings read as integers
    (high: 0x80 in every byte, low: 0x7f): no borrow crosses from one byte to the next."""
    return ((x | high) - (y & low)) ^ ((x ^ y ^ high) & high)


def _filtered(raw: bytes, height: int, stride: int, bpp: int) -> list[bytes]:
    """The scanlines of the PNG's image data, each with its filter-type byte first."""
    size = len(raw)
    rows = [raw[i * stride:(i + 1) * stride] for i in range(height)]
    pad = b"\0" * bpp
    left = b"".join(pad + row[:-bpp] for row in rows)          # the byte bpp to the left
    up = b"\0" * stride + raw[:-stride]                         # the byte one row up
    x, a, b = (int.from_bytes(s, "little") for s in (raw, left, up))
    ones = ((1 << (8 * size)) - 1) // 0xFF                      # 0x01 in every byte
    high, low = 0x80 * ones, 0x7F * ones
    candidates = [raw] + [_bytewise_sub(x, y, high, low).to_bytes(size, "little")
                          for y in (a, b)]                      # none, sub, up
    out = []
    for i in range(height):
        lo, hi = i * stride, (i + 1) * stride
        best, best_cost = 0, -1
        for kind, data in enumerate(candidates):
            cost = sum(data[lo:hi:_SAMPLE].translate(_ABS))
            if best_cost < 0 or cost < best_cost:
                best, best_cost = kind, cost
        out.append(bytes((best,)) + candidates[best][lo:hi])
    return out


def _filtered_numpy(np, raw: bytes, height: int, stride: int, bpp: int) -> bytes:
    """The image data _filtered gives, byte for byte, computed with numpy: its loops release
    the GIL, so the writer thread's filtering does not hold back a training thread (2.5 ms of
    Python a 256x256 RGB image took with the integer arithmetic, under the GIL throughout)."""
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, stride)
    sub = rows.copy()
    sub[:, bpp:] -= rows[:, :-bpp]                       # uint8: mod 256, as PNG's filters
    up = rows.copy()
    up[1:] -= rows[:-1]
    candidates = np.stack([rows, sub, up])               # none, sub, up
    sample = candidates[:, :, ::_SAMPLE].astype(np.int32)
    cost = np.minimum(sample, 256 - sample).sum(axis=2)   # each row's cost for each filter
    best = cost.argmin(axis=0)                           # the first least, as _filtered picks
    out = np.empty((height, stride + 1), dtype=np.uint8)
    out[:, 0] = best
    out[:, 1:] = candidates[best, np.arange(height)]
    return out.tobytes()


def encode_png(pixels: bytes, width: int, height: int, channels: int, level: int = LEVEL) -> bytes:
    """A PNG file of `pixels`: height rows of width pixels of `channels` bytes (1 grey, 2 grey
    and alpha, 3 RGB, 4 RGBA), row after row, as numpy's uint8 HxWxC array.tobytes() gives."""
    if channels not in _COLOUR_TYPE:
        raise InvalidArgumentError(f"a PNG pixel has 1, 2, 3 or 4 channels, not {channels}")
    if width < 1 or height < 1 or len(pixels) != width * height * channels:
        raise InvalidArgumentError(f"{len(pixels)} bytes are not {height}x{width}x{channels} pixels")
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[channels], 0, 0, 0)
    np = sys.modules.get("numpy")          # loaded by now when the pixels came from an array
    if np is not None:
        data = _filtered_numpy(np, bytes(pixels), height, width * channels, channels)
    else:
        data = b"".join(_filtered(bytes(pixels), height, width * channels, channels))
    return (PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(data, level)) + _chunk(b"IEND", b""))


class Header(NamedTuple):
    """What an image file's header says: "png" or "jpg", its size, its channels (a palette PNG
    counts as 3, a CMYK JPEG as 4)."""
    format: str
    width: int
    height: int
    channels: int


def image_format(data: bytes) -> str | None:
    """"png" or "jpg" by the file's signature, else None."""
    if data.startswith(PNG_SIGNATURE):
        return "png"
    if data.startswith(JPEG_SIGNATURE):
        return "jpg"
    return None


def read_header(data: bytes) -> Header:
    """The header of PNG or JPEG bytes, or InvalidArgumentError saying what is wrong with it
    (the caller names the value)."""
    kind = image_format(data)
    if kind == "png":
        return _png_header(data)
    if kind == "jpg":
        return _jpeg_header(data)
    raise InvalidArgumentError(f"bytes starting {bytes(data[:12])!r} are not PNG or JPEG")


def _png_header(data: bytes) -> Header:
    # The IHDR chunk comes first: length 13, "IHDR", width, height, depth, colour type, ..., CRC.
    ihdr = data[8:33]
    if len(ihdr) < 25 or ihdr[:8] != b"\x00\x00\x00\x0dIHDR":
        raise InvalidArgumentError("PNG bytes without the IHDR chunk a PNG starts with")
    if struct.unpack(">I", ihdr[21:25])[0] != zlib.crc32(ihdr[4:21]):
        raise InvalidArgumentError("PNG bytes whose IHDR chunk fails its CRC")
    width, height, _depth, colour = struct.unpack(">IIBB", ihdr[8:18])
    if colour not in _CHANNELS:
        raise InvalidArgumentError(f"PNG bytes with colour type {colour}, which PNG does not define")
    return Header("png", width, height, _CHANNELS[colour])


# Start-of-frame markers (baseline, progressive, lossless, arithmetic...): they carry the size.
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
# Markers without a length field: TEM, RST0-7, SOI (EOI ends the search).
_STANDALONE = {0x01, *range(0xD0, 0xD9)}


def _jpeg_header(data: bytes) -> Header:
    pos, end = 2, len(data)
    while pos < end:
        if data[pos] != 0xFF:
            raise InvalidArgumentError(f"JPEG bytes with no marker at byte {pos}")
        while pos < end and data[pos] == 0xFF:                   # fill bytes before a marker
            pos += 1
        if pos >= end:
            break
        marker = data[pos]
        pos += 1
        if marker in _STANDALONE:
            continue
        if marker == 0xD9:                                        # EOI before any frame
            break
        if pos + 2 > end:
            break
        length = struct.unpack(">H", data[pos:pos + 2])[0]
        if marker in _SOF:
            if length < 8 or pos + 8 > end:
                break
            _precision, height, width, components = struct.unpack(">BHHB", data[pos + 2:pos + 8])
            return Header("jpg", width, height, components)
        if length < 2:
            raise InvalidArgumentError(f"JPEG bytes with a segment of length {length} at byte {pos}")
        pos += length
    raise InvalidArgumentError("JPEG bytes that end before their frame header (no width and height)")
