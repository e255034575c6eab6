"""Issue 32, item 1: nb.Image, from every kind of input it takes to the file encode() writes.

Every round trip decodes what encode() gave with Pillow (an independent decoder) and compares
the pixels exactly; the layout rule is checked on the shapes where it has to choose; a caller
who changes its array after logging changes nothing; every refusal is one error with its
message; `import nuboard.media.image` imports none of numpy, PIL and torch.
"""
from __future__ import annotations

import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image as PILImage

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media
from nuboard.media.image import Image
from nuboard.media.png import encode_png, read_header

RNG = np.random.default_rng(32)


def pixels(shape, dtype=np.uint8) -> np.ndarray:
    return RNG.integers(0, 256, shape, dtype=np.uint8).astype(dtype)


def decoded(encoded: Encoded) -> np.ndarray:
    """What Pillow reads from the encoded file, as HxWxC (HxW for grey) uint8."""
    with PILImage.open(io.BytesIO(encoded.data)) as image:
        assert image.format.lower() == {"png": "png", "jpg": "jpeg"}[encoded.ext]
        return np.asarray(image.convert(image.mode if image.mode != "P" else "RGBA"))


def png_of(image: PILImage.Image, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG", **options)
    return buf.getvalue()


def jpeg_of(image: PILImage.Image, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "JPEG", **options)
    return buf.getvalue()


def assert_round_trip(image: Image, expected: np.ndarray) -> None:
    """encode() gives a PNG whose pixels are `expected` (HxW, or HxWxC), and says its size."""
    encoded = image.encode()
    assert encoded.ext == "png"
    got = decoded(encoded)
    expected = expected[:, :, 0] if expected.ndim == 3 and expected.shape[2] == 1 else expected
    assert got.shape == expected.shape
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, expected)
    channels = 1 if expected.ndim == 2 else expected.shape[2]
    assert encoded.meta == {"width": expected.shape[1], "height": expected.shape[0],
                            "channels": channels, "caption": image.caption}
    assert (image.width, image.height, image.channels) == (expected.shape[1], expected.shape[0],
                                                          channels)


def test_an_image_is_a_media_kind_kept_in_a_file():
    image = Image(pixels((2, 3)), caption="first")
    assert isinstance(image, Media)
    assert (image.kind, image.in_log, image.caption, image.format) == ("image", False, "first", "png")
    assert image.nbytes == 6
    with pytest.raises(NotImplementedError):
        image.record()


# -- numpy arrays --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 1), (5, 7, 3), (5, 7, 4), (1, 1), (1, 9, 3),
                                   (9, 1, 4), (64, 48, 3)])
def test_a_uint8_array_in_hwc_round_trips(shape):
    array = pixels(shape)
    assert_round_trip(Image(array), array)


def test_a_uint8_array_in_chw_round_trips():
    array = pixels((3, 5, 7))
    assert_round_trip(Image(array), array.transpose(1, 2, 0))
    rgba = pixels((4, 6, 2))
    assert_round_trip(Image(rgba), rgba.transpose(1, 2, 0))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_floats_are_scaled_by_255_rounded_and_clipped(dtype):
    values = [0.0, 1.0, 0.5, 1 / 255, 0.4 / 255, 0.6 / 255, 254.4 / 255, 254.6 / 255,
              np.nextafter(1.0, 0.0), 5e-324, 0.25, 0.75]
    array = np.array(values, dtype=dtype).reshape(3, 4)
    # round half to even after the product in the array's own precision (float32 for float16)
    work = array.astype(np.float32 if dtype != np.float64 else np.float64) * 255
    expected = np.clip(np.rint(work), 0, 255).astype(np.uint8)
    assert_round_trip(Image(array), expected)
    assert expected[0, 0] == 0 and expected[0, 1] == 255            # the edges 0 and 1
    assert expected[0, 2] == 128 and expected[0, 3] == 1
    assert expected[1, 0] == 0 and expected[1, 1] == 1


def test_a_float_image_in_chw_keeps_its_layout():
    array = RNG.random((3, 8, 6), dtype=np.float32)
    expected = np.clip(np.rint(array * np.float32(255)), 0, 255).astype(np.uint8)
    assert_round_trip(Image(array), expected.transpose(1, 2, 0))


def test_bool_is_black_and_white():
    array = RNG.random((6, 5)) > 0.5
    assert_round_trip(Image(array), array.astype(np.uint8) * 255)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint64])
