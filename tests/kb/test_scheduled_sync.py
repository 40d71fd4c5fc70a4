"""Scheduled syncs through the real services, job worker and catalog (SQLite and PostgreSQL): a
folder source on a one-minute schedule (the issue's figures) syncs twice within 150 s, never two
syncs at once, and once after the worker was down for three slots; the services' clock is one the
test advances (``open_services(..., clock=...)``).  A one-second schedule on the real clock (plus an
offset for the downtime) checks the same in real time.  The worker and its jobs always run in real
time.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from ragd.bootstrap import open_services
from ragd.bootstrap.knowledge import schedule_rules
from ragd.kb.context import KbContext
from ragd.kb.datasets import create_dataset
from ragd.kb.scheduler import SourceScheduler
from ragd.kb.schedules import ScheduleRules, pause, resume, set_schedule
from ragd.kb.sources import add_source
from ragd.kb.worker import Worker
from ragd.kb_types import Job, JobKind, JobStatus, Principal, SourceKind
from ragd.settings import CatalogSettings, EmbeddingSettings, Settings, WorkerSettings
from tests.kb.conftest import run_to_end

SERVICE = Principal(tenant_id=None, role="admin")
RULES = ScheduleRules(min_interval_s=1.0, jitter=0.0)


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


async def syncs(kb: KbContext, tenant_id: str) -> list[Job]:
    return sorted(
        (j for j in await kb.catalog.list_jobs(tenant_id, limit=1000) if j.kind is JobKind.SYNC),
        key=lambda j: j.created_at,
    )


async def finished_syncs(kb: KbContext, tenant_id: str, count: int) -> list[Job]:
    async with asyncio.timeout(60):
        while True:
            jobs = await syncs(kb, tenant_id)
            if len(jobs) >= count and all(j.status.finished for j in jobs):
                return jobs
            await asyncio.sleep(0.05)


@pytest.mark.slow  # loads the model; the schedule itself takes about 3 s
async def test_a_one_second_schedule_syncs_repeatedly_and_once_after_downtime(
    tmp_path: Path, model_cache: Path, catalog_url: str
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Memo\nThe alderbrook memo explains the travel policy.\n")
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        worker=WorkerSettings(concurrency=2, poll_s=0.05),
        catalog=CatalogSettings(url=catalog_url),
    )
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        spec, first = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        assert (await run_to_end(kb, first)).status is JobStatus.SUCCEEDED
        scheduled = await set_schedule(kb, SERVICE, ds.id, spec.id, {"interval_s": 1}, RULES)
        assert scheduled.next_run_at is not None
        assert scheduled.next_run_at > time.time()

        clock, stop = Clock(), asyncio.Event()
        worker = Worker(kb, settings.worker)
        scheduler = SourceScheduler(kb, RULES, poll_s=0.05, on_queue=worker.wake, clock=clock)
        tasks = [asyncio.create_task(worker.run(stop)), asyncio.create_task(scheduler.run(stop))]
        jobs = await finished_syncs(kb, tenant.id, 3)  # the first sync and two scheduled ones
        stop.set()
        await asyncio.gather(*tasks)
        jobs = await finished_syncs(kb, tenant.id, len(jobs))
        assert all(j.status is JobStatus.SUCCEEDED for j in jobs)
        for before, after in itertools.pairwise(jobs):  # one after another, never two at once
            assert before.finished_at is not None
            assert after.started_at is not None
            assert after.started_at >= before.finished_at
        ran = await kb.catalog.get_source(spec.id)
        assert ran is not None
        assert ran.last_run_at is not None
        assert ran.last_error is None

        clock.offset += 3.5  # the scheduler is down for three slots
        again = SourceScheduler(kb, RULES, poll_s=0.05, clock=clock)
        assert await again.tick() == [spec.id]
        assert await again.tick() == []  # the missed slots owe nothing more
        back = await kb.catalog.get_source(spec.id)
        assert back is not None
        assert back.next_run_at is not None
        assert clock() < back.next_run_at <= clock() + 1.0
        queued = (await syncs(kb, tenant.id))[len(jobs) :]
        assert len(queued) == 1
        assert (await run_to_end(kb, queued[0])).status is JobStatus.SUCCEEDED

        await pause(kb, SERVICE, ds.id, spec.id)
        clock.offset += 10
        assert await again.tick() == []  # a paused source keeps its schedule and never fires
        kept = await kb.catalog.get_source(spec.id)
        assert kept is not None
        assert kept.paused
        assert kept.schedule == scheduled.schedule
        resumed = await resume(kb, SERVICE, ds.id, spec.id, RULES)
        assert resumed.next_run_at is not None
        assert resumed.next_run_at > time.time()


class TickSpy:
    """The times the scheduler asked the catalog for due sources at (one call starts each tick)."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    async def finished_at(self, now: float) -> None:
        """Return once a whole tick ran at ``now`` or later: a second one started after it (the
        clock's own count of reads is not enough on a loaded machine: other readers share it)."""
        async with asyncio.timeout(30):
            while sum(1 for t in self.seen if t >= now) < 2:
                await asyncio.sleep(0.005)


