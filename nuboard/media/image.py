"""nb.Image: one image a run logs, from an array, a tensor, a PIL image, PNG/JPEG bytes or a file.

The constructor runs on the training thread: it checks what it is given, raises one clear error
naming the value and the rule, and copies the pixels (HxWxC uint8 bytes) or the file's bytes, so
the caller may change or free its object right after. `encode()` runs later on a writer thread:
it writes the pixels as PNG with the standard library (nuboard.media.png), or hands back PNG or
JPEG bytes exactly as they were given.

    Image(array)                          # HxW, HxWx1/3/4 or CxHxW (C 1, 3 or 4): uint8, bool,
                                          # integers in 0..255 or floats in [0, 1]
    Image(tensor, dataformats="CHW")      # TensorBoard's layout strings; on any device
    Image(pil_image) / Image(png_bytes) / Image("plots/loss.png", caption="epoch 3")

numpy, torch and PIL are looked up in sys.modules and imported only when the object is one of
theirs: an object cannot be a numpy array unless numpy has been imported.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media
from nuboard.media.png import encode_png, image_format, read_header
from nuboard.media.values import check_caption

MAX_SIDE = 8192                 # pixels a side: a larger image is refused
MAX_RAW_BYTES = 256_000_000     # H*W*C bytes of pixels (256 MB): a larger image is refused
FILE_EXTENSIONS = (".png", ".jpg", ".jpeg")
CHANNELS = (1, 3, 4)            # of an array or tensor: grey, RGB, RGBA (a PIL "LA" image gives 2)

_WHO = "nb.Image"
_SHAPES = "HxW, HxWxC or CxHxW (C 1, 3 or 4)"
_LAYOUT_RULE = ("a 3-axis image is CxHxW when its first axis is 1, 3 or 4 and its last is not, "
                "else HxWxC; dataformats= says which")
_ACCEPTED = ("a numpy array, a torch tensor, a PIL image, PNG or JPEG bytes, "
             "or the path of a .png, .jpg or .jpeg file")
# PIL modes taken as they are, or converted to the nearest of L, LA, RGB, RGBA.
_PIL_MODES = {"1": "L", "L": "L", "LA": "LA", "La": "LA", "PA": "RGBA", "RGB": "RGB",
              "RGBA": "RGBA", "RGBa": "RGBA", "RGBX": "RGB", "CMYK": "RGB", "YCbCr": "RGB",
              "LAB": "RGB", "HSV": "RGB"}
# PIL modes of 16- or 32-bit values: taken as their numpy array, under the array rules.
_PIL_ARRAY_MODES = ("I", "F", "I;16", "I;16L", "I;16B", "I;16N")
# What bytes that are not PNG or JPEG look like, for the message.
_OTHER_FORMATS = ((b"GIF8", "GIF"), (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"),
                  (b"<svg", "SVG"), (b"<?xml", "XML or SVG"), (b"<!DOCTYPE", "HTML or SVG"),
                  (b"<html", "HTML"), (b"\x00\x00\x01\x00", "ICO"))


class Image(Media):
    """One image: its pixels (or PNG/JPEG bytes as given), its size and an optional caption.

    data: a numpy array or torch tensor (HxW, HxWxC or CxHxW with C 1, 3 or 4; uint8, bool as
    0/255, other integers in 0..255, or floats in [0, 1] scaled by 255, rounded and clipped), a
    PIL image, PNG or JPEG bytes, or the path (str or os.PathLike) of a .png/.jpg/.jpeg file.
    caption: a str of at most 1,000 characters, or None.
    dataformats: for an array or tensor, the order of its axes as TensorBoard writes it ("CHW",
    "HWC", "HW" or another order of those letters); None reads a 3-axis array as CxHxW when its
    first axis is 1, 3 or 4 and its last is not, else HxWxC. Other kinds of data carry their own
    layout and ignore it.

    Attributes: width, height, channels (1 grey, 2 grey and alpha, 3 RGB, 4 RGBA; a JPEG's or
    PNG's own count for bytes kept as given), caption, format ("png" or "jpg", the file
    encode() gives), nbytes (what the object holds in memory).
    """
    kind = "image"
    in_log = False

    def __init__(self, data: Any, caption: str | None = None, *,
                 dataformats: str | None = None) -> None:
        self.caption = check_caption(caption, _WHO)
        layout = _check_dataformats(dataformats)
        self._pixels: bytes | None = None       # HxWxC uint8, row after row
        self._file: bytes | None = None         # PNG or JPEG bytes kept as given
        self.format = "png"
        self.width = self.height = self.channels = 0
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._take_file(bytes(data))
        elif isinstance(data, (str, os.PathLike)):
            self._take_path(data)
        else:
            self._take_object(data, layout)

    @property
    def nbytes(self) -> int:
        """Bytes of pixels or file this image holds until it is encoded."""
        return len(self._file if self._file is not None else self._pixels or b"")

    def encode(self) -> Encoded:
        """The image as a file: PNG of the copied pixels, or the PNG/JPEG bytes as given."""
        meta = {"width": self.width, "height": self.height, "channels": self.channels,
                "caption": self.caption}
        if self._file is not None:
            return Encoded(self._file, self.format, meta)
        assert self._pixels is not None
        return Encoded(encode_png(self._pixels, self.width, self.height, self.channels), "png", meta)

    def __repr__(self) -> str:
        caption = f", caption={self.caption!r}" if self.caption is not None else ""
        return f"Image({self.height}x{self.width}x{self.channels} {self.format}{caption})"

    # -- what the constructor takes ------------------------------------------------------------

    def _take_object(self, data: Any, layout: str | None) -> None:
        np = sys.modules.get("numpy")
        if np is not None and isinstance(data, (np.ndarray, np.generic)):
            arr = np.asarray(data)
            self._take_array(arr, layout, _noun(arr.dtype.name, "array", arr.shape))
            return
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(data, torch.Tensor):
            self._take_tensor(data, layout)
            return
        pil = sys.modules.get("PIL.Image")
        if pil is not None and isinstance(data, pil.Image):
            self._take_pil(data)
            return
        kind = type(data)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        raise InvalidTypeError(f"{_WHO} takes {_ACCEPTED}, not {name}")

    def _take_array(self, arr: Any, layout: str | None, noun: str) -> None:
        import numpy as np
        _check_dtype_kind(arr.dtype.kind, noun)
        axes, height, width, channels = _hwc_axes(tuple(arr.shape), layout, noun)
        pixels = _to_uint8(np, arr, noun)
        self._pixels = pixels.transpose(axes).tobytes()      # a C-order copy: HxWxC
        self.width, self.height, self.channels = width, height, channels

    def _take_tensor(self, tensor: Any, layout: str | None) -> None:
        import torch
        noun = _noun(str(tensor.dtype), "tensor", tuple(tensor.shape))
        if tensor.is_complex() or not (tensor.is_floating_point() or tensor.dtype == torch.bool
                                       or tensor.dtype in _torch_integers(torch)):
            raise InvalidTypeError(f"{_WHO}: {noun} cannot be an image: give uint8, bool, "
                                   "integers in 0..255 or floats in [0, 1]")
        _hwc_axes(tuple(tensor.shape), layout, noun)         # refuse before copying to the CPU
        cpu = tensor.detach().to("cpu")
        if tensor.layout != torch.strided:
            cpu = cpu.to_dense()
        if cpu.is_floating_point() and cpu.dtype not in (torch.float16, torch.float32, torch.float64):
            cpu = cpu.float()                                # bfloat16, float8: numpy has none
        self._take_array(cpu.resolve_conj().resolve_neg().numpy(), layout, noun)

    def _take_pil(self, image: Any) -> None:
        width, height = image.size
        noun = f"a PIL image of mode {image.mode} and size {width}x{height}"
        try:
            if image.mode in _PIL_ARRAY_MODES:
                import numpy as np
                arr = np.asarray(image)
                self._take_array(arr, "HW" if arr.ndim == 2 else None, noun)
                return
            mode = _PIL_MODES.get(image.mode)
            if mode is None:
                if image.mode == "P":
                    alpha = "transparency" in image.info or getattr(image.palette, "mode", "") == "RGBA"
                    mode = "RGBA" if alpha else "RGB"
                else:
                    mode = "RGBA" if "A" in image.mode else "RGB"
            _check_size(height, width, len(mode), noun)
            converted = image if image.mode == mode else image.convert(mode)
            self._pixels = converted.tobytes()
        except (OSError, ValueError) as exc:
            if isinstance(exc, (InvalidArgumentError, InvalidTypeError)):
                raise
            raise InvalidArgumentError(f"{_WHO}: {noun} cannot be read: {exc}") from None
        self.width, self.height, self.channels = width, height, len(mode)

    def _take_file(self, data: bytes, path: str | None = None) -> None:
        """PNG or JPEG bytes, given as such (path None) or read from the file `path`."""
        given = "the bytes given" if path is None else f"the file {path}"
        if not data:
            raise InvalidArgumentError(f"{_WHO}: {given} are empty: give PNG or JPEG bytes"
                                       if path is None else f"{_WHO}: {given} is empty")
        kind = image_format(data)
        if kind is None:
            looks = next((f" ({name})" for sig, name in _OTHER_FORMATS
                          if data[:64].lstrip()[:len(sig)].lower() == sig.lower()), "")
            raise InvalidArgumentError(
                f"{_WHO}: {given} start{'' if path is None else 's'} with {data[:16]!r}{looks}, "
                "not PNG's or JPEG's signature: NuBoard keeps PNG and JPEG files as they are and "
                "never stores SVG or HTML; give PNG or JPEG, or the pixels as an array or a PIL image")
        noun = f"the {kind.replace('jpg', 'JPEG').upper()} " + ("given" if path is None else f"file {path}")
        try:
            header = read_header(data)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{_WHO}: {noun} cannot be read: {exc}") from None
        _check_size(header.height, header.width, header.channels, noun)
        self._file = data
        self.format = header.format
        self.width, self.height, self.channels = header.width, header.height, header.channels

    def _take_path(self, path: Any) -> None:
        name = os.fsdecode(os.fspath(path))
        shown = repr(name if len(name) <= 200 else name[:200] + "...")
        if not os.path.exists(name):
            raise InvalidArgumentError(f"{_WHO}: there is no file at {shown}")
        if not os.path.isfile(name):
            raise InvalidArgumentError(f"{_WHO}: {shown} is not a file: give a .png, .jpg or .jpeg file")
        if not name.lower().endswith(FILE_EXTENSIONS):
            raise InvalidArgumentError(f"{_WHO}: {shown} is not a PNG or JPEG file: give a .png, "
                                       ".jpg or .jpeg file, or the pixels as an array")
        size = os.path.getsize(name)
        if size > MAX_RAW_BYTES:
            raise InvalidArgumentError(f"{_WHO}: the file {shown} has {size:,} bytes: "
                                       f"at most {MAX_RAW_BYTES:,} (256 MB)")
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InvalidArgumentError(f"{_WHO}: the file {shown} cannot be read: {exc}") from None
        self._take_file(data, shown)


# -- the rules ---------------------------------------------------------------------------------

def _noun(dtype: str, what: str, shape: tuple[int, ...]) -> str:
    article = "an" if dtype[:1] in "aeio" else "a"
    return f"{article} {dtype} {what} of shape {tuple(shape)}"


def _check_dataformats(dataformats: Any) -> str | None:
    """The layout in upper case, e.g. "CHW", or None for the rule."""
    if dataformats is None:
        return None
    if not isinstance(dataformats, str):
        raise InvalidTypeError(f"{_WHO}: dataformats must be a str such as 'CHW', 'HWC' or 'HW', "
                               f"not {type(dataformats).__name__}")
    layout = dataformats.upper()
    if "N" in layout:
        raise InvalidArgumentError(f"{_WHO}: dataformats {dataformats!r} is a batch: one image "
                                   "per entry; log each image on its own ('CHW', 'HWC' or 'HW')")
    if sorted(layout) not in (sorted("HWC"), sorted("HW")):
        raise InvalidArgumentError(f"{_WHO}: dataformats {dataformats!r} is not 'CHW', 'HWC', "
                                   "'HW' or another order of those letters")
    return layout


def _check_dtype_kind(kind: str, noun: str) -> None:
    if kind not in "biuf":
        raise InvalidTypeError(f"{_WHO}: {noun} cannot be an image: give uint8, bool, "
                               "integers in 0..255 or floats in [0, 1]")


def _check_size(height: int, width: int, channels: int, noun: str) -> None:
    if height == 0 or width == 0:
        raise InvalidArgumentError(f"{_WHO}: {noun} is empty ({height}x{width} pixels)")
    if height > MAX_SIDE or width > MAX_SIDE:
        raise InvalidArgumentError(f"{_WHO}: {noun} is {height}x{width} pixels (HxW): "
                                   f"at most {MAX_SIDE:,} a side")
    raw = height * width * channels
    if raw > MAX_RAW_BYTES:
        raise InvalidArgumentError(f"{_WHO}: {noun} holds {raw:,} bytes of pixels "
                                   f"({height}x{width}x{channels}): at most {MAX_RAW_BYTES:,} (256 MB)")


def _hwc_axes(shape: tuple[int, ...], layout: str | None,
              noun: str) -> tuple[tuple[int, ...], int, int, int]:
    """The axes that put an array of `shape` in HxWxC (HxW) order, and its height, width and
    channels; or the error that refuses the shape."""
    ndim = len(shape)
    if layout is None:
        if ndim == 2:
            layout = "HW"
        elif ndim == 3:
            layout = "CHW" if shape[0] in CHANNELS and shape[-1] not in CHANNELS else "HWC"
        elif ndim == 4:
            raise InvalidArgumentError(f"{_WHO}: {noun} has 4 axes, a batch: give one image per "
                                       f"entry, as {_SHAPES}, and log each on its own")
        else:
            axes = "1 axis" if ndim == 1 else f"{ndim} axes"
            raise InvalidArgumentError(f"{_WHO}: {noun} has {axes}: give {_SHAPES}")
        guessed = True
    else:
        if len(layout) != ndim:
            raise InvalidArgumentError(f"{_WHO}: dataformats {layout!r} names {len(layout)} axes "
                                       f"but {noun} has {ndim}")
        guessed = False
    if 0 in shape:
        raise InvalidArgumentError(f"{_WHO}: {noun} is empty")
    height, width = shape[layout.index("H")], shape[layout.index("W")]
    channels = shape[layout.index("C")] if "C" in layout else 1
    if channels not in CHANNELS:
        rule = f" ({_LAYOUT_RULE})" if guessed else ""
        raise InvalidArgumentError(f"{_WHO}: {noun} read as {layout} has {channels} channels: "
                                   f"give 1 (grey), 3 (RGB) or 4 (RGBA){rule}")
    _check_size(height, width, channels, noun)
    return tuple(layout.index(axis) for axis in "HWC" if axis in layout), height, width, channels


def _to_uint8(np: Any, arr: Any, noun: str) -> Any:
    """The array's values as uint8 (same shape), or the error that refuses them."""
    kind = arr.dtype.kind
    if kind == "u" and arr.dtype.itemsize == 1:
        return arr
    if kind == "b":
        return arr.view(np.uint8) * np.uint8(255)
    if kind in "iu":
        low, high = int(arr.min()), int(arr.max())
        if low < 0 or high > 255:
            raise InvalidArgumentError(f"{_WHO}: {noun} has values from {low} to {high}: integer "
                                       "pixels must lie in 0..255 (floats in [0, 1])")
        return arr.astype(np.uint8)
    with np.errstate(invalid="ignore"):
        low, high = float(arr.min()), float(arr.max())
    if low != low or high != high:
        raise InvalidArgumentError(f"{_WHO}: {noun} holds NaN: float pixels must be finite, in [0, 1]")
    if math.isinf(low) or math.isinf(high):
        raise InvalidArgumentError(f"{_WHO}: {noun} holds an infinity: float pixels must be "
                                   "finite, in [0, 1]")
    if low < 0 or high > 1:
        raise InvalidArgumentError(f"{_WHO}: {noun} has values from {low:g} to {high:g}: float "
                                   "pixels must lie in [0, 1] (they are scaled by 255); give "
                                   "uint8 for 0..255")
    work = arr.astype(np.float64 if arr.dtype.itemsize >= 8 else np.float32)
    work *= 255
    np.rint(work, out=work)
    np.clip(work, 0, 255, out=work)
    return work.astype(np.uint8)


def _torch_integers(torch: Any) -> tuple[Any, ...]:
    names = ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
    return tuple(getattr(torch, name) for name in names if hasattr(torch, name))
