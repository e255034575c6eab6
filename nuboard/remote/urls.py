"""Telling a URL from a path, and the parts of one (standard library only).

    is_url("s3://lab/datasets")      -> True
    is_url("/data/x"), is_url("C:/x") -> False
    join("s3://lab/exp", "llm", "runs") -> "s3://lab/exp/llm/runs"
"""
from __future__ import annotations

import re

# A scheme of two or more letters, so a Windows drive ("C:/data") is never taken for one.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://(.*)$", re.S)
LOCAL_SCHEMES = frozenset({"file", "local"})


def scheme(text: object) -> str | None:
    """The URL's scheme in lower case ('s3', 'gs'), or None for a path."""
    if not isinstance(text, str):
        return None
    match = _URL.match(text)
    return match.group(1).lower() if match else None


def is_url(text: object) -> bool:
    """Whether `text` names object storage: a URL with a scheme other than file://."""
    found = scheme(text)
    return found is not None and found not in LOCAL_SCHEMES


def join(url: str, *parts: str) -> str:
    """`url` with `parts` appended, one '/' between each."""
    out = url.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}"
    return out


def shown(url: str) -> str:
    """The URL as a message may show it: any user:password@ left out."""
    match = _URL.match(url)
    if not match:
        return url
    rest = re.sub(r"^[^/@]*@", "", match.group(2))
    return f"{match.group(1)}://{rest}"
