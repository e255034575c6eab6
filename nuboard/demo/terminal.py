"""What the demo's runs print: ANSI colours and a tqdm-style progress bar redrawn with '\\r'.

tqdm is not a dependency, so the bar is drawn the way tqdm draws it: each update rewrites the
line after a carriage return, and a message (Bar.write, like tqdm.write) clears the line,
prints itself and redraws the bar below.
"""
from __future__ import annotations

import sys
import time

RESET = "\x1b[0m"
_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34",
          "magenta": "35", "cyan": "36"}
_BLOCKS = " ▏▎▍▌▋▊▉█"


def paint(text: str, *styles: str) -> str:
    """Text wrapped in the ANSI codes of `styles` ('bold', 'red', ...)."""
    return "\x1b[" + ";".join(_CODES[s] for s in styles) + "m" + text + RESET


def clock(seconds: float) -> str:
    """'00:07' as tqdm shows elapsed and remaining time."""
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes:02d}:{secs:02d}" if minutes < 60 else f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


def bar_line(desc: str, n: int, total: int | None, elapsed: float, postfix: str = "",
             unit: str = "it", width: int = 25, done: int | None = None) -> str:
    """One state of the bar, as tqdm formats it (without the leading '\\r').

    done: the units done in `elapsed` when the bar started past 0 (a resumed run); default n.
    """
    done = n if done is None else done
    rate = done / elapsed if elapsed > 0 else 0.0
    speed = f"{1 / rate:.2f}s/{unit}" if 0 < rate < 1 else f"{rate:.2f}{unit}/s"
    tail = f", {postfix}" if postfix else ""
    if not total:
        return f"{desc}: {n}{unit} [{clock(elapsed)}, {speed}{tail}]"
    frac = min(1.0, n / total)
    full, part = divmod(int(frac * width * 8), 8)
    bar = "█" * full + (_BLOCKS[part] if full < width else "")
    bar = bar + " " * (width - len(bar))
    left = (total - n) / rate if rate > 0 else 0.0
    return (f"{desc}: {int(frac * 100):3d}%|{paint(bar, 'green')}| {n}/{total} "
            f"[{clock(elapsed)}<{clock(left)}, {speed}{tail}]")


class Bar:
    """A progress bar on sys.stdout, redrawn at most every `every` updates.

    seconds_per_unit, when given, is the time the bar shows per unit done (the demo's runs
    last a second but show the hours a real one would take); else the real time passed.
    """

    def __init__(self, total: int | None, desc: str, *, unit: str = "it", every: int = 1,
                 start: int = 0, seconds_per_unit: float | None = None):
        self.seconds_per_unit = seconds_per_unit
        self.total = total
        self.desc = desc
        self.unit = unit
        self.every = max(1, every)
        self.n = start
        self.start_n = start
        self.postfix = ""
        self.began = time.perf_counter()
        self._draw()

    def update(self, n: int = 1, **postfix: object) -> None:
        """Advance by n; redraw when due, with postfix shown as key=value."""
        before = self.n
        self.n += n
        if postfix:
            self.postfix = ", ".join(f"{k}={_short(v)}" for k, v in postfix.items())
        if self.n // self.every != before // self.every or self.n == self.total:
            self._draw()

    def write(self, line: str) -> None:
        """Print a line above the bar, as tqdm.write does."""
        sys.stdout.write("\r\x1b[K" + line + "\n")
        self._draw()

    def close(self) -> None:
        self._draw()
        sys.stdout.write("\n")
        sys.stdout.flush()

    def _draw(self) -> None:
        elapsed = time.perf_counter() - self.began
        if self.seconds_per_unit is not None:
            elapsed = (self.n - self.start_n) * self.seconds_per_unit
        line = bar_line(self.desc, self.n, self.total, elapsed, self.postfix, self.unit,
                        done=self.n - self.start_n)
        sys.stdout.write("\r" + line)
        sys.stdout.flush()


def _short(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 else f"{value:.3f}"
    return str(value)


def print_header(run, ranks: int, lines: "list[str]") -> None:
    """The banner a training script prints: run, rank, config, then what it loaded."""
    print(paint(f"==> {run.project}/{run.name}", "bold") + f"  run {run.id}  "
          + paint(f"(rank {run.rank} of {ranks})", "dim"))
    print("config:")
    for section, values in run.config.items():
        if isinstance(values, dict):
            shown = " ".join(f"{k}={v}" for k, v in values.items())
            print(f"  {paint(section, 'cyan')}: {shown}")
        else:
            print(f"  {paint(section, 'cyan')}: {values}")
    for line in lines:
        print(line)


def describe(artifact) -> str:
    """An artifact version in one line: spec, storage, files, size and where it is."""
    size = artifact.total_bytes / 1000
    return (f"{artifact.spec} ({artifact.storage}, {len(artifact)} files, {size:.1f} kB) "
            f"at {artifact.files}")
