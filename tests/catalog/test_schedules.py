"""Sources' schedules in the catalog (both engines): set, pause, due listing, and a due run fired
by exactly one of several replicas racing for it, never while a sync of the source is in flight."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.kb_types import Job, JobKind, JobStatus, SourceKind, SourceSchedule, SourceSpec
from tests.catalog.conftest import START, FakeClock, make_dataset

REPLICAS = 4
HOURLY = SourceSchedule(interval_s=3600)


def sync_job(spec: SourceSpec, tenant_id: str, job_id: str) -> Job:
    return Job(
        id=job_id,
        tenant_id=tenant_id,
        kind=JobKind.SYNC,
        status=JobStatus.QUEUED,
        dataset_id=spec.dataset_id,
        payload={"source_id": spec.id},
    )


async def scheduled_source(catalog: SqlCatalog, due_at: float) -> tuple[SourceSpec, str]:
    dataset = await make_dataset(catalog)
    spec = SourceSpec(id="src", dataset_id=dataset.id, kind=SourceKind.WEB, config={"url": "https://x.test"})
    await catalog.create_source(spec)
    stored = await catalog.set_schedule(spec.id, HOURLY, due_at)
    assert stored is not None
    return stored, dataset.tenant_id


async def test_a_schedule_is_stored_paused_and_listed_when_due(catalog: SqlCatalog) -> None:
    spec, _ = await scheduled_source(catalog, START + 10)
    assert (spec.schedule, spec.paused, spec.next_run_at, spec.last_run_at) == (
        HOURLY,
        False,
        START + 10,
        None,
    )
    cron = SourceSchedule(cron="0 3 * * *", timezone="Europe/Berlin")
    again = await catalog.set_schedule(spec.id, cron, START + 10)
    assert again is not None
    assert again.schedule == cron
    assert await catalog.get_source(spec.id) == again
    assert await catalog.due_sources(START + 9) == []
    assert [s.id for s in await catalog.due_sources(START + 10)] == [spec.id]
    paused = await catalog.set_paused(spec.id, True, START + 10)
    assert paused is not None
    assert paused.paused
    assert paused.schedule == cron
    assert await catalog.due_sources(START + 100) == []
    await catalog.set_paused(spec.id, False, START + 10)
    await catalog.set_source_disabled(spec.id, "no grant")
    assert await catalog.due_sources(START + 100) == []  # a disabled source never fires
    await catalog.set_source_disabled(spec.id, None)
    await catalog.set_schedule(spec.id, None, None)
    assert await catalog.due_sources(START + 100) == []
    assert await catalog.set_schedule("nope", HOURLY, 1.0) is None
    assert await catalog.set_paused("nope", True, None) is None


async def test_firing_moves_the_run_on_and_queues_one_sync(catalog: SqlCatalog, clock: FakeClock) -> None:
    spec, tenant = await scheduled_source(catalog, START)
    fired = await catalog.fire_due(spec, START + 3600, sync_job(spec, tenant, "j1"))
    assert fired is not None
    assert fired.id == "j1"
    assert fired.status is JobStatus.QUEUED
    after = await catalog.get_source(spec.id)
    assert after is not None
    assert (after.next_run_at, after.last_run_at) == (START + 3600, START)
    assert await catalog.fire_due(spec, START + 3600, sync_job(spec, tenant, "j2")) is None  # stale claim
    # due again while its sync is still queued, then running: the slot is skipped, nothing queued
    for status in ("queued", "running"):
        if status == "running":
            assert await catalog.claim("w", 30) is not None
        clock.advance(3600)
        due = await catalog.get_source(spec.id)
        assert due is not None
        busy = await catalog.fire_due(due, clock() + 3600, sync_job(spec, tenant, f"j-{status}"))
        assert busy is not None
        assert busy.id == "j1"
        assert busy.status.value == status
    assert [j.id for j in await catalog.list_jobs(tenant)] == ["j1"]
    moved = await catalog.get_source(spec.id)
    assert moved is not None
    assert moved.next_run_at == clock() + 3600
    assert moved.last_run_at == START


async def test_a_paused_source_is_not_fired_by_a_claim_made_before_the_pause(catalog: SqlCatalog) -> None:
    spec, tenant = await scheduled_source(catalog, START)
    await catalog.set_paused(spec.id, True, START)
    assert await catalog.fire_due(spec, START + 3600, sync_job(spec, tenant, "j")) is None
    assert await catalog.list_jobs(tenant) == []


@pytest.fixture
async def replicas(catalog_url: str, clock: FakeClock) -> AsyncIterator[list[SqlCatalog]]:
    opened = [await open_catalog(catalog_url, clock=clock) for _ in range(REPLICAS)]
    yield opened
    for catalog in opened:
        await catalog.aclose()


async def test_of_replicas_racing_for_a_due_run_one_fires_it(replicas: list[SqlCatalog]) -> None:
    spec, tenant = await scheduled_source(replicas[0], START)
    expected = START
    for round_ in range(5):
        seen = [await c.get_source(spec.id) for c in replicas]  # every replica sees it due
        assert {s.next_run_at for s in seen if s is not None} == {expected}
        results = await asyncio.gather(
            *(
                c.fire_due(
                    dataclasses.replace(s),
                    START + 3600 * (round_ + 1) + i,
                    sync_job(spec, tenant, f"r{round_}-{i}"),
                )
                for i, (c, s) in enumerate(zip(replicas, seen, strict=True))
                if s is not None
            )
        )
        won = [r for r in results if r is not None]
        assert len(won) == 1, results
        winner = won[0]
        assert winner.id.startswith(f"r{round_}-")
        expected = START + 3600 * (round_ + 1) + int(winner.id.rpartition("-")[2])  # the winner's next run
        await replicas[0].request_cancel(winner.id)  # ended: the next round may queue again
    jobs = await replicas[0].list_jobs(tenant)
    assert len(jobs) == 5


async def test_a_sync_waits_while_a_sync_of_its_source_runs(catalog: SqlCatalog, clock: FakeClock) -> None:
    spec, tenant = await scheduled_source(catalog, START)
    await catalog.enqueue(sync_job(spec, tenant, "hand-1"))
    running = await catalog.claim("w1", 30)
    assert running is not None
    assert running.id == "hand-1"
    clock.advance(1)
    await catalog.enqueue(sync_job(spec, tenant, "hand-2"), dedupe=True)  # queued: the first is no twin
    other = dataclasses.replace(sync_job(spec, tenant, "other"), payload={"source_id": "another"})
    await catalog.enqueue(other)
    claimed = await catalog.claim("w2", 30)
    assert claimed is not None
    assert claimed.id == "other"  # a sync of another source runs, this source's second one waits
    assert await catalog.claim("w2", 30) is None
    await catalog.finish("hand-1", "w1", JobStatus.SUCCEEDED)
    after = await catalog.claim("w2", 30)
    assert after is not None
    assert after.id == "hand-2"
