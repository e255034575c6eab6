"""The one progress bar of the long commands (`import`, `sync`, `up s3://...`): a rich bar on
stderr of the items done, drawn only when stderr is a terminal, gone when the work ends.

    summary = with_bar("Pulling", lambda progress: pull(url, root, progress=progress))

`work` gets a callback progress(done, total, what) (None off a terminal, so nothing is drawn).
"""
from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def with_bar(verb: str, work: "Callable[[Callable[[int, int, str], None] | None], T]") -> T:
    """work(progress), with a bar that says `verb`, the count and the last item's name."""
    from rich.console import Console
    console = Console(stderr=True)
    if not console.is_terminal:
        return work(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn(f"[bold]{verb}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=what)

        return work(progress)