def test_other_integers_in_0_to_255_are_taken(dtype):
    array = (pixels((4, 5, 3)) // 2).astype(dtype) if dtype == np.int8 else pixels((4, 5, 3), dtype)
    assert_round_trip(Image(array), array.astype(np.uint8))


def test_a_strided_view_and_a_big_endian_array_are_read_right():
    base = pixels((10, 12, 3))
    view = base[::2, ::-3]
    assert_round_trip(Image(view), np.ascontiguousarray(view))
    big = (RNG.random((4, 4)) ).astype(">f8")
    expected = np.clip(np.rint(big.astype(np.float64) * 255), 0, 255).astype(np.uint8)
    assert_round_trip(Image(big), expected)


# -- the layout rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape, hwc", [
    ((3, 3, 3), (3, 3, 3)),        # first and last both 1/3/4: HxWxC
    ((4, 5, 3), (4, 5, 3)),        # last is 3: HxWxC, though the first is 4
    ((1, 5, 7), (5, 7, 1)),        # first 1, last 7: CxHxW, grey
    ((5, 7, 1), (5, 7, 1)),        # HxWx1
    ((3, 5, 4), (3, 5, 4)),        # last 4: HxWxC RGBA
    ((4, 5, 6), (5, 6, 4)),        # first 4, last 6: CxHxW RGBA
    ((1, 1, 1), (1, 1, 1)),
])
def test_the_layout_rule_on_shapes_that_could_be_either(shape, hwc):
    array = pixels(shape)
    image = Image(array)
    expected = array if hwc == shape else array.transpose(1, 2, 0)
    assert expected.shape == hwc
    assert (image.height, image.width, image.channels) == hwc
    assert_round_trip(image, expected)


@pytest.mark.parametrize("dataformats, to_hwc", [
    ("CHW", (1, 2, 0)), ("HWC", (0, 1, 2)), ("chw", (1, 2, 0)), ("WHC", (1, 0, 2)), ("CWH", (2, 1, 0)),
])
def test_dataformats_says_the_layout(dataformats, to_hwc):
    array = pixels((3, 3, 3))
    assert_round_trip(Image(array, dataformats=dataformats), array.transpose(to_hwc))


def test_dataformats_hw_and_wh():
    array = pixels((4, 6))
    assert_round_trip(Image(array, dataformats="HW"), array)
    assert_round_trip(Image(array, dataformats="WH"), array.T)


def test_dataformats_is_ignored_by_data_that_carries_its_layout(tmp_path):
    rgb = PILImage.fromarray(pixels((5, 6, 3)))
    assert_round_trip(Image(rgb, dataformats="CHW"), np.asarray(rgb))
    encoded = Image(png_of(rgb), dataformats="CHW").encode()
    assert (encoded.meta["width"], encoded.meta["height"]) == (6, 5)


# -- torch tensors -------------------------------------------------------------------------------

def test_a_cpu_tensor_in_chw_and_in_hwc():
    chw = torch.from_numpy(pixels((3, 6, 5)))
    assert_round_trip(Image(chw), chw.numpy().transpose(1, 2, 0))
    hwc = torch.from_numpy(pixels((6, 5, 4)))
    assert_round_trip(Image(hwc), hwc.numpy())
    assert_round_trip(Image(chw, dataformats="CHW"), chw.numpy().transpose(1, 2, 0))


def test_a_float_tensor_that_requires_grad():
    tensor = torch.rand(3, 7, 5, requires_grad=True)
    image = Image(tensor * 1.0)                                 # a non-leaf, part of a graph
    expected = np.clip(np.rint(tensor.detach().numpy() * np.float32(255)), 0, 255).astype(np.uint8)
    assert_round_trip(image, expected.transpose(1, 2, 0))


def test_bfloat16_float8_bool_and_integer_tensors():
    half = torch.tensor([[0.0, 1.0], [0.5, 0.25]], dtype=torch.bfloat16)
    assert_round_trip(Image(half), np.array([[0, 255], [128, 64]], dtype=np.uint8))
    flags = torch.tensor([[True, False, True]])
    assert_round_trip(Image(flags), np.array([[255, 0, 255]], dtype=np.uint8))
    ints = torch.tensor([[0, 17, 255]], dtype=torch.int64)
    assert_round_trip(Image(ints), np.array([[0, 17, 255]], dtype=np.uint8))
    for dtype in (torch.uint16, torch.int32):
        assert_round_trip(Image(ints.to(dtype)), np.array([[0, 17, 255]], dtype=np.uint8))
    eight = torch.tensor([[0.0, 1.0, 0.5]]).to(torch.float8_e4m3fn)
    assert_round_trip(Image(eight), np.array([[0, 255, 128]], dtype=np.uint8))


