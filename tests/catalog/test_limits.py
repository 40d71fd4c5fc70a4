"""Per-tenant limits in the catalog (both engines): overrides, usage, and the concurrent-job bound
that ``claim`` keeps across replicas."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.errors import NotFound
from ragd.kb_types import Dataset, FileEntry, FileStatus, Job, JobKind, JobStatus, TenantUsage
from tests.catalog.conftest import FakeClock, make_dataset


def _job(job_id: str, tenant_id: str) -> Job:
    return Job(id=job_id, tenant_id=tenant_id, kind=JobKind.INGEST, status=JobStatus.QUEUED)


async def _enqueue(catalog: SqlCatalog, clock: FakeClock, *jobs: tuple[str, str]) -> None:
    for job_id, tenant_id in jobs:
        await catalog.enqueue(_job(job_id, tenant_id))
        clock.advance(1)  # claim order is creation order


async def test_overrides_are_stored_cleaned_and_replaced(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    assert await catalog.get_tenant_limits(acme.id) == {}
    stored = await catalog.set_tenant_limits(
        acme.id, {"max_chunks": 100, "search_per_minute": 0, "bogus": 3, "max_bytes": -1}
    )
    assert stored == {"search_per_minute": 0, "max_chunks": 100}
    assert await catalog.get_tenant_limits(acme.id) == stored
    assert await catalog.list_tenant_limits() == {acme.id: stored}
    assert await catalog.set_tenant_limits(acme.id, {"chat_per_minute": 5}) == {"chat_per_minute": 5}
    assert await catalog.get_tenant_limits(acme.id) == {"chat_per_minute": 5}
    assert await catalog.set_tenant_limits(acme.id, {}) == {}
    assert await catalog.list_tenant_limits() == {}
    with pytest.raises(NotFound):
        await catalog.set_tenant_limits("no-such-tenant", {"max_chunks": 1})


async def test_usage_counts_chunks_bytes_of_held_files_and_live_running_jobs(
    catalog: SqlCatalog, clock: FakeClock
) -> None:
    docs = await make_dataset(catalog, "acme", "docs")
    more = await catalog.create_dataset(
        Dataset(id="ds-more", tenant_id=docs.tenant_id, name="more", collection_name="c-more")
    )
    other = await make_dataset(catalog, "globex", "docs")
    files = [
        FileEntry(id="a", dataset_id=docs.id, name="a", status=FileStatus.INDEXED, chunks=10, size=1000),
        FileEntry(id="b", dataset_id=more.id, name="b", status=FileStatus.INDEXED, chunks=5, size=300),
        # queued upload: its bytes wait on disk, it holds no chunks: not counted
        FileEntry(id="c", dataset_id=more.id, name="c", status=FileStatus.QUEUED, chunks=0, size=9999),
        FileEntry(id="d", dataset_id=other.id, name="d", status=FileStatus.INDEXED, chunks=7, size=70),
    ]
    for entry in files:
        await catalog.put_file(entry)
    await _enqueue(catalog, clock, ("j1", docs.tenant_id), ("j2", docs.tenant_id))
    assert await catalog.claim("w", 30) is not None
    usage = await catalog.tenant_usage()
    assert usage[docs.tenant_id] == TenantUsage(chunks=15, bytes=1300, running_jobs=1)
    assert usage[other.tenant_id] == TenantUsage(chunks=7, bytes=70, running_jobs=0)
    alone = await catalog.tenant_usage(docs.tenant_id, exclude_file="a")
    assert alone == {docs.tenant_id: TenantUsage(chunks=5, bytes=300, running_jobs=1)}
    clock.advance(31)  # the lease lapsed: the job no longer counts as running
    assert (await catalog.tenant_usage(docs.tenant_id))[docs.tenant_id].running_jobs == 0


async def test_claim_keeps_a_tenant_within_its_concurrent_jobs(catalog: SqlCatalog, clock: FakeClock) -> None:
    # tenant A's two jobs come first; with a bound of 1, B's job runs while A's second waits queued
    await _enqueue(catalog, clock, ("a1", "A"), ("a2", "A"), ("b1", "B"))
    first = await catalog.claim("w1", 30, max_running=1)
    second = await catalog.claim("w2", 30, max_running=1)
    assert (first and first.id, second and second.id) == ("a1", "b1")
    assert await catalog.claim("w3", 30, max_running=1) is None
    waiting = await catalog.get_job("a2")
    assert waiting is not None
    assert waiting.status is JobStatus.QUEUED
    await catalog.finish("a1", "w1", JobStatus.SUCCEEDED)
    third = await catalog.claim("w3", 30, max_running=1)
    assert third is not None
    assert third.id == "a2"


async def test_a_tenants_override_replaces_the_default_bound(catalog: SqlCatalog, clock: FakeClock) -> None:
    acme = await catalog.create_tenant("acme")
    globex = await catalog.create_tenant("globex")
    await catalog.set_tenant_limits(acme.id, {"max_concurrent_jobs": 2})
    await catalog.set_tenant_limits(globex.id, {"max_concurrent_jobs": 0})  # 0: no bound at all
    await _enqueue(
        catalog, clock, *((f"a{n}", acme.id) for n in range(3)), *((f"g{n}", globex.id) for n in range(3))
    )
    claimed = []
    while (job := await catalog.claim("w", 30, max_running=1)) is not None:
        claimed.append(job.id)
    assert claimed == ["a0", "a1", "g0", "g1", "g2"]
    # without a bound (the default 0) everything runs
    assert (await catalog.claim("w", 30)) is None  # a2 waits: the override still holds
    await catalog.set_tenant_limits(acme.id, {})
    assert (await catalog.claim("w", 30, max_running=0)) is not None


async def test_a_lapsed_lease_does_not_hold_a_slot(catalog: SqlCatalog, clock: FakeClock) -> None:
    await _enqueue(catalog, clock, ("a1", "A"), ("a2", "A"))
    assert (await catalog.claim("w1", 10, max_running=1)) is not None
    assert await catalog.claim("w2", 10, max_running=1) is None
    clock.advance(11)  # w1 died: its job is runnable again and no longer running
    again = await catalog.claim("w2", 10, max_running=1)
    assert again is not None
    assert again.id == "a1"
    assert again.attempts == 2
    assert await catalog.claim("w3", 10, max_running=1) is None


async def test_replicas_racing_never_run_more_than_the_bound(catalog_url: str, clock: FakeClock) -> None:
    replicas = [await open_catalog(catalog_url, clock=clock) for _ in range(4)]
    try:
        await _enqueue(replicas[0], clock, *((f"a{n:02}", "A") for n in range(8)), ("b", "B"))

        async def drain(catalog: SqlCatalog, worker: str) -> list[str]:
            won = []
            for _ in range(6):
                job = await catalog.claim(worker, 30, max_running=1)
                if job is not None:
                    won.append(job.id)
                await asyncio.sleep(0)
            return won

        runs = await asyncio.gather(*(drain(c, f"w{i}") for i, c in enumerate(replicas)))
        # which of A's jobs wins is not fixed (they were queued in the same clock tick): one of them
        claimed = Counter(job_id[0] for run in runs for job_id in run)
        assert claimed == Counter({"a": 1, "b": 1})
        running = await replicas[0].list_jobs(None, statuses=[JobStatus.RUNNING])
        assert sorted(j.id[0] for j in running) == ["a", "b"]
        assert {j.id for j in running} == {job_id for run in runs for job_id in run}
    finally:
        for catalog in replicas:
            await catalog.aclose()
