"""The worker claims within the tenants' concurrent-job bound (RAGD_LIMITS__MAX_CONCURRENT_JOBS):
with free slots left, a tenant already running its bound gets none while another tenant's job runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.kb.context import KbContext
from ragd.kb.limits import waiting_reason
from ragd.kb.limits_book import LimitsBook
from ragd.kb.worker import Worker
from ragd.kb_types import Job, JobKind, JobStatus, TenantLimits
from ragd.settings import WorkerSettings


class HeldCatalog:
    """The real catalog, except that a job's dataset is looked up only once ``gate`` opens: its
    jobs stay running until then (and end NOT_FOUND: there is no dataset)."""

    def __init__(self, inner: SqlCatalog, gate: asyncio.Event) -> None:
        self._inner, self._gate = inner, gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get_dataset(self, _dataset_id: str) -> None:
        await self._gate.wait()


async def test_the_worker_leaves_a_tenants_second_job_queued_while_another_tenants_runs(
    tmp_path: Path,
) -> None:
    catalog = await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'ragd.db'}")
    try:
        unused = ("store", "ingestor", "chunker_for", "reader_for", "files_dir", "max_upload_bytes")
        gate = asyncio.Event()
        ctx = KbContext(
            catalog=cast(Any, HeldCatalog(catalog, gate)),
            limits=LimitsBook(defaults=TenantLimits(max_concurrent_jobs=1)),
            **cast(dict[str, Any], dict.fromkeys(unused)),
        )
        worker = Worker(ctx, WorkerSettings(concurrency=3, lease_s=30))
        for job_id, tenant in (("a1", "A"), ("a2", "A"), ("b1", "B")):
            await catalog.enqueue(
                Job(id=job_id, tenant_id=tenant, kind=JobKind.INGEST, status=JobStatus.QUEUED)
            )
            await asyncio.sleep(0.01)  # claim order is creation order
        await worker._fill()  # three free slots, three runnable jobs
        claimed = set(worker._running)
        assert claimed == {"a1", "b1"}
        waiting = await catalog.get_job("a2")
        assert waiting is not None
        assert waiting.status is JobStatus.QUEUED
        reason = await waiting_reason(ctx, waiting)  # what GET /api/v1/jobs/{id} says
        assert reason is not None
        assert "1 of its 1 concurrent jobs" in reason
        first = await catalog.get_job("b1")
        assert first is not None
        assert await waiting_reason(ctx, first) is None  # running: no reason to give
        gate.set()
        await asyncio.gather(*worker._running.values(), return_exceptions=True)  # no dataset: they fail
        await worker._fill()  # a1 ended: a2 may run now
        assert set(worker._running) == {"a2"}
        await asyncio.gather(*worker._running.values(), return_exceptions=True)
    finally:
        await catalog.aclose()