def test_a_non_contiguous_tensor():
    tensor = torch.from_numpy(pixels((8, 6, 3)))[::2].permute(1, 0, 2)
    assert_round_trip(Image(tensor), tensor.contiguous().numpy())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_a_cuda_tensor_is_copied_to_the_cpu():
    array = pixels((3, 16, 16))
    tensor = torch.from_numpy(array).cuda()
    image = Image(tensor)
    tensor.zero_()
    assert_round_trip(image, array.transpose(1, 2, 0))


# -- PIL images ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA"])
def test_a_pil_image_of_a_plain_mode(mode):
    channels = len(mode)
    array = pixels((7, 9, channels))
    image = PILImage.fromarray(array[:, :, 0] if channels == 1 else array, mode)
    assert_round_trip(Image(image), np.asarray(image))


def test_a_palette_image_becomes_rgb_or_rgba():
    rgb = PILImage.fromarray(pixels((8, 8, 3))).quantize(16)
    assert rgb.mode == "P"
    taken = Image(rgb)
    assert taken.channels == 3
    assert_round_trip(taken, np.asarray(rgb.convert("RGB")))
    with_alpha = rgb.copy()
    with_alpha.info["transparency"] = 0
    assert_round_trip(Image(with_alpha), np.asarray(with_alpha.convert("RGBA")))


@pytest.mark.parametrize("mode, expected_mode", [("1", "L"), ("CMYK", "RGB"), ("YCbCr", "RGB"),
                                                 ("RGBX", "RGB"), ("HSV", "RGB")])
def test_other_pil_modes_are_converted(mode, expected_mode):
    image = PILImage.fromarray(pixels((6, 5, 3))).convert(mode)
    assert_round_trip(Image(image), np.asarray(image.convert(expected_mode)))


def test_16_bit_and_float_pil_images_follow_the_array_rules():
    small = PILImage.fromarray(pixels((4, 5)).astype(np.uint16))
    assert small.mode.startswith("I;16")
    assert_round_trip(Image(small), np.asarray(small).astype(np.uint8))
    wide = PILImage.fromarray(np.full((4, 5), 4000, np.uint16))
    with pytest.raises(InvalidArgumentError,
                       match=r"mode I;16.* from 4000 to 4000: integer pixels must lie in 0\.\.255"):
        Image(wide)
    floats = PILImage.fromarray(np.full((2, 2), 0.5, np.float32))
    assert floats.mode == "F"
    assert_round_trip(Image(floats), np.full((2, 2), 128, np.uint8))


def test_a_pil_image_read_from_a_file(tmp_path):
    array = pixels((10, 11, 3))
    PILImage.fromarray(array).save(tmp_path / "a.png")
    with PILImage.open(tmp_path / "a.png") as opened:
        image = Image(opened)
    assert_round_trip(image, array)


# -- PNG and JPEG bytes, and files ---------------------------------------------------------------

def test_png_bytes_are_kept_as_they_are():
    array = pixels((12, 10, 4))
    data = png_of(PILImage.fromarray(array))
    image = Image(bytearray(data), caption="given")
    encoded = image.encode()
    assert encoded == Encoded(data, "png", {"width": 10, "height": 12, "channels": 4,
                                            "caption": "given"})
    np.testing.assert_array_equal(decoded(encoded), array)
    assert Image(memoryview(data)).encode().data == data


@pytest.mark.parametrize("mode, channels", [("L", 1), ("RGB", 3), ("CMYK", 4)])
@pytest.mark.parametrize("options", [{}, {"progressive": True}, {"exif": b"Exif\x00\x00" + b"\x00" * 40},
                                     {"quality": 100, "subsampling": 0}])
def test_jpeg_bytes_are_kept_as_they_are(mode, channels, options):
    image = PILImage.fromarray(pixels((13, 17, 3))).convert(mode)
    data = jpeg_of(image, **options)
    encoded = Image(data).encode()
    assert encoded == Encoded(data, "jpg", {"width": 17, "height": 13, "channels": channels,
                                            "caption": None})
    with PILImage.open(io.BytesIO(data)) as back:
        assert back.size == (17, 13)


