"""NuBoard in a Jupyter notebook: a run shows itself as HTML (its status, config and the last
value of each scalar, with a link to its page in a viewer), and `nb.show(project)` starts a
viewer in the background once per kernel and shows the project's Runs page inline.

Everything a user wrote (names, config values) is escaped; nothing here is imported by
`import nuboard` until a notebook asks for it.
"""
from __future__ import annotations

import atexit
import html
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

MAX_ROWS = 20
START_TIMEOUT = 120.0                 # seconds nb.show waits for the viewer's address
_viewer: dict[str, Any] = {}          # the one viewer this kernel started: root, url, process
_lock = threading.Lock()
_LAUNCH = ("import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
           "from nuboard.cli.main import main; sys.exit(main())")
"""`nuboard up` deaf to SIGINT: Jupyter's Interrupt signals the kernel's whole process group,
and the viewer is in it (so that a kernel killed outright takes the viewer along)."""


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return html.escape(text if len(text) <= 80 else text[:79] + "…")


def _rows(title: str, items: list[tuple[str, Any]], more: int) -> str:
    if not items:
        return ""
    body = "".join(f"<tr><td>{html.escape(k)}</td><td>{_cell(v)}</td></tr>" for k, v in items)
    tail = f"<tr><td colspan='2'>… and {more:,} more</td></tr>" if more > 0 else ""
    return (f"<details open><summary>{html.escape(title)}</summary>"
            f"<table>{body}{tail}</table></details>")


def _flat(config: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if not isinstance(config, dict):
        return [(prefix or "config", config)]
    out: list[tuple[str, Any]] = []
    for key, value in config.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.extend(_flat(value, name) if isinstance(value, dict) and value else [(name, value)])
    return out


def last_values(folder: Path) -> list[tuple[str, float]]:
    """Each scalar's last value on rank 0, as the run's logs hold them now."""
    from nuboard.eventlog.reader import RunReader
    reader = RunReader(folder, 0)
    reader.refresh()
    return [(name, s.values[-1]) for name, s in reader.scalars().items() if len(s.values)]


def run_html(*, project: str, run_id: str, name: str, status: str, config: Any,
             folder: Path, url: str | None = None) -> str:
    """A run as notebook HTML: a head line (name, status, id, link) and tables of its config and
    its scalars' last values (at most MAX_ROWS each)."""
    try:
        scalars = last_values(folder)
    except (OSError, ValueError):
        scalars = []
    link = url or viewer_url()
    target = f"{link}/p/{project}/.run/{run_id}" if link else None
    head = (f"<b>{html.escape(name)}</b> <code>{html.escape(project)}/{html.escape(run_id)}</code> "
            f"<span>{html.escape(status)}</span>")
    if target:
        head += f' · <a href="{html.escape(target)}" target="_blank">open in NuBoard</a>'
    else:
        head += f" · <code>{html.escape(str(folder))}</code>"
    config_rows = _flat(config)
    return (f"<div class='nuboard-run'>{head}"
            + _rows("config", config_rows[:MAX_ROWS], len(config_rows) - MAX_ROWS)
            + _rows("last values", scalars[:MAX_ROWS], len(scalars) - MAX_ROWS) + "</div>")


def viewer_url() -> str | None:
    """The URL of the viewer nb.show started in this kernel, or None."""
    with _lock:
        proc = _viewer.get("process")
        if proc is not None and proc.poll() is None:
            return _viewer["url"]
    return None


def show(project: str | None = None, *, dir: "str | os.PathLike[str] | None" = None,
         height: int = 600) -> Any:
    """Start `nuboard up` for the experiments folder in the background (once per kernel, on a
    free loopback port) and show the project's Runs page (or the projects) inline; returns the
    IPython IFrame (a plain URL string outside IPython).

    Raises:
        RuntimeError: the viewer did not start (its first error line is in the message).
    """
    from nuboard.files.layout import resolve_root
    root = resolve_root(dir)
    root.mkdir(parents=True, exist_ok=True)      # shown before the first run, filled as runs start
    url = _start(root)
    page = f"{url}/p/{project}" if project else url
    try:
        from IPython.display import IFrame
    except ImportError:
        return page
    return IFrame(page, width="100%", height=height)


def _start(root: Path) -> str:
    with _lock:
        proc = _viewer.get("process")
        if proc is not None and proc.poll() is None and _viewer["root"] == root:
            return _viewer["url"]
        if proc is not None and proc.poll() is None:
            proc.terminate()
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, "up", str(root), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        said: list[str] = []                          # stderr, drained from the start
        threading.Thread(target=_drain, args=(proc.stderr, said), daemon=True,
                         name="nuboard-show").start()
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()),
                                  daemon=True, name="nuboard-show")
        reader.start()
        reader.join(START_TIMEOUT)             # it opens every catalog before the URL line
        line = first[0] if first else ""
        marker = " at "
        if marker not in line:
            proc.kill()
            why = said[-1] if said else (f"no address within {START_TIMEOUT:.0f} s" if not first
                                         else "no output")
            raise RuntimeError(f"nuboard up did not start: {why}")
        url = line.split(marker, 1)[1].split()[0].rstrip("/")
        threading.Thread(target=_drain, args=(proc.stdout, []), daemon=True,
                         name="nuboard-show").start()
        if not _viewer:
            atexit.register(_stop)                   # the kernel shut down: so is its viewer
        _viewer.update(root=root, url=url, process=proc)
        return url


def _stop() -> None:
    """Stop the viewer this kernel started (atexit: a kernel shut down takes its viewer along;
    one killed outright takes it along too, the viewer being in its process group)."""
    proc = _viewer.get("process")
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _drain(stream, tail: list[str]) -> None:
    """Read a stream to its end (so the viewer never blocks on a full pipe), keeping its last
    lines in `tail` for an error message."""
    for line in stream:
        if line.strip():
            tail.append(line.strip())
            del tail[:-5]


def records_html(project: str, query: str | None, records: list, total: int) -> str:
    """nb.runs's result as notebook HTML: a table of the first MAX_ROWS runs (name linked to
    its page when nb.show started a viewer, status, created, and each run's last value of the
    scalars the first run has), and how many more."""
    url = viewer_url()
    names = sorted(records[0].scalars)[:6] if records else []
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["name", "status", "created", *names])
    rows = []
    for r in records[:MAX_ROWS]:
        name = html.escape(r.name)
        if url:
            name = f'<a href="{html.escape(f"{url}/p/{r.project}/.run/{r.id}")}" target="_blank">{name}</a>'
        cells = [name, html.escape(r.status), html.escape(str(r.created)[:19])]
        cells += [_cell((r.scalars.get(n) or {}).get("last", "")) for n in names]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    title = f"{total:,} run{'' if total == 1 else 's'} of {project}"
    if query:
        title += f" matching {query}"
    more = f"<p>… and {total - MAX_ROWS:,} more</p>" if total > MAX_ROWS else ""
    return (f"<div class='nuboard-runs'><b>{html.escape(title)}</b>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}</div>")
