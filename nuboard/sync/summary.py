"""What one push or pull did: the counts the CLI prints as one line, or as JSON."""
from __future__ import annotations


class SyncSummary:
    """Counts of one push or pull.

    Attributes:
        direction: 'push' or 'pull'.
        url: the bucket URL.
        files, bytes: objects sent (or fetched) and their bytes.
        runs, versions, docs: run folders, artifact versions and project documents changed.
        skipped: units (runs, versions, documents) found unchanged.
        requests: requests made to the store (listings, reads and writes; counted as made).
        seconds: how long it took.
        refused: the units refused (conflicts, damaged objects), each as a line naming it.
    """

    def __init__(self, direction: str, url: str):
        self.direction = direction
        self.url = url
        self.files = 0
        self.bytes = 0
        self.runs = 0
        self.versions = 0
        self.docs = 0
        self.skipped = 0
        self.requests = 0
        self.writes = 0
        self.seconds = 0.0
        self.refused: list[str] = []

    def as_dict(self) -> dict:
        return {"direction": self.direction, "url": self.url, "runs": self.runs,
                "versions": self.versions, "docs": self.docs, "files": self.files,
                "bytes": self.bytes, "skipped": self.skipped, "requests": self.requests,
                "writes": self.writes, "seconds": round(self.seconds, 3),
                "refused": list(self.refused)}

    def line(self) -> str:
        """'pushed 3 runs, 41 files, 4.2 MB to s3://lab/exp in 1.3 s; 997 runs unchanged'."""
        verb, way = ("pushed", "to") if self.direction == "push" else ("pulled", "from")
        if not self.files and not self.refused:
            # 'nothing to push to s3://lab/exp: 22 runs, versions and documents unchanged (0.4 s)'
            return (f"nothing to {self.direction} {way} {self.url}: {self.skipped:,} runs, versions "
                    f"and documents unchanged ({self.seconds:.1f} s)")
        parts = [_count(self.runs, "run")]
        if self.versions:
            parts.append(_count(self.versions, "artifact version"))
        if self.docs:
            parts.append(_count(self.docs, "project document"))
        parts.append(_count(self.files, "file"))
        parts.append(_size(self.bytes))
        text = f"{verb} {', '.join(parts)} {way} {self.url} in {self.seconds:.1f} s"
        if self.skipped:
            text += f"; {self.skipped:,} unchanged"
        if self.refused:
            text += f"; {len(self.refused):,} refused"
        return text

    def __repr__(self) -> str:
        return f"<SyncSummary {self.line()}>"


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
