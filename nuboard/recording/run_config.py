"""Turning a user's config (dict, dataclass, Namespace, OmegaConf, to_dict()) into JSON."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError

MAX_DEPTH = 64
MAX_CONFIG_BYTES = 16 * 1024 * 1024


def to_config(obj: Any) -> dict:
    """Turn a config object into a nested dict of JSON values.

    Accepts a Mapping, a dataclass instance, an argparse.Namespace, an OmegaConf config
    (omegaconf is imported only when the object is one) or any object with to_dict().
    Values JSON cannot hold are stored in a readable form: paths and decimals as text,
    enums as 'Class.NAME', tuples and sets as lists, numpy scalars as numbers, datetimes
    in ISO 8601, NaN and infinities as 'nan', 'inf', '-inf'.

    Raises:
        InvalidTypeError: the object is none of the accepted kinds.
        InvalidArgumentError: it is nested deeper than 64 levels or is over 16 MB as JSON.
    """
    if obj is None:
        return {}
    top = _top_mapping(obj)
    out = _value(top, 0, "config")
    size = len(json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace"))
    if size > MAX_CONFIG_BYTES:
        raise InvalidArgumentError(
            f"config is {size} bytes as JSON: at most {MAX_CONFIG_BYTES} bytes; keep large "
            "data in files or artifacts and put their names in the config.")
    return out


def _top_mapping(obj: Any) -> Mapping:
    if isinstance(obj, Mapping):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if type(obj).__name__ == "Namespace" and hasattr(obj, "__dict__"):
        return vars(obj)
    if type(obj).__module__.split(".")[0] == "omegaconf":
        from omegaconf import OmegaConf  # only when the object is one
        container = OmegaConf.to_container(obj, resolve=True)
        if isinstance(container, Mapping):
            return container
        raise InvalidTypeError(
            f"config is an OmegaConf {type(container).__name__}, not a mapping: pass a DictConfig.")
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        result = to_dict()
        if isinstance(result, Mapping):
            return result
        raise InvalidTypeError(
            f"config.to_dict() of {type(obj).__name__} returned {type(result).__name__}, not a dict.")
    raise InvalidTypeError(
        f"config of type {type(obj).__name__} cannot be turned into a config: pass a dict, a "
        "dataclass, an argparse.Namespace, an OmegaConf config or an object with to_dict().")


def _value(v: Any, depth: int, where: str) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidArgumentError(
            f"config is nested deeper than {MAX_DEPTH} levels (at {where[:200]!r}): flatten it.")
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v) if -(1 << 63) <= v < 1 << 64 else _big_int(v)
    if isinstance(v, str):
        return _text(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    if isinstance(v, Mapping):
        return {_text(str(k)): _value(x, depth + 1, f"{where}.{k}") for k, x in v.items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _value(getattr(v, f.name), depth + 1, f"{where}.{f.name}")
                for f in dataclasses.fields(v)}
    if isinstance(v, (list, tuple)):
        return [_value(x, depth + 1, f"{where}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, (set, frozenset)):
        items = [_value(x, depth + 1, where) for x in v]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if isinstance(v, os.PathLike):
        return _text(os.fspath(v)) if isinstance(os.fspath(v), str) else repr(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    module = type(v).__module__.split(".")[0]
    if module in ("numpy", "torch", "jax") and hasattr(v, "tolist"):
        return _value(v.tolist(), depth + 1, where)
    if module == "omegaconf":
        from omegaconf import OmegaConf
        return _value(OmegaConf.to_container(v, resolve=True), depth + 1, where)
    if type(v).__name__ == "Namespace" and hasattr(v, "__dict__"):
        return _value(vars(v), depth + 1, where)
    if isinstance(v, complex):
        return str(v)
    if type(v).__name__ == "Decimal":
        return str(v)
    to_dict = getattr(v, "to_dict", None)
    if callable(to_dict):
        return _value(to_dict(), depth + 1, where)
    return _text(str(v))


def _big_int(v: int) -> str:
    """An int too large for a 64-bit column, as text (or its size when even that is too long)."""
    try:
        return str(v)
    except ValueError:
        return f"<int of {v.bit_length()} bits>"


def _text(s: str) -> str:
    """Replace lone surrogates (bad UTF-8 decoded leniently) so the text can be stored."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")