@pytest.mark.parametrize("colour, mode, channels", [(0, "L", 1), (2, "RGB", 3), (3, "P", 3),
                                                    (4, "LA", 2), (6, "RGBA", 4)])
def test_the_png_header_says_width_height_and_channels(colour, mode, channels):
    image = PILImage.fromarray(pixels((3, 4, 3))).convert(mode)
    data = png_of(image)
    assert data[25] == colour
    assert read_header(data) == ("png", 4, 3, channels)


@pytest.mark.parametrize("name", ["a.png", "b.jpg", "c.JPEG"])
def test_a_file_path_as_str_or_path(tmp_path, name):
    array = pixels((9, 8, 3))
    path = tmp_path / name
    PILImage.fromarray(array).save(path)
    data = path.read_bytes()
    for name_or_path in (str(path), path):
        encoded = Image(name_or_path).encode()
        assert encoded.data == data
        assert encoded.ext == ("png" if name.endswith("png") else "jpg")
        assert (encoded.meta["width"], encoded.meta["height"]) == (8, 9)


def test_a_file_is_read_when_the_image_is_made(tmp_path):
    path = tmp_path / "later.png"
    first = png_of(PILImage.fromarray(pixels((4, 4, 3))))
    path.write_bytes(first)
    image = Image(path)
    path.write_bytes(png_of(PILImage.fromarray(pixels((2, 2, 3)))))
    path.unlink()
    assert image.encode().data == first


# -- copies: the caller may change its object after logging ---------------------------------------

def test_changing_the_callers_objects_afterwards_changes_nothing():
    array = pixels((6, 6, 3))
    kept = array.copy()
    floats = RNG.random((6, 6))
    floats_kept = floats.copy()
    tensor = torch.from_numpy(pixels((3, 6, 6)))
    tensor_kept = tensor.clone()
    pil = PILImage.fromarray(pixels((6, 6, 3)))
    pil_kept = np.asarray(pil).copy()
    data = bytearray(png_of(pil))
    data_kept = bytes(data)
    images = [Image(array), Image(floats), Image(tensor), Image(pil), Image(data)]
    array[:] = 0
    floats[:] = 1.0
    tensor.zero_()
    pil.paste((1, 2, 3), (0, 0, 6, 6))
    data[40:60] = b"\0" * 20
    assert_round_trip(images[0], kept)
    assert_round_trip(images[1], np.clip(np.rint(floats_kept * 255), 0, 255).astype(np.uint8))
    assert_round_trip(images[2], tensor_kept.numpy().transpose(1, 2, 0))
    assert_round_trip(images[3], pil_kept)
    assert images[4].encode().data == data_kept


def test_no_reference_to_the_callers_object_is_kept():
    import gc
    import weakref

    class Owned(np.ndarray):
        pass
    array = pixels((4, 4, 3)).view(Owned)
    alive = weakref.ref(array)
    image = Image(array)
    del array
    gc.collect()
    assert alive() is None
    assert image.encode().meta["width"] == 4


# -- the encoder itself --------------------------------------------------------------------------

def idat_filters(data: bytes, height: int, stride: int) -> set[int]:
    """The filter-type bytes of a PNG of one IDAT chunk."""
    length = struct.unpack(">I", data[33:37])[0]
    assert data[37:41] == b"IDAT"
    raw = zlib.decompress(data[41:41 + length])
    return {raw[i * (stride + 1)] for i in range(height)}


def test_the_encoder_uses_sub_and_up_where_they_pay_and_decodes_exactly():
    across = np.tile(np.arange(0, 256, 4, dtype=np.uint8)[None, :, None], (16, 1, 3))
    down = across.transpose(1, 0, 2).copy()
    for array, kind in ((across, 1), (down, 2)):
        height, width, channels = array.shape
        data = encode_png(array.tobytes(), width, height, channels)
        assert kind in idat_filters(data, height, width * channels)
        with PILImage.open(io.BytesIO(data)) as back:
            np.testing.assert_array_equal(np.asarray(back), array)


@given(height=st.integers(1, 24), width=st.integers(1, 24), channels=st.sampled_from([1, 2, 3, 4]),
       seed=st.integers(0, 2**32 - 1), smooth=st.booleans())
