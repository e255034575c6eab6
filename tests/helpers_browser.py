"""Browser-test helpers that are not fixtures: `nuboard up` as a subprocess, screenshots,
and a page's JavaScript errors."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

from helpers import REPO, child_env

SHOTS = REPO / "test-screenshots"


def serve(root: Path, *args: str):
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root),
                             "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env())
    line = proc.stdout.readline()
    match = re.search(r"at (http://\S+)/", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"nuboard up printed {line!r}: {proc.stderr.read()}")
    return proc, match.group(1)


def shutdown(proc) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return errors


INKED = """(f, [lo, hi, hex, tolerance]) => { const c = f.querySelector('canvas'), o = f.querySelector('.u-over');
    const cb = c.getBoundingClientRect(), ob = o.getBoundingClientRect(), k = c.width / cb.width;
    const x0 = +f.dataset.xmin, x1 = +f.dataset.xmax, px = v => ob.left - cb.left + (v - x0) / (x1 - x0) * ob.width;
    const rgb = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
    const d = c.getContext('2d').getImageData(px(lo) * k, (ob.top - cb.top) * k,
                                              (px(hi) - px(lo)) * k, ob.height * k).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) < tolerance) n++;
    return n; }"""
"""For figure.chart's evaluate: how many pixels of the plot between x values lo and hi (its
drawn x scale) are within `tolerance` (summed over r, g, b) of the colour '#rrggbb'."""


def export(page, figure, item: str) -> bytes:
    """What a chart's Export menu item ("CSV (drawn)", "PNG") downloads, as bytes."""
    figure.locator("summary", has_text="Export").click()
    with page.expect_download() as info:
        figure.get_by_role("button", name=item).click()
    return Path(info.value.path()).read_bytes()