def spy_ticks(kb: Any) -> TickSpy:
    spy = TickSpy()
    catalog = kb.catalog
    due_sources = catalog.due_sources

    async def recorded(now: float) -> Any:
        spy.seen.append(now)
        return await due_sources(now)

    catalog.due_sources = recorded
    return spy


class SteppedClock:
    """A wall clock that moves only when the test advances it; ``advance`` returns once the
    scheduler has finished a tick at the new time (it reads the clock at the start of each tick)."""

    def __init__(self, start: float) -> None:
        self.now, self.reads = start, 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    async def advance(self, seconds: float) -> None:
        self.now += seconds
        seen = self.reads
        async with asyncio.timeout(30):
            while self.reads < seen + 2:  # a tick started after the step, and the next one after it
                await asyncio.sleep(0.005)


@pytest.mark.slow  # loads the model twice (the worker is stopped and started again)
async def test_a_one_minute_schedule_syncs_twice_within_150_s_and_once_after_three_missed_slots(
    tmp_path: Path, model_cache: Path, catalog_url: str
) -> None:
    """The issue's figures on the composed services (``open_services(..., clock=...)``: the
    scheduler and schedules read the injected clock; worker and syncs run in real time)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Memo\nThe alderbrook memo explains the travel policy.\n")
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        # no folder watcher: on every start it queues a sync of its own ("changes made while nobody
        # watched"), which folds into a queued scheduled sync but not into one already running, so
        # the count of syncs would depend on which of the two came first
        worker=WorkerSettings(
            concurrency=2, poll_s=0.02, schedule_poll_s=0.01, schedule_jitter=0.0, watch=False
        ),
        catalog=CatalogSettings(url=catalog_url),
    )
    rules = schedule_rules(settings)
    assert rules.min_interval_s <= 60  # a one-minute schedule at the default bounds
    clock = SteppedClock(time.time())
    async with open_services(settings, background=True, clock=clock) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        spec, _ = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        await finished_syncs(kb, tenant.id, 1)  # the first sync, queued by add_source
        set_at = clock.now
        scheduled = await set_schedule(kb, SERVICE, ds.id, spec.id, {"interval_s": 60}, rules)
        assert scheduled.next_run_at == set_at + 60
        fired: list[float] = []  # schedule time (seconds after set_at) each scheduled sync was queued at
        ticks = spy_ticks(kb)
        while clock.now - set_at < 150:
            await clock.advance(5)
            await ticks.finished_at(clock.now)
            jobs = await syncs(kb, tenant.id)
            fired += [clock.now - set_at] * (len(jobs) - 1 - len(fired))
            await asyncio.sleep(0.05)  # real time for the worker between steps
        assert fired == [60, 120]  # two syncs within 150 s, at the slots
        jobs = await finished_syncs(kb, tenant.id, 3)
        assert len(jobs) == 3
        assert all(j.status is JobStatus.SUCCEEDED for j in jobs)
        for before, after in itertools.pairwise(jobs):  # never two at once
            assert before.finished_at is not None
            assert after.started_at is not None
            assert after.started_at >= before.finished_at
    # the worker (and its scheduler) is down for three slots: 150 s -> 330 s misses 180, 240, 300
    clock.now += 180
    async with open_services(settings, background=True, clock=clock) as services:
        kb = services.knowledge()
        await clock.advance(0)
        for _ in range(5):  # later ticks before the next slot owe nothing more
            await clock.advance(5)
        jobs = await finished_syncs(kb, tenant.id, 4)
        assert len(jobs) == 4  # exactly one catch-up run
        assert jobs[-1].status is JobStatus.SUCCEEDED
        back = await kb.catalog.get_source(spec.id)
        assert back is not None
        assert back.next_run_at == set_at + 330 + 60  # the first slot after the return, not a missed one
