"""Several catalogs on one database (replicas, or worker processes) racing for the same jobs."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.kb_types import ItemStage, Job, JobKind, JobStatus
from tests.catalog.conftest import FakeClock

REPLICAS = 4
JOBS = 20


@pytest.fixture
async def replicas(catalog_url: str, clock: FakeClock) -> AsyncIterator[list[SqlCatalog]]:
    opened = [await open_catalog(catalog_url, clock=clock) for _ in range(REPLICAS)]
    yield opened
    for catalog in opened:
        await catalog.aclose()


async def _drain(catalog: SqlCatalog, worker: str) -> list[str]:
    claimed = []
    while (job := await catalog.claim(worker, 30)) is not None:
        claimed.append(job.id)
        await asyncio.sleep(0)
    return claimed


async def test_every_job_is_claimed_exactly_once(replicas: list[SqlCatalog]) -> None:
    for n in range(JOBS):
        await replicas[0].enqueue(
            Job(id=f"j{n:02}", tenant_id="t", kind=JobKind.INGEST, status=JobStatus.QUEUED)
        )
    runs = await asyncio.gather(*(_drain(c, f"w{i}") for i, c in enumerate(replicas)))
    counts = Counter(job_id for run in runs for job_id in run)
    assert counts == Counter({f"j{n:02}": 1 for n in range(JOBS)})
    assert all(j.status is JobStatus.RUNNING and j.attempts == 1 for j in await replicas[0].list_jobs("t"))


async def test_concurrent_item_updates_keep_exact_counts(replicas: list[SqlCatalog]) -> None:
    keys = [f"k{n:02}" for n in range(JOBS)]
    await replicas[0].enqueue(Job(id="j", tenant_id="t", kind=JobKind.SYNC, status=JobStatus.QUEUED), keys)

    async def work(catalog: SqlCatalog, mine: list[str]) -> None:
        for key in mine:
            await catalog.update_item("j", key, ItemStage.DONE, chunks=2)

    await asyncio.gather(*(work(c, keys[i::REPLICAS]) for i, c in enumerate(replicas)))
    job = await replicas[-1].get_job("j")
    assert job is not None
    assert (job.total, job.done, job.chunks) == (JOBS, JOBS, 2 * JOBS)
