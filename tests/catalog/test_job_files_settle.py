"""When a job ends for good, none of its files stays queued or indexing; a cancelled job never succeeds."""

from __future__ import annotations

from ragd.catalog.sql import SqlCatalog
from ragd.kb_types import FileEntry, FileStatus, ItemStage, Job, JobKind, JobStatus
from tests.catalog.conftest import FakeClock, make_dataset

LEASE = 30.0


async def _job_with_files(catalog: SqlCatalog, job_id: str, *, max_attempts: int = 3) -> tuple[str, ...]:
    ds = await make_dataset(catalog, f"ds-{job_id}")
    ids = tuple(f"{job_id}-f{i}" for i in range(3))
    for file_id in ids:
        await catalog.put_file(
            FileEntry(id=file_id, dataset_id=ds.id, name=f"{file_id}.md", status=FileStatus.QUEUED)
        )
    job = Job(
        id=job_id,
        tenant_id=ds.tenant_id,
        kind=JobKind.INGEST,
        status=JobStatus.QUEUED,
        payload={},
        dataset_id=ds.id,
        max_attempts=max_attempts,
    )
    await catalog.enqueue(job, ids)
    return ids


async def _statuses(catalog: SqlCatalog, ids: tuple[str, ...]) -> list[tuple[str, str | None]]:
    out = []
    for file_id in ids:
        entry = await catalog.get_file(file_id)
        assert entry is not None
        out.append((entry.status.value, entry.error_code))
    return out


async def test_cancelling_a_queued_job_fails_its_queued_files(catalog: SqlCatalog) -> None:
    ids = await _job_with_files(catalog, "queued")
    await catalog.request_cancel("queued")
    assert await _statuses(catalog, ids) == [("failed", "CANCELLED")] * 3
    job = await catalog.get_job("queued")
    assert job is not None
    assert (job.status, job.failed) == (JobStatus.CANCELLED, 3)


async def test_a_running_job_cancelled_then_done_ends_cancelled_not_succeeded(catalog: SqlCatalog) -> None:
    ids = await _job_with_files(catalog, "run")
    assert await catalog.claim("w", LEASE) is not None
    await catalog.update_item("run", ids[0], ItemStage.INDEXING, file_id=ids[0])
    await catalog.put_file(
        FileEntry(
            id=ids[0],
            dataset_id=(await catalog.get_file(ids[0])).dataset_id,  # type: ignore[union-attr]
            name="x.md",
            status=FileStatus.INDEXED,
        )
    )
    await catalog.update_item("run", ids[0], ItemStage.DONE)
    await catalog.request_cancel("run")
    ended = await catalog.finish("run", "w", JobStatus.SUCCEEDED)
    assert ended.status is JobStatus.CANCELLED
    assert await _statuses(catalog, ids) == [
        ("indexed", None),
        ("failed", "CANCELLED"),
        ("failed", "CANCELLED"),
    ]


async def test_a_final_failure_and_a_lost_worker_settle_every_file(
    catalog: SqlCatalog, clock: FakeClock
) -> None:
    failed = await _job_with_files(catalog, "fails", max_attempts=1)
    assert await catalog.claim("w", LEASE) is not None
    await catalog.update_item("fails", failed[1], ItemStage.INDEXING, file_id=failed[1])
    await catalog.finish("fails", "w", JobStatus.FAILED, error_code="STORE_UNAVAILABLE", retry_in_s=1)
    assert await _statuses(catalog, failed) == [("failed", "STORE_UNAVAILABLE")] * 3

    lost = await _job_with_files(catalog, "lost", max_attempts=1)
    assert (await catalog.claim("w", LEASE)).id == "lost"  # type: ignore[union-attr]
    clock.advance(LEASE + 1)
    assert await catalog.claim("w2", LEASE) is None  # the lapsed job is closed, not handed out
    assert await _statuses(catalog, lost) == [("failed", "WORKER_LOST")] * 3
