"""The demo's replay clock: a run's process lives on its day in the past, its hours passing in
about a second of real time.

The public API has no way to say when a run started: run.json's start and end times, the
sessions, the points' wall times, system samples, timers and artifact versions all take
`time.time()` (and `time.gmtime()`). So a demo run's process is started on this clock
(replay.py installs it before `import nuboard`): it reads `began` while nb.init starts the
run, moves on `speed` times as fast as real time from `start()` (the job's first step) and
stands still again from `pause()` (its last), while the run finishes. Every time the run
writes then agrees with every other, the way it would for a run that took hours.

    NUBOARD_DEMO_CLOCK="<began epoch seconds>,<speed>"
"""
from __future__ import annotations

import os
import time

CLOCK_VAR = "NUBOARD_DEMO_CLOCK"
_real_time = time.time
_real_gmtime = time.gmtime


class ReplayClock:
    """Epoch seconds from `began`, standing still until start(), then `speed` times real time."""

    def __init__(self, began: float, speed: float):
        self.began = began
        self.speed = speed
        self.origin: float | None = None

    def start(self) -> None:
        if self.origin is None:
            self.origin = _real_time()

    def pause(self) -> None:
        if self.origin is not None:
            self.began, self.origin = self.now(), None

    def now(self) -> float:
        if self.origin is None:
            return self.began
        return self.began + (_real_time() - self.origin) * self.speed

    def gmtime(self, secs: float | None = None) -> time.struct_time:
        return _real_gmtime(self.now() if secs is None else secs)

    def install(self) -> None:
        """Make time.time() and time.gmtime() read this clock in this process."""
        global installed
        time.time = self.now
        time.gmtime = self.gmtime
        installed = self


installed: ReplayClock | None = None


def clock_value(began: float, speed: float) -> str:
    """What CLOCK_VAR holds for a process on this clock."""
    return f"{began!r},{speed!r}"


def install_from_env() -> ReplayClock | None:
    """Install the clock CLOCK_VAR describes (None when it is not set)."""
    value = os.environ.get(CLOCK_VAR)
    if not value:
        return None
    began, speed = (float(part) for part in value.split(","))
    clock = ReplayClock(began, speed)
    clock.install()
    return clock


def start() -> None:
    """Let the installed clock run (nothing when the process is on real time)."""
    if installed is not None:
        installed.start()


def pause() -> None:
    """Stop the installed clock where it is (nothing when the process is on real time)."""
    if installed is not None:
        installed.pause()
