"""What the media kinds share when they take the user's object: the caption rule, and numpy
arrays and torch tensors recognised by their type's module before either is imported (so
`import nuboard` never imports them), a tensor on any device read as a numpy array."""
from __future__ import annotations

from typing import Any

from nuboard.errors import InvalidArgumentError, InvalidTypeError

MAX_CAPTION = 1000              # characters


def check_caption(caption: Any, who: str) -> str | None:
    """A caption: None, or a str of at most MAX_CAPTION characters that UTF-8 can hold (kept as
    a plain str); one clear error naming `who` ("nb.Image") otherwise."""
    if caption is None:
        return None
    if not isinstance(caption, str):
        raise InvalidTypeError(f"{who}: caption must be a str or None, not {type(caption).__name__}")
    if len(caption) > MAX_CAPTION:
        raise InvalidArgumentError(f"{who}: a caption of {len(caption):,} characters: "
                                   f"at most {MAX_CAPTION:,}")
    try:
        caption.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"{who}: the caption has a lone surrogate {caption[exc.start]!r} at "
                                   f"position {exc.start}, which UTF-8 cannot hold: remove it") from None
    return str.__str__(caption)


def is_tensor(value: Any) -> bool:
    """A torch tensor (torch is imported only when the value's type comes from it)."""
    if not (type(value).__module__ or "").startswith("torch"):
        return False
    import torch
    return isinstance(value, torch.Tensor)


def is_ndarray(value: Any) -> bool:
    """A numpy array (numpy is imported only when the value's type comes from it)."""
    if not (type(value).__module__ or "").startswith("numpy"):
        return False
    import numpy as np
    return isinstance(value, np.ndarray)


def tensor_array(tensor: Any, who: str, what: str = "numbers"):
    """A torch tensor on any device, detached, as a numpy array on the CPU (bfloat16 and other
    floats numpy lacks through float32); complex tensors refused."""
    import torch
    tensor = tensor.detach()
    if tensor.is_complex():
        raise InvalidTypeError(f"{who}: a tensor of dtype {tensor.dtype}: give real numbers")
    try:
        tensor = tensor.cpu()
        if tensor.dtype.is_floating_point and tensor.dtype not in (torch.float16, torch.float32,
                                                                   torch.float64):
            tensor = tensor.float()
        return tensor.numpy()
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        raise InvalidTypeError(f"{who}: a tensor of dtype {tensor.dtype} on {tensor.device} cannot "
                               f"be read as {what} ({exc})") from exc
