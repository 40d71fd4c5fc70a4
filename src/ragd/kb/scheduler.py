"""Fires sources' scheduled syncs: every ``worker.schedule_poll_s`` the due sources are listed and
each due run is claimed and queued as the same SYNC job a hand sync queues.

Safe on every replica: :meth:`ragd.catalog.base.SourceSchedules.fire_due` moves a run's
``next_run_at`` on by compare-and-set, so of the replicas that see a run due one queues it; the
job then runs under the queue's leases like any other.  A source whose sync is still queued or
running skips the slot (never two syncs of one source at once).  The next run is the first slot
after *now*, so a scheduler that was stopped for several slots runs each source once on its return.
Disabled and paused sources are never due.  Time is read from ``clock`` (default: the knowledge
base's, :attr:`ragd.kb.context.KbContext.clock`, real time unless the composition root was given
another), so a test can run a one-minute schedule on a clock it advances.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress

from ragd.errors import RagError
from ragd.kb.context import KbContext
from ragd.kb.files import new_job
from ragd.kb.schedules import ScheduleRules
from ragd.kb_types import JobKind, SourceSpec

log = logging.getLogger(__name__)


class SourceScheduler:
    def __init__(
        self,
        ctx: KbContext,
        rules: ScheduleRules,
        *,
        poll_s: float,
        on_queue: Callable[[], None] = lambda: None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._ctx, self._rules, self._poll_s = ctx, rules, poll_s
        self._on_queue, self._clock = on_queue, clock or ctx.clock

    async def run(self, stop: asyncio.Event) -> None:
        log.info("source scheduler started (every %.1f s)", self._poll_s)
        while not stop.is_set():
            await self.tick()
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._poll_s)

    async def tick(self, now: float | None = None) -> list[str]:
        """Fire every run due at ``now``; the ids of the sources whose sync this queued."""
        now = self._clock() if now is None else now
        try:
            due = await self._ctx.catalog.due_sources(now)
        except RagError as exc:
            log.warning("source scheduler cannot list due sources: %s", exc)
            return []
        fired = [spec.id for spec in due if await self._fire(spec, now)]
        if fired:
            self._on_queue()
        return fired

    async def _fire(self, spec: SourceSpec, now: float) -> bool:
        if spec.schedule is None:
            return False
        try:
            dataset = await self._ctx.catalog.get_dataset(spec.dataset_id)
            if dataset is None:
                return False
            job = new_job(dataset, JobKind.SYNC, {"source_id": spec.id}, self._ctx.max_attempts)
            following = self._rules.next_run(spec.schedule, now)
            queued = await self._ctx.catalog.fire_due(spec, following, job)
        except RagError as exc:
            log.warning("cannot fire the scheduled sync of source %s: %s", spec.id, exc)
            return False
        if queued is None:
            return False  # another replica fired it, or it was paused meanwhile
        if queued.id != job.id:
            log.info(
                "source %s: slot skipped, its sync %s is still %s", spec.id, queued.id, queued.status.value
            )
            return False
        log.info("source %s: scheduled sync %s queued", spec.id, job.id)
        return True