def test_any_pixels_survive_the_encoder(height, width, channels, seed, smooth):
    rng = np.random.default_rng(seed)
    array = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
    if smooth:                                                # filters other than "none" win
        array = np.cumsum(array // 16, axis=1, dtype=np.uint8)
    data = encode_png(array.tobytes(), width, height, channels)
    with PILImage.open(io.BytesIO(data)) as back:
        back.load()
        got = np.asarray(back)
    np.testing.assert_array_equal(got, array[:, :, 0] if channels == 1 else array)


# -- refusals: one error each, with its message ----------------------------------------------------

def svg_bytes() -> bytes:
    return b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def png_with_bad_crc() -> bytes:
    data = bytearray(png_of(PILImage.fromarray(pixels((2, 2, 3)))))
    data[29] ^= 0xFF
    return bytes(data)


def png_header_only(width: int, height: int, colour: int = 2) -> bytes:
    body = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + body + struct.pack(">I", zlib.crc32(b"IHDR" + body))
    return b"\x89PNG\r\n\x1a\n" + chunk


REFUSED = [
    # (what, error, message pattern)
    (lambda: np.zeros((2, 3, 4, 5, 6)), InvalidArgumentError,
     r"^nb\.Image: a float64 array of shape \(2, 3, 4, 5, 6\) has 5 axes: give HxW, HxWxC or CxHxW \(C 1, 3 or 4\)$"),
    (lambda: np.zeros((8, 3, 4, 4), np.uint8), InvalidArgumentError,
     r"shape \(8, 3, 4, 4\) has 4 axes, a batch: give one image per entry"),
    (lambda: np.zeros(5, np.uint8), InvalidArgumentError, r"shape \(5,\) has 1 axis: give HxW"),
    (lambda: np.uint8(7), InvalidArgumentError, r"a uint8 array of shape \(\) has 0 axes"),
    (lambda: np.zeros((5, 5, 2), np.uint8), InvalidArgumentError,
     r"shape \(5, 5, 2\) read as HWC has 2 channels: give 1 \(grey\), 3 \(RGB\) or 4 \(RGBA\) \(a 3-axis"),
    (lambda: np.zeros((2, 5, 5), np.uint8), InvalidArgumentError, r"read as HWC has 5 channels"),
    (lambda: np.zeros((5, 4, 6), np.uint8), InvalidArgumentError, r"read as HWC has 6 channels"),
    (lambda: np.zeros((0, 4, 3), np.uint8), InvalidArgumentError, r"shape \(0, 4, 3\) is empty$"),
    (lambda: np.zeros((3, 0), np.uint8), InvalidArgumentError, r"shape \(3, 0\) is empty$"),
    (lambda: np.zeros((8193, 2), np.uint8), InvalidArgumentError,
     r"shape \(8193, 2\) is 8193x2 pixels \(HxW\): at most 8,192 a side"),
    (lambda: np.zeros((3, 8200, 8), np.uint8), InvalidArgumentError, r"is 8200x8 pixels"),
    (lambda: np.zeros((8192, 8192, 4), np.uint8), InvalidArgumentError,
     r"holds 268,435,456 bytes of pixels \(8192x8192x4\): at most 256,000,000 \(256 MB\)"),
    (lambda: np.array([[0.5, np.nan]]), InvalidArgumentError, r"float64 array of shape \(1, 2\) holds NaN"),
    (lambda: np.array([[0.5, np.inf]], np.float32), InvalidArgumentError, r"holds an infinity"),
    (lambda: np.array([[-np.inf, 0.5]]), InvalidArgumentError, r"holds an infinity"),
    (lambda: np.array([[-0.25, 0.5], [1.0, 3.5]]), InvalidArgumentError,
     r"has values from -0\.25 to 3\.5: float pixels must lie in \[0, 1\] \(they are scaled by 255\)"),
    (lambda: np.array([[0.0, 255.0]]), InvalidArgumentError, r"from 0 to 255: float pixels must lie in \[0, 1\]"),
    (lambda: np.array([[-1, 300]]), InvalidArgumentError,
     r"an int64 array of shape \(1, 2\) has values from -1 to 300: integer pixels must lie in 0\.\.255"),
    (lambda: np.zeros((3, 3), np.complex64), InvalidTypeError,
     r"a complex64 array of shape \(3, 3\) cannot be an image"),
    (lambda: np.zeros((3, 3), object), InvalidTypeError, r"an object array of shape \(3, 3\) cannot be an image"),
    (lambda: np.zeros((3, 3), "U2"), InvalidTypeError, r"cannot be an image"),
    (lambda: np.zeros((3, 3), "datetime64[s]"), InvalidTypeError, r"cannot be an image"),
    (lambda: torch.zeros(2, 3, 4, 5, 6), InvalidArgumentError,
     r"a torch\.float32 tensor of shape \(2, 3, 4, 5, 6\) has 5 axes"),
    (lambda: torch.zeros(3, 3, dtype=torch.complex64), InvalidTypeError,
     r"torch\.complex64 tensor .* cannot be an image"),
    (lambda: torch.full((2, 2), float("nan")), InvalidArgumentError,
     r"torch\.float32 tensor of shape \(2, 2\) holds NaN"),
    (lambda: torch.full((2, 2), 1.5), InvalidArgumentError, r"from 1\.5 to 1\.5: float pixels must lie in \[0, 1\]"),
    (lambda: torch.full((2, 2), 256), InvalidArgumentError, r"torch\.int64 tensor .* from 256 to 256"),
    (svg_bytes, InvalidArgumentError,
     r"^nb\.Image: the bytes given start with b'<svg xmlns=\"http' \(SVG\), not PNG's or JPEG's signature"),
    (lambda: b"GIF89a\x01\x00\x01\x00", InvalidArgumentError, r"start with b'GIF89a.*' \(GIF\), not PNG"),
    (lambda: b"<!DOCTYPE html><p>", InvalidArgumentError, r"\(HTML or SVG\)"),
    (lambda: b"hello", InvalidArgumentError, r"start with b'hello', not PNG's or JPEG's signature"),
    (lambda: b"", InvalidArgumentError, r"the bytes given are empty"),
    (png_with_bad_crc, InvalidArgumentError, r"the PNG given cannot be read: .*IHDR chunk fails its CRC"),
    (lambda: b"\x89PNG\r\n\x1a\n", InvalidArgumentError, r"the PNG given cannot be read: .*without the IHDR"),
    (lambda: png_header_only(9000, 10), InvalidArgumentError,
     r"the PNG given is 10x9000 pixels \(HxW\): at most 8,192"),
    (lambda: png_header_only(0, 10), InvalidArgumentError, r"the PNG given is empty \(10x0 pixels\)"),
    (lambda: png_header_only(8192, 8192, 6), InvalidArgumentError, r"holds 268,435,456 bytes"),
    (lambda: png_header_only(4, 4, 5), InvalidArgumentError, r"colour type 5"),
    (lambda: b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", InvalidArgumentError,
     r"the JPEG given cannot be read: JPEG bytes that end before their frame header"),
    (lambda: b"\xff\xd8\xff\xe0\x00\x01", InvalidArgumentError, r"JPEG given cannot be read: .*segment of length 1"),
    (lambda: [[0, 1], [1, 0]], InvalidTypeError,
     r"^nb\.Image takes a numpy array, a torch tensor, a PIL image, PNG or JPEG bytes, or the path .*, not list$"),
    (lambda: 3.5, InvalidTypeError, r"not float$"),
    (lambda: None, InvalidTypeError, r"not NoneType$"),
    (lambda: io.BytesIO(b"\x89PNG"), InvalidTypeError, r"not _io\.BytesIO$"),
]


@pytest.mark.parametrize("make, error, message", REFUSED, ids=range(len(REFUSED)))
def test_bad_data_is_refused_with_one_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        Image(make())


def test_bad_files_are_refused(tmp_path):
    (tmp_path / "pic.svg").write_bytes(svg_bytes())
    (tmp_path / "pic.png").write_bytes(svg_bytes())
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "folder.png").mkdir()
    cases = [
        (tmp_path / "missing.png", r"^nb\.Image: there is no file at '.*missing\.png'$"),
        (str(tmp_path / "pic.svg"), r"'.*pic\.svg' is not a PNG or JPEG file: give a \.png, \.jpg or \.jpeg file"),
        (tmp_path / "pic.png", r"the file '.*pic\.png' starts with b'<svg xmlns=.*' \(SVG\), not PNG's or JPEG's"),
        (tmp_path / "empty.jpg", r"the file '.*empty\.jpg' is empty$"),
        (tmp_path / "folder.png", r"'.*folder\.png' is not a file"),
        ("x" * 500, r"there is no file at 'x{200}\.\.\.'$"),
    ]
    for path, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            Image(path)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"caption": 3}, InvalidTypeError, r"^nb\.Image: caption must be a str or None, not int$"),
    ({"caption": b"bytes"}, InvalidTypeError, r"not bytes"),
    ({"caption": "c" * 1001}, InvalidArgumentError, r"a caption of 1,001 characters: at most 1,000$"),
    ({"dataformats": "NCHW"}, InvalidArgumentError, r"dataformats 'NCHW' is a batch: one image per entry"),
    ({"dataformats": "nhwc"}, InvalidArgumentError, r"dataformats 'nhwc' is a batch"),
    ({"dataformats": "CHWX"}, InvalidArgumentError, r"dataformats 'CHWX' is not 'CHW', 'HWC', 'HW' or another order"),
    ({"dataformats": "HHW"}, InvalidArgumentError, r"is not 'CHW'"),
    ({"dataformats": "HWC"[:1]}, InvalidArgumentError, r"is not 'CHW'"),
    ({"dataformats": 3}, InvalidTypeError, r"dataformats must be a str"),
    ({"dataformats": "CHW"}, InvalidArgumentError,
     r"dataformats 'CHW' names 3 axes but a uint8 array of shape \(4, 5\) has 2"),
])
def test_bad_arguments_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        Image(pixels((4, 5)), **kwargs)


