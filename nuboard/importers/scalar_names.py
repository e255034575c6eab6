"""Other trackers' scalar names (tags, metric keys) on NuBoard's naming rule, mapped deterministically.

A name NuBoard takes is kept as it is. Any other is mapped by files.names.safe_scalar_name
(control characters to '_', empty segments dropped, a long name cut and ended by a hash). A mapped
name that another tag already has gets '~2', '~3', ... (tags in sorted order). Media keys are
mapped the same way after the scalars, a key that a scalar already has getting '~2', ... too (a
name is a scalar or a media key in a run, never both). The system and
timing prefixes of the imported run are picked so that no source name starts with them.
"""
from __future__ import annotations

from typing import Iterable

from nuboard.errors import InvalidNameError
from nuboard.files.names import MAX_SCALAR_NAME, RESERVED_DEFAULTS, check_scalar_name, safe_scalar_name


def _fits(name: str) -> bool:
    try:
        check_scalar_name(name, ())
    except (InvalidNameError, TypeError):
        return False
    return True


def map_names(tags: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """{source tag: NuBoard scalar name} for every tag, each name distinct and none of `taken`
    (the names given already: the scalars' when the tags are media keys)."""
    tags = sorted(set(tags))
    taken = set(taken)
    out = {tag: tag for tag in tags if _fits(tag) and tag not in taken}
    taken |= set(out.values())
    for tag in tags:
        if tag in out:
            continue
        base = name = safe_scalar_name(tag)
        n = 1
        while name in taken:
            n += 1
            suffix = f"~{n}"
            name = base[:MAX_SCALAR_NAME - len(suffix)] + suffix
        out[tag] = name
        taken.add(name)
    return out


def pick_prefixes(names: Iterable[str]) -> tuple[str, str]:
    """(system_prefix, timing_prefix): 'system' and 'timing' unless a name starts with one,
    then 'nuboard-system' (or '-2', '-3', ...) so that no imported scalar is refused."""
    heads = {name.split("/", 1)[0] for name in names}
    picked = []
    for default in RESERVED_DEFAULTS:
        prefix, n = default, 1
        while prefix in heads:
            n += 1
            prefix = f"nuboard-{default}" if n == 2 else f"nuboard-{default}-{n - 1}"
        picked.append(prefix)
    return picked[0], picked[1]
