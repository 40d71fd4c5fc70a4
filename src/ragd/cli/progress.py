"""A rich progress bar with counts, rates (items/s, chunks/s) and ETA."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class RateProgress:
    """``with RateProgress(console, "Ingesting", total, unit="files") as p: p.advance(chunks=12)``"""

    def __init__(self, console: Console, label: str, total: int, *, unit: str = "files") -> None:
        self._unit = unit
        self._chunks = 0
        self._failed = 0
        self._started = time.perf_counter()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rates]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal and console.quiet,
        )
        self._task: TaskID = self._progress.add_task(label, total=total, rates="")

    def __enter__(self) -> RateProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def advance(self, *, chunks: int = 0, failed: bool = False, steps: int = 1) -> None:
        self._chunks += chunks
        self._failed += int(failed)
        done = self._progress.tasks[0].completed + steps
        elapsed = max(time.perf_counter() - self._started, 1e-6)
        rates = f"{done / elapsed:.1f} {self._unit}/s"
        if self._chunks:
            rates += f" · {self._chunks / elapsed:.1f} chunks/s"
        if self._failed:
            rates += f" · [red]{self._failed} failed[/red]"
        self._progress.update(self._task, advance=steps, rates=rates)

    def update_to(self, *, done: int, total: int, chunks: int, failed: int) -> None:
        """Absolute counts (a job followed over the event stream)."""
        self._chunks, self._failed = chunks, failed
        elapsed = max(time.perf_counter() - self._started, 1e-6)
        rates = f"{done / elapsed:.1f} {self._unit}/s"
        if chunks:
            rates += f" · {chunks / elapsed:.1f} chunks/s"
        if failed:
            rates += f" · [red]{failed} failed[/red]"
        self._progress.update(self._task, completed=done, total=total, rates=rates)