def test_a_caption_of_1000_characters_is_taken():
    assert Image(pixels((1, 1)), caption="c" * 1000).encode().meta["caption"] == "c" * 1000


def test_a_pil_image_too_large_is_refused_before_converting():
    huge = PILImage.new("1", (8193, 1))
    with pytest.raises(InvalidArgumentError, match=r"PIL image of mode 1 and size 8193x1 is 1x8193 pixels"):
        Image(huge)


def test_a_truncated_pil_file_is_refused(tmp_path):
    path = tmp_path / "cut.png"
    path.write_bytes(png_of(PILImage.fromarray(pixels((64, 64, 3))))[:200])
    with PILImage.open(path) as opened:
        with pytest.raises(InvalidArgumentError, match=r"PIL image of mode RGB and size 64x64 cannot be read"):
            Image(opened)


# -- import lightness ----------------------------------------------------------------------------

def test_importing_the_module_pulls_none_of_numpy_pil_and_torch():
    probe = ("import sys, nuboard.media.image, nuboard.media.png; "
             "print(sorted(m for m in ('numpy', 'PIL', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


def test_bytes_and_files_need_none_of_them(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(png_of(PILImage.fromarray(pixels((3, 3, 3)))))
    probe = ("import sys; from nuboard.media.image import Image; "
             f"a = Image({str(path)!r}); b = Image(open({str(path)!r}, 'rb').read()); "
             "a.encode(); b.encode(); "
             "print(sorted(m for m in ('numpy', 'PIL', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


def test_the_encoder_refuses_pixels_that_do_not_match_their_size():
    with pytest.raises(InvalidArgumentError, match=r"a PNG pixel has 1, 2, 3 or 4 channels, not 5"):
        encode_png(b"\0" * 5, 1, 1, 5)
    with pytest.raises(InvalidArgumentError, match=r"7 bytes are not 2x1x3 pixels"):
        encode_png(b"\0" * 7, 1, 2, 3)


def test_the_numpy_filters_give_the_same_png_data_as_the_integer_ones():
    """encode_png filters with numpy when numpy is loaded (its loops release the GIL) and with
    integer arithmetic otherwise: the same bytes, for noise, gradients and flat images of every
    channel count, one row or many."""
    np = pytest.importorskip("numpy")
    from nuboard.media import png
    rng = np.random.default_rng(32)
    for t in range(120):
        h, w, c = int(rng.integers(1, 30)), int(rng.integers(1, 30)), int(rng.choice([1, 2, 3, 4]))
        shape = (h, w, c)
        image = (rng.integers(0, 256, shape, dtype=np.uint8) if t % 3 == 0 else
                 (np.cumsum(rng.integers(0, 3, shape), axis=1) % 256).astype(np.uint8) if t % 3 == 1
                 else np.full(shape, int(rng.integers(0, 256)), np.uint8))
        raw = image.tobytes()
        assert png._filtered_numpy(np, raw, h, w * c, c) == b"".join(png._filtered(raw, h, w * c, c)), shape
