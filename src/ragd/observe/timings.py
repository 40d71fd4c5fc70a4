"""Stage timings of one request, for a caller that asks (``explain``): a per-request collector.

Every search stage is already reported once, to the ``retrieval_stage_duration_seconds``
histogram (:meth:`ragd.observe.metrics.Metrics.stage`, the retriever's ``timings`` callback); the
same report also goes to the collector of the current request when one is open::

    with collect_timings() as timings:
        await searcher.run(request)
    timings.milliseconds()   # {"embed_dense": 3.1, "qdrant": 1.2, "retrieve": 4.6, ...}

The collector lives in a context variable, so tasks a request starts (``asyncio.gather`` over
several dense models) report into it, and other requests never see it.  A stage reported more
than once (one per query, one per model) is summed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class StageTimings:
    """Seconds per stage name, summed over every report during one request."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def milliseconds(self, digits: int = 3) -> dict[str, float]:
        return {stage: round(s * 1000.0, digits) for stage, s in self.seconds.items()}


_current: ContextVar[StageTimings | None] = ContextVar("ragd_stage_timings", default=None)


@contextmanager
def collect_timings() -> Iterator[StageTimings]:
    """Collect the stage timings reported inside the block (in this task and those it starts)."""
    timings = StageTimings()
    token = _current.set(timings)
    try:
        yield timings
    finally:
        _current.reset(token)


def record_stage(stage: str, seconds: float) -> None:
    """Add a stage's time to the current request's collector, if one is open (else nothing)."""
    timings = _current.get()
    if timings is not None:
        timings.add(stage, seconds)
