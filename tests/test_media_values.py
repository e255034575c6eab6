"""nb.Histogram, nb.Text and nb.Audio (issue 32, item 1): what each accepts comes back exactly
(histogram counts and edges as numpy.histogram gives them, text as written, audio samples read
back with the standard library's `wave`); every bad input gets its one error when the object is
made; changing the caller's object afterwards changes nothing; importing them stays light."""
from __future__ import annotations

import bisect
import io
import json
import math
import subprocess
import sys
import wave

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from nuboard.errors import InvalidArgumentError, InvalidTypeError
from nuboard.media import Encoded, Media
from nuboard.media.audio import Audio
from nuboard.media.histogram import Histogram
from nuboard.media.text import Text, from_value

RNG = np.random.default_rng(32)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def as_json(record: dict) -> dict:
    """The record through strict JSON, as the event log will hold it."""
    return json.loads(json.dumps(record, allow_nan=False, ensure_ascii=False))


def numpy_reference(values, bins=64):
    """What numpy.histogram says of the finite values, in float64: (counts, edges, dropped)."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = flat[np.isfinite(flat)]
    counts, edges = np.histogram(finite, bins=bins)
    return counts.tolist(), edges.tolist(), flat.size - finite.size


def with_bad_values(array: np.ndarray) -> np.ndarray:
    """The array with a NaN, +inf and -inf put in."""
    flat = array.astype(np.float64).reshape(-1).copy()
    flat[[3, 50, 77]] = [np.nan, np.inf, -np.inf]
    return flat.reshape(array.shape).astype(array.dtype)


# -- Histogram: round trips -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(1000,), (10, 100), (2, 5, 100)])
def test_histogram_of_a_numpy_array_is_numpys(dtype, shape):
    values = with_bad_values(RNG.standard_normal(shape).astype(dtype))
    record = as_json(Histogram(values).record())
    counts, edges, dropped = numpy_reference(values)
    finite = values.astype(np.float64)[np.isfinite(values)]
    assert (record["counts"], record["edges"]) == (counts, edges)
    assert (record["dropped"], record["count"]) == (dropped, finite.size) == (3, 997)
    assert (record["min"], record["max"]) == (finite.min(), finite.max())
    assert record["sum"] == pytest.approx(finite.sum(), rel=1e-12)
    assert all(type(c) is int for c in record["counts"])


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, np.bool_])
def test_histogram_of_ints_and_bools(dtype):
    values = RNG.integers(0, 2 if dtype is np.bool_ else 100, 500).astype(dtype)
    counts, edges, _ = numpy_reference(values, bins=7)
    record = Histogram(values, bins=7).record()
    assert (record["counts"], record["edges"]) == (counts, edges)
    assert record["sum"] == int(values.astype(np.int64).sum())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_histogram_of_a_torch_tensor_on_any_device(device, dtype):
    tensor = torch.from_numpy(with_bad_values(RNG.standard_normal((20, 50)))).to(dtype).to(device)
    tensor.requires_grad_(True)
    as_numpy = tensor.detach().cpu().double().numpy()
    counts, edges, dropped = numpy_reference(as_numpy, bins=16)
    record = Histogram(tensor, bins=16).record()
    assert (record["counts"], record["edges"], record["dropped"]) == (counts, edges, dropped)


def test_histogram_of_an_int_tensor():
    tensor = torch.arange(-50, 50)
    assert Histogram(tensor, bins=10).record()["counts"] == [10] * 10


@pytest.mark.parametrize("container", [list, tuple])
def test_histogram_of_a_list_leaves_out_nan_and_inf(container):
    values = RNG.standard_normal(300).tolist() + [math.nan, math.inf, -math.inf, 3, True, np.float32(0.5)]
    counts, edges, dropped = numpy_reference([float(v) for v in values], bins=32)
    record = as_json(Histogram(container(values), bins=32).record())
    assert (record["counts"], record["edges"], record["dropped"]) == (counts, edges, dropped)
    assert dropped == 3


def test_histogram_with_explicit_edges_drops_values_outside_them():
    values = np.array([-5.0, 0.0, 0.25, 0.5, 0.99, 1.0, 1.5, 2.0, 2.5, np.nan])
    record = Histogram(values, bins=[0, 0.5, 1, 2]).record()
    assert record["edges"] == [0, 0.5, 1, 2]
    assert record["counts"] == np.histogram(values[~np.isnan(values)], bins=[0, 0.5, 1, 2])[0].tolist()
    assert record["counts"] == [2, 2, 3]
    assert (record["count"], record["dropped"]) == (7, 3)         # -5, 2.5 and NaN
    assert (record["min"], record["max"], record["sum"]) == (0, 2, 6.24)


@pytest.mark.parametrize("bins", [np.array([0.0, 1.0, 3.0]), torch.tensor([0.0, 1.0, 3.0]), (0, 1, 3)])
def test_histogram_edges_from_an_array_or_tuple(bins):
    record = Histogram([0.5, 1, 2, 3], bins=bins).record()
    assert (record["counts"], record["edges"]) == ([1, 3], [0, 1, 3])


def test_histogram_with_no_value_inside_explicit_edges():
    record = Histogram([5.0, math.nan], bins=[0, 1, 2]).record()
    assert record == {"counts": [0, 0], "edges": [0, 1, 2], "min": None, "max": None, "sum": None,
                      "count": 0, "dropped": 2}


@pytest.mark.parametrize("bins", [1, 2, 512, np.int64(9)])
def test_histogram_bin_counts(bins):
    values = RNG.uniform(-3, 3, 2000)
    counts, edges, _ = numpy_reference(values, bins=int(bins))
    histogram = Histogram(values, bins=bins)
    assert (list(histogram.counts), list(histogram.edges)) == (counts, edges)


@pytest.mark.parametrize("value, edges", [
    (3.0, [2.5, 3.5]),
    (-1, [-1.5, -0.5]),
    (0.0, [-0.5, 0.5]),
    (1e20, [math.nextafter(1e20, -math.inf), math.nextafter(1e20, math.inf)]),
    (sys.float_info.max, [math.nextafter(sys.float_info.max, 0), sys.float_info.max]),
])
def test_histogram_of_equal_values_is_one_bin_around_them(value, edges):
    record = Histogram([value] * 5 + [math.nan]).record()
    assert record["counts"] == [5] and record["edges"] == edges
    assert record["edges"][0] <= value <= record["edges"][1]
    assert (record["min"], record["max"], record["count"], record["dropped"]) == (value, value, 5, 1)


def test_histogram_of_a_range_too_narrow_for_the_bins():
    low = 1.0
    values = [low, math.nextafter(low, 2), math.nextafter(math.nextafter(low, 2), 2)]
    record = Histogram(values, bins=64).record()
    assert len(record["edges"]) == len(record["counts"]) + 1 <= 65
    assert all(a < b for a, b in zip(record["edges"], record["edges"][1:]))
    assert record["edges"][0] == low and record["edges"][-1] == values[-1]
    assert sum(record["counts"]) == 3


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_histogram_of_a_range_wider_than_the_largest_float():
    top = sys.float_info.max
    record = as_json(Histogram([-top, 0.0, top, top], bins=4).record())
    assert record["edges"][0] == -top and record["edges"][-1] == top
    assert all(math.isfinite(e) for e in record["edges"])
    assert record["counts"] == [1, 0, 1, 2]
    assert record["sum"] == 1.7976931348623157e308


def test_histogram_sum_past_the_float_range_is_none():
    top = sys.float_info.max
    record = as_json(Histogram([top, top]).record())
    assert record["sum"] is None and record["count"] == 2


@pytest.mark.parametrize("values", [[], [math.nan, math.inf], np.zeros((0, 3)), torch.tensor([float("nan")])])
def test_histogram_with_nothing_to_count_is_empty(values):
    record = as_json(Histogram(values).record())
    assert record == {"counts": [], "edges": [], "min": None, "max": None, "sum": None, "count": 0,
                      "dropped": len(np.asarray(values).reshape(-1))}


@pytest.mark.parametrize("counts, edges, stored", [
    ([3, 0, 5], [0.0, 0.5, 1.0, 2.0], [3, 0, 5]),
    (np.array([1.5, 2.0]), np.array([-1, 0, 1]), [1.5, 2]),
    (torch.tensor([4, 4]), torch.tensor([0.0, 1e-3, 2e-3]), [4, 4]),
    ((7,), (10, 20), [7]),
])
def test_histogram_from_counts_and_edges(counts, edges, stored):
    record = as_json(Histogram(counts=counts, edges=edges).record())
    assert record["counts"] == stored
    assert record["edges"] == [float(e) for e in np.asarray(edges).tolist()]
    assert record["count"] == sum(stored)
    assert (record["min"], record["max"], record["sum"], record["dropped"]) == (None, None, None, 0)


def test_histogram_record_is_compact():
    record = Histogram(counts=[1.0, 2.0, 0.5], edges=[0.0, 1.0, 2.0, 4.0]).record()
    text = json.dumps(record, separators=(",", ":"))
    assert text == ('{"counts":[1,2,0.5],"edges":[0,1,2,4],"min":null,"max":null,"sum":null,'
                    '"count":3.5,"dropped":0}')
    big = json.dumps(Histogram(RNG.standard_normal(1_000_000)).record(), separators=(",", ":"))
    assert len(big) < 3000          # 64 bins: counts and edges, not one point per value


@pytest.mark.parametrize("make", [
    lambda: Histogram(RNG.standard_normal(1000)),
    lambda: Histogram(with_bad_values(RNG.standard_normal(100)), bins=[-1, 0, 1]),
    lambda: Histogram([2.0] * 4),
    lambda: Histogram([math.nan]),
    lambda: Histogram(counts=[1, 2.5], edges=[0, 1, 3]),
])
def test_histogram_from_record_rebuilds_it(make):
    histogram = make()
    record = as_json(histogram.record())
    again = Histogram.from_record(record)
    assert isinstance(again, Histogram) and again.in_log and again.kind == "histogram"
    assert again.record() == histogram.record()
    assert (again.counts, again.edges) == (histogram.counts, histogram.edges)


def test_histogram_copies_what_it_is_given():
    values = RNG.standard_normal(1000)
    tensor = torch.from_numpy(values.copy())
    bins = [-1.0, 0.0, 1.0]
    from_array, from_tensor, from_bins = Histogram(values), Histogram(tensor), Histogram(values, bins=bins)
    counts, edges = [1, 2], [0.0, 1.0, 2.0]
    from_counts = Histogram(counts=counts, edges=edges)
    before = [h.record() for h in (from_array, from_tensor, from_bins, from_counts)]
    values[:] = 0.0
    tensor.fill_(7.0)
    bins[1] = 0.5
    counts[0], edges[0] = 99, -5.0
    assert [h.record() for h in (from_array, from_tensor, from_bins, from_counts)] == before


def test_histogram_is_a_media_in_the_log():
    histogram = Histogram([1.0, 2.0])
    assert isinstance(histogram, Media) and histogram.kind == "histogram" and histogram.in_log
    with pytest.raises(NotImplementedError, match="use record"):
        histogram.encode()


# -- Histogram: every refusal -----------------------------------------------------------------

class Thing:
    pass


HISTOGRAM_REFUSALS = [
    # (kwargs, error, message)
    (dict(), InvalidArgumentError, r"nb\.Histogram: give values .* or counts= and edges=$"),
    (dict(values=[1], counts=[1], edges=[0, 1]), InvalidArgumentError, "not both"),
    (dict(values={"a": 1}), InvalidTypeError, "values of type dict: give a list or tuple of numbers"),
    (dict(values="1 2 3"), InvalidTypeError, "values of type str"),
    (dict(values=3.5), InvalidTypeError, "values of type float"),
    (dict(values=np.float64(3.5)), InvalidTypeError, "values of type float64"),
    (dict(values=Thing()), InvalidTypeError, "values of type Thing"),
    (dict(values=[1.0, "2"]), InvalidTypeError, r"values\[1\] is a str \('2'\): give a flat list"),
    (dict(values=[1.0, [2.0]]), InvalidTypeError, r"values\[1\] is a list"),
    (dict(values=[1.0, None]), InvalidTypeError, r"values\[1\] is a NoneType"),
    (dict(values=[0, 10 ** 400]), InvalidArgumentError, r"values\[1\] is an int of 401 digits, beyond"),
    (dict(values=np.array([1 + 2j])), InvalidTypeError, "dtype complex128: give real numbers"),
    (dict(values=np.array(["a"])), InvalidTypeError, "dtype <U1"),
    (dict(values=np.array([1, "x"], dtype=object)), InvalidTypeError, "dtype object"),
    (dict(values=torch.tensor([1 + 2j])), InvalidTypeError, "tensor of dtype torch.complex64"),
    (dict(values=[1.0], bins=0), InvalidArgumentError, r"bins=0: give an int from 1 to 512$"),
    (dict(values=[1.0], bins=513), InvalidArgumentError, r"bins=513: give an int from 1 to 512$"),
    (dict(values=[1.0], bins=-4), InvalidArgumentError, r"bins=-4"),
    (dict(values=[1.0], bins=True), InvalidTypeError, r"bins of type bool \(True\)"),
    (dict(values=[1.0], bins=10.0), InvalidTypeError, r"bins of type float \(10\.0\): give an int"),
    (dict(values=[1.0], bins="auto"), InvalidTypeError, r"bins of type str \('auto'\)"),
    (dict(values=[1.0], bins=[0.0]), InvalidArgumentError, r"bins has 1 edge\(s\): give at least 2"),
    (dict(values=[1.0], bins=list(range(514))), InvalidArgumentError, "bins has 514 edges: give at most 513"),
    (dict(values=[1.0], bins=[0, math.nan, 2]), InvalidArgumentError,
     r"bins\[1\] is nan: edges must be finite numbers"),
    (dict(values=[1.0], bins=[0, 1, math.inf]), InvalidArgumentError, r"bins\[2\] is inf"),
    (dict(values=[1.0], bins=[0, 1, 1, 2]), InvalidArgumentError,
     r"bins\[2\] = 1 is not greater than bins\[1\] = 1: edges must increase strictly"),
    (dict(values=[1.0], bins=[0, 2, 1]), InvalidArgumentError, r"bins\[2\] = 1 is not greater"),
    (dict(values=[1.0], bins=[0, "1"]), InvalidTypeError, r"bins\[1\] is a str"),
    (dict(values=[1.0], bins=np.zeros((2, 2))), InvalidTypeError, r"bins is an array of shape \(2, 2\)"),
    (dict(counts=[1, 2]), InvalidArgumentError, "counts= and edges= go together"),
    (dict(edges=[0, 1]), InvalidArgumentError, "counts= and edges= go together"),
    (dict(counts=[1, 2], edges=[0, 1]), InvalidArgumentError, r"2 counts need 3 edges, not 2"),
    (dict(counts=[1], edges=[0, 1, 2]), InvalidArgumentError, r"1 counts need 2 edges, not 3"),
    (dict(counts=[], edges=[0]), InvalidArgumentError, "counts is empty: give at least one bin"),
    (dict(counts=[0] * 4097, edges=list(range(4098))), InvalidArgumentError, "4,097 counts: give at most 4,096"),
    (dict(counts=[1, math.nan], edges=[0, 1, 2]), InvalidArgumentError,
     r"counts\[1\] is nan: counts must be finite and >= 0"),
    (dict(counts=[1, math.inf], edges=[0, 1, 2]), InvalidArgumentError, r"counts\[1\] is inf"),
    (dict(counts=[-1, 0], edges=[0, 1, 2]), InvalidArgumentError, r"counts\[0\] is -1: counts must be"),
    (dict(counts=[1, 1], edges=[0, math.nan, 2]), InvalidArgumentError,
     r"edges\[1\] is nan: edges must be finite numbers"),
    (dict(counts=[1, 1], edges=np.array([0, np.nan, 2])), InvalidArgumentError, r"edges\[1\] is nan"),
    (dict(counts=[1, 1], edges=[0, 10 ** 400, 2]), InvalidArgumentError, r"edges\[1\] is 1000"),
    (dict(counts=[1, 1], edges=[2, 1, 0]), InvalidArgumentError, r"edges\[1\] = 1 is not greater"),
    (dict(counts=[1, "2"], edges=[0, 1, 2]), InvalidTypeError, r"counts\[1\] is a str \('2'\): give numbers"),
    (dict(counts=[1, True], edges=[0, 1, 2]), InvalidTypeError, r"counts\[1\] is a bool"),
    (dict(counts="12", edges=[0, 1, 2]), InvalidTypeError, "counts of type str"),
    (dict(counts={1: 2}, edges=[0, 1]), InvalidTypeError, "counts of type dict"),
]


@pytest.mark.parametrize("kwargs, error, message", HISTOGRAM_REFUSALS,
                         ids=[str(i) for i in range(len(HISTOGRAM_REFUSALS))])
def test_histogram_refuses(kwargs, error, message):
    with pytest.raises(error, match=message) as caught:
        Histogram(**kwargs)
    assert str(caught.value).startswith("nb.Histogram: ")


GOOD_RECORD = {"counts": [1, 2], "edges": [0, 1, 2], "min": 0.5, "max": 2, "sum": 4.5, "count": 3,
               "dropped": 0}

RECORD_REFUSALS = [
    # (changes to GOOD_RECORD, or a whole non-dict; error; message)
    ([1, 2], InvalidTypeError, "a record of type list: give a dict"),
    ({"counts": None}, InvalidTypeError, "counts is a NoneType: give a list"),
    ({"edges": "0 1 2"}, InvalidTypeError, "edges is a str: give a list"),
    ({"counts": [1, "2"]}, InvalidTypeError, r"counts\[1\] is a str"),
    ({"counts": [1, -2]}, InvalidArgumentError, r"counts\[1\] is -2"),
    ({"edges": [0, 1]}, InvalidArgumentError, "2 counts need 3 edges, not 2"),
    ({"edges": [0, 1, 1]}, InvalidArgumentError, r"edges\[2\] = 1 is not greater"),
    ({"edges": [0, 1, math.nan]}, InvalidArgumentError, r"edges\[2\] is nan"),
    ({"count": 4}, InvalidArgumentError, "count is 4, but the counts sum to 3"),
    ({"count": "3"}, InvalidArgumentError, "count is '3'"),
    ({"dropped": -1}, InvalidArgumentError, "dropped is -1: give an int >= 0"),
    ({"dropped": 1.5}, InvalidArgumentError, "dropped is 1.5"),
    ({"min": math.inf}, InvalidArgumentError, "min is inf: give a finite number or None"),
    ({"sum": "4"}, InvalidArgumentError, "sum is '4'"),
    ({"min": -1}, InvalidArgumentError, r"min -1\.0 and max 2\.0 do not lie within the edges \[0, 2\]"),
    ({"min": 2, "max": 1}, InvalidArgumentError, "do not lie within the edges"),
    ({"counts": [0] * 4097, "edges": list(range(4098)), "count": 0}, InvalidArgumentError, "4,097 counts"),
]


@pytest.mark.parametrize("change, error, message", RECORD_REFUSALS,
                         ids=[str(i) for i in range(len(RECORD_REFUSALS))])
def test_histogram_from_record_refuses(change, error, message):
    doc = {**GOOD_RECORD, **change} if isinstance(change, dict) else change
    with pytest.raises(error, match=message) as caught:
        Histogram.from_record(doc)
    assert str(caught.value).startswith("Histogram.from_record: ")


def test_histogram_from_record_names_missing_fields():
    doc = {k: v for k, v in GOOD_RECORD.items() if k not in ("sum", "dropped")}
    with pytest.raises(InvalidArgumentError, match="the record has no 'sum', 'dropped'"):
        Histogram.from_record(doc)
    assert Histogram.from_record({**GOOD_RECORD, "later": 1}).record() == GOOD_RECORD   # extras ignored


# -- Histogram: the property ------------------------------------------------------------------

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@example(values=[0.0, sys.float_info.max], bins=397, as_array=False)      # numpy's edges overflow
@example(values=[5e-324, 1e-323, 1.5e-323], bins=64, as_array=True)       # subnormals: 2 bins at most
@given(values=st.lists(st.one_of(FLOATS, st.sampled_from([0.0, 1.0, -1.0, 1e-300, 5e-324])), max_size=200),
       bins=st.integers(1, 512), as_array=st.booleans())
def test_histogram_counts_every_finite_value_once(values, bins, as_array):
    histogram = Histogram(np.array(values, dtype=np.float64) if as_array else values, bins=bins)
    record = as_json(histogram.record())
    finite = [v for v in values if math.isfinite(v)]
    counts, edges = record["counts"], record["edges"]
    assert sum(counts) == record["count"] == len(finite)
    assert record["dropped"] == len(values) - len(finite)
    if not finite:
        assert counts == edges == []
        return
    assert len(edges) == len(counts) + 1 and len(counts) <= bins
    assert all(a < b for a, b in zip(edges, edges[1:]))
    recount = [0] * len(counts)
    for value in finite:
        assert edges[0] <= value <= edges[-1]
        recount[min(bisect.bisect_right(edges, value) - 1, len(counts) - 1)] += 1
    assert recount == counts
    assert (record["min"], record["max"]) == (min(finite), max(finite))
    assert Histogram.from_record(record).record() == histogram.record()


# -- Text ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "loss went down", "naïve café — ☃ 日本語 🚀", "line\nbreak\ttab\x00nul",
                                  "a" * 65536, "é" * 32768])
def test_short_text_lives_in_the_log(text):
    item = Text(text)
    assert item.in_log and item.kind == "text" and isinstance(item, Media)
    assert as_json(item.record()) == {"text": text}
    with pytest.raises(NotImplementedError, match="use record"):
        item.encode()


@pytest.mark.parametrize("text", ["a" * 65537, "é" * 32769, "🚀" * 16385, "x" * (16 * 1024 * 1024),
                                  "日本" * 100_000])
def test_long_text_is_a_utf8_file(text):
    item = Text(text)
    assert not item.in_log
    encoded = item.encode()
    assert isinstance(encoded, Encoded) and encoded.ext == "txt"
    assert encoded.data.decode("utf-8") == text
    assert encoded.meta == {"chars": len(text), "bytes": len(text.encode("utf-8"))}
    with pytest.raises(NotImplementedError, match="use encode"):
        item.record()


def test_in_log_is_the_objects_own():
    short, long = Text("a"), Text("a" * 70_000)
    assert (short.in_log, long.in_log, Text.in_log) == (True, False, False)
    assert "in_log" in vars(short) and "in_log" in vars(long)


def test_text_keeps_a_plain_str():
    class Loud(str):
        def __str__(self):
            return "changed"
    item = Text(Loud("quiet"))
    assert type(item.text) is str and item.record() == {"text": "quiet"}


def test_from_value():
    item = from_value("a generation")
    assert isinstance(item, Text) and item.record() == {"text": "a generation"}
    assert from_value(item) is item
    with pytest.raises(InvalidTypeError, match="nb.Text: a value of type float: give a str"):
        from_value(1.5)


TEXT_REFUSALS = [
    (b"bytes", InvalidTypeError, r"nb\.Text: a bytes value \(5 bytes\): give a str; decode it first"),
    (bytearray(b"ab"), InvalidTypeError, r"a bytearray value \(2 bytes\)"),
    (None, InvalidTypeError, "a value of type NoneType: give a str"),
    (12, InvalidTypeError, "a value of type int: give a str"),
    (["a"], InvalidTypeError, "a value of type list"),
    ("ok \ud800 then", InvalidArgumentError,
     r"a lone surrogate '\\ud800' at position 3 \(of 9 characters\), which UTF-8 cannot hold"),
    ("é" + "\udcff", InvalidArgumentError, r"'\\udcff' at position 1"),
    ("x" * (16 * 1024 * 1024 + 1), InvalidArgumentError,
     r"a text of 16,777,217 bytes as UTF-8: give at most 16,777,216 \(16 MiB\)"),
    ("é" * (8 * 1024 * 1024 + 1), InvalidArgumentError, "a text of 16,777,218 bytes"),
]


@pytest.mark.parametrize("value, error, message", TEXT_REFUSALS, ids=[str(i) for i in range(len(TEXT_REFUSALS))])
def test_text_refuses(value, error, message):
    with pytest.raises(error, match=message):
        Text(value)


# -- Audio ------------------------------------------------------------------------------------

def read_wav(encoded: Encoded):
    """(channels, sample_rate, frames x channels int16 samples) as the `wave` module reads them."""
    assert encoded.ext == "wav"
    with wave.open(io.BytesIO(encoded.data), "rb") as wav:
        assert wav.getsampwidth() == 2 and wav.getcomptype() == "NONE"
        raw = wav.readframes(wav.getnframes())
        channels, rate, frames = wav.getnchannels(), wav.getframerate(), wav.getnframes()
    return channels, rate, np.frombuffer(raw, dtype="<i2").reshape(frames, channels)


def pcm(floats) -> np.ndarray:
    return np.rint(np.asarray(floats, dtype=np.float64) * 32767).astype(np.int16)


def sine(frames: int, channels: int) -> np.ndarray:
    t = np.arange(frames)[:, None] / 8000
    return np.sin(2 * np.pi * 440 * t * np.arange(1, channels + 1)) * 0.9


@pytest.mark.parametrize("make, rate, expected", [
    (lambda: sine(800, 1)[:, 0].astype(np.float32), 8000, lambda: pcm(sine(800, 1).astype(np.float32))),
    (lambda: sine(800, 2), 44_100, lambda: pcm(sine(800, 2))),                        # frames x channels
    (lambda: np.ascontiguousarray(sine(800, 2).T), 16_000, lambda: pcm(sine(800, 2))),  # channels x frames
    (lambda: sine(800, 1).T.copy(), 16_000, lambda: pcm(sine(800, 1))),                # 1 x frames
    (lambda: sine(300, 8).astype(np.float16), 384_000, lambda: pcm(sine(300, 8).astype(np.float16))),
    (lambda: (sine(800, 2) * 32767).astype(np.int16), 22_050, lambda: (sine(800, 2) * 32767).astype(np.int16)),
    (lambda: np.array([-32768, 32767, 0, -1], dtype=np.int16), 1, lambda: np.array([[-32768], [32767], [0], [-1]])),
    (lambda: [-1.0, -0.5, 0, 0.5, 1], 8000, lambda: pcm([[-1.0], [-0.5], [0], [0.5], [1]])),
    (lambda: [[0.25, -0.25], [1, -1], [0, 0]], 8000, lambda: pcm([[0.25, -0.25], [1, -1], [0, 0]])),
    (lambda: sine(6, 2)[::2], 8000, lambda: pcm(sine(6, 2)[::2])),                   # a strided view
])
def test_audio_round_trips_sample_by_sample(make, rate, expected):
    audio = Audio(make(), rate, caption="take 1")
    channels, got_rate, samples = read_wav(audio.encode())
    want = np.asarray(expected()).reshape(samples.shape[0], -1)
    assert (channels, got_rate) == (want.shape[1], rate)
    assert np.array_equal(samples, want)
    meta = audio.encode().meta
    assert meta == {"sample_rate": rate, "channels": want.shape[1], "frames": want.shape[0],
                    "seconds": want.shape[0] / rate, "caption": "take 1"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int16])
def test_audio_from_a_torch_tensor(device, dtype):
    waveform = torch.from_numpy(sine(400, 2).T.copy())                  # torchaudio's channels x frames
    if dtype is torch.int16:
        waveform = (waveform * 32767).to(torch.int16)
        want = waveform.numpy().T
    else:
        waveform = waveform.to(dtype)
        want = pcm(waveform.float().numpy().T) if dtype is torch.bfloat16 else pcm(waveform.numpy().T)
    waveform = waveform.to(device)
    if waveform.dtype.is_floating_point:
        waveform.requires_grad_(True)
    channels, _, samples = read_wav(Audio(waveform, 8000).encode())
    assert channels == 2 and np.array_equal(samples, want)


def test_audio_axes_rule():
    assert Audio(np.zeros((2, 5)), 8000).channels == 2          # 2 x 5: channels x frames
    assert Audio(np.zeros((5, 2)), 8000).channels == 2          # 5 x 2: frames x channels
    assert Audio(np.zeros((2, 2)), 8000).frames == 2            # last axis 2 too: frames x channels
    assert Audio(np.zeros((1, 1)), 8000).frames == 1
    assert Audio(np.zeros((3, 5)), 8000).channels == 5          # first axis 3: frames x channels
    assert Audio(np.zeros(10), 8000).channels == 1


def test_audio_limits_are_inclusive():
    assert Audio(np.zeros(600), 1).encode().meta["seconds"] == 600.0
    assert Audio(np.zeros((4, 8)), 384_000).channels == 8


def test_audio_copies_the_samples():
    floats, ints, tensor, items = sine(100, 2), (sine(100, 1) * 1000).astype(np.int16), torch.zeros(50), [0.5] * 10
    made = [Audio(floats, 8000), Audio(ints, 8000), Audio(tensor, 8000), Audio(items, 8000)]
    before = [a.encode().data for a in made]
    floats[:] = 0.1
    ints[:] = 7
    tensor.fill_(0.3)
    items[0] = 1.0
    assert [a.encode().data for a in made] == before


def test_audio_is_a_media_file():
    audio = Audio([0.0], 8000)
    assert isinstance(audio, Media) and audio.kind == "audio" and not audio.in_log
    assert audio.encode().meta["caption"] is None
    with pytest.raises(NotImplementedError, match="use encode"):
        audio.record()


AUDIO_REFUSALS = [
    # (data, sample_rate, caption, error, message)
    ({"a": 1}, 8000, None, InvalidTypeError, "data of type dict: give a numpy array, a torch tensor"),
    (b"RIFF", 8000, None, InvalidTypeError, "data of type bytes"),
    ("loud", 8000, None, InvalidTypeError, "data of type str"),
    (np.zeros(4, dtype=np.int32), 8000, None, InvalidTypeError,
     r"samples of dtype int32: give floats in \[-1, 1\] or int16"),
    (np.zeros(4, dtype=np.uint8), 8000, None, InvalidTypeError, "samples of dtype uint8"),
    (np.zeros(4, dtype=bool), 8000, None, InvalidTypeError, "samples of dtype bool"),
    (np.zeros(4, dtype=np.complex64), 8000, None, InvalidTypeError, "samples of dtype complex64"),
    (torch.zeros(4, dtype=torch.int32), 8000, None, InvalidTypeError, "samples of dtype int32"),
    (["a", "b"], 8000, None, InvalidTypeError, "samples of dtype <U1"),
    ([[0.1], [0.1, 0.2]], 8000, None, InvalidTypeError, "a list that is not a flat or rectangular nesting"),
    (np.float32(0.5), 8000, None, InvalidTypeError, "data of type float32"),
    (np.array(0.5), 8000, None, InvalidArgumentError, r"an array of shape \(\) has 0 axes"),
    (np.zeros((2, 3, 4)), 8000, None, InvalidArgumentError,
     r"an array of shape \(2, 3, 4\) has 3 axes: give 1-D \(mono\) or 2-D"),
    (np.zeros(0), 8000, None, InvalidArgumentError, r"an array of shape \(0,\) holds no samples"),
    (np.zeros((5, 0)), 8000, None, InvalidArgumentError, r"an array of shape \(5, 0\) holds no samples"),
    (np.zeros((100, 9)), 8000, None, InvalidArgumentError,
     r"an array of shape \(100, 9\) has 9 channels: give at most 8"),
    (np.zeros((9, 100)), 8000, None, InvalidArgumentError, r"has 100 channels: give at most 8.*transpose"),
    (np.zeros(601), 1, None, InvalidArgumentError, r"601 frames at 1 Hz last 601\.0 s: give at most 600 s"),
    (np.array([0.0, np.nan, 0.5]), 8000, None, InvalidArgumentError,
     r"the samples hold NaN \(first at frame 1, channel 0\)"),
    (np.array([[0.0, 0.0], [0.0, np.nan]]), 8000, None, InvalidArgumentError, "first at frame 1, channel 1"),
    (np.array([0.0, 1.5, -0.2]), 8000, None, InvalidArgumentError,
     r"the samples range from -0\.2 to 1\.5: floats must lie in \[-1, 1\]"),
    (np.array([-1.0001, 0.0]), 8000, None, InvalidArgumentError, r"range from -1\.0001 to 0\.0"),
    (np.array([0.0, np.inf]), 8000, None, InvalidArgumentError, "range from 0.0 to inf"),
    ([0, 1000], 8000, None, InvalidArgumentError, r"range from 0\.0 to 1000\.0"),
    (np.zeros(4), 0, None, InvalidArgumentError, r"sample_rate=0: give an int from 1 to 384,000 \(Hz\)"),
    (np.zeros(4), 384_001, None, InvalidArgumentError, "sample_rate=384001"),
    (np.zeros(4), 44100.0, None, InvalidTypeError, r"sample_rate of type float \(44100\.0\): give an int"),
    (np.zeros(4), "44100", None, InvalidTypeError, "sample_rate of type str"),
    (np.zeros(4), True, None, InvalidTypeError, "sample_rate of type bool"),
    (np.zeros(4), 8000, 3, InvalidTypeError, "caption must be a str or None, not int"),
    (np.zeros(4), 8000, "x" * 1001, InvalidArgumentError, "a caption of 1,001 characters: at most 1,000"),
    (np.zeros((16_000_001, 8), np.int16), 384_000, None, InvalidArgumentError,   # calloc'd: cheap
     "16,000,001 frames x 8 channels are 256,000,016 bytes of 16-bit samples: give at most "
     "256,000,000"),
    (np.zeros(4), 8000, "a\ud800", InvalidArgumentError, r"the caption has a lone surrogate '\\ud800' at position 1"),
]


@pytest.mark.parametrize("data, rate, caption, error, message", AUDIO_REFUSALS,
                         ids=[str(i) for i in range(len(AUDIO_REFUSALS))])
def test_audio_refuses(data, rate, caption, error, message):
    with pytest.raises(error, match=message) as caught:
        Audio(data, rate, caption=caption)
    assert str(caught.value).startswith("nb.Audio: ")


# -- light imports ---------------------------------------------------------------------------

def test_importing_them_pulls_no_heavy_library():
    probe = ("import sys; import nuboard.media.histogram, nuboard.media.text, nuboard.media.audio; "
             "print(sorted(m for m in ('numpy', 'torch', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_text_never_needs_numpy():
    probe = ("import sys; from nuboard.media.text import Text; "
             "t = Text('x' * 100_000); t.encode(); Text('short').record(); "
             "print(sorted(m for m in ('numpy', 'torch', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
