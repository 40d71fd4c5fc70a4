"""The worker's gauges: the shared queue by status, and the jobs this process runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from prometheus_client import generate_latest

from ragd.catalog.sql import open_catalog
from ragd.kb.context import KbContext
from ragd.kb.worker import COUNT_EVERY_S, Worker
from ragd.kb_types import ItemStage, Job, JobKind, JobStatus
from ragd.observe.metrics import Metrics
from ragd.settings import WorkerSettings


def gauges(metrics: Metrics) -> dict[str, float]:
    out = {}
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line.startswith("kb_"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


async def test_the_queue_is_counted_by_status_at_most_every_few_seconds(tmp_path: Path) -> None:
    catalog = await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'ragd.db'}")
    try:
        tenant = await catalog.create_tenant("acme")
        unused = ("store", "ingestor", "chunker_for", "reader_for", "files_dir", "max_upload_bytes")
        ctx = KbContext(catalog=catalog, **cast(dict[str, Any], dict.fromkeys(unused)))
        metrics = Metrics()
        worker = Worker(ctx, WorkerSettings(), metrics=metrics)
        for n in range(3):
            await catalog.enqueue(
                Job(id=f"j{n}", tenant_id=tenant.id, kind=JobKind.INGEST, status=JobStatus.QUEUED)
            )
        await worker.count_jobs(now=100.0)
        seen = gauges(metrics)
        assert seen['kb_jobs{status="queued"}'] == 3
        assert seen['kb_jobs{status="succeeded"}'] == 0
        assert seen["kb_worker_jobs_running"] == 0
        await catalog.request_cancel("j0")
        await worker.count_jobs(now=100.0 + COUNT_EVERY_S / 2)  # too soon: unchanged
        assert gauges(metrics)['kb_jobs{status="queued"}'] == 3
        await worker.count_jobs(now=100.0 + COUNT_EVERY_S)
        assert gauges(metrics)['kb_jobs{status="queued"}'] == 2
        assert gauges(metrics)[f'kb_jobs{{status="{JobStatus.CANCELLED.value}"}}'] == 1
        # a job that ran to the end with a failed item is counted as partly failed, not succeeded
        await catalog.set_items("j1", ["ok", "bad"])
        assert await catalog.claim("w", 30.0) is not None
        await catalog.update_item("j1", "ok", ItemStage.DONE)
        await catalog.update_item("j1", "bad", ItemStage.FAILED, error_code="UNSUPPORTED_TYPE")
        await catalog.finish("j1", "w", JobStatus.SUCCEEDED)
        await worker.count_jobs(now=100.0 + 2 * COUNT_EVERY_S)
        seen = gauges(metrics)
        assert (seen['kb_jobs{status="partial"}'], seen['kb_jobs{status="succeeded"}']) == (1, 0)
    finally:
        await catalog.aclose()
