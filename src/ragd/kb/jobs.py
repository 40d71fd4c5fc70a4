"""Jobs as a key may see them: its tenant's, and for a reader only those of datasets it can read.

Retrying a job (:func:`retry_job`) queues a **new** job and leaves the old one as it ended:

    ingest, reindex   a job of the same kind over the files whose items failed or never finished
                      (files deleted since are left out); those files go back to ``queued``.
                      Items that failed for good (:func:`ragd.errors.is_permanent`: an
                      unsupported type, an empty or corrupt file…) are skipped and counted
    sync              a sync of the same source: unchanged items are skipped by their ledger
                      fingerprints, failed ones are fetched again (folded into a sync already queued)

A queued or running job is a CONFLICT (cancel it first, or wait); so is a finished job with
nothing to retry (it succeeded with no failed item, none of its failed files is left, or every
one failed for good).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ragd.errors import Conflict, InvalidRequest, NotFound, is_permanent
from ragd.kb import audit
from ragd.kb.access import require_admin, require_writer, writable
from ragd.kb.context import KbContext
from ragd.kb.files import new_job
from ragd.kb.migrations import retry_migration
from ragd.kb.sources import enqueue_sync
from ragd.kb_types import Dataset, FileStatus, ItemStage, Job, JobItem, JobKind, JobStatus, Principal

ERRORS_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Retry:
    """What a retry queued: the new job, how many items it retries, and the failed items left
    out because they would fail the same way again, counted by error code."""

    job: Job
    retried: int
    skipped: dict[str, int] = field(default_factory=dict)


async def _visible(ctx: KbContext, principal: Principal, job: Job) -> bool:
    if not principal.is_service and job.tenant_id != principal.tenant_id:
        return False
    if principal.can_write or job.dataset_id is None:
        return True
    dataset = await ctx.catalog.get_dataset(job.dataset_id)
    return dataset is not None and principal.can_read(dataset)


async def get_job(ctx: KbContext, principal: Principal, job_id: str) -> Job:
    job = await ctx.catalog.get_job(job_id)
    if job is None or not await _visible(ctx, principal, job):
        raise NotFound(f"job {job_id!r} not found")
    return job


async def job_items(ctx: KbContext, principal: Principal, job_id: str) -> tuple[Job, list[JobItem]]:
    job = await get_job(ctx, principal, job_id)
    return job, await ctx.catalog.items(job.id)


async def list_jobs(
    ctx: KbContext,
    principal: Principal,
    *,
    updated_after: float | None = None,
    limit: int = 100,
    statuses: Sequence[JobStatus] | None = None,
) -> list[Job]:
    jobs = await ctx.catalog.list_jobs(
        principal.tenant_id, updated_after=updated_after, limit=limit, statuses=statuses
    )
    return [j for j in jobs if await _visible(ctx, principal, j)]


def parse_statuses(values: Sequence[str]) -> list[JobStatus]:
    """Job statuses named by a caller (a filter); INVALID_REQUEST naming the valid ones."""
    try:
        return [JobStatus.parse(v) for v in values]
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc


async def failed_items(ctx: KbContext, job: Job) -> list[JobItem]:
    if not job.failed:
        return []
    return [i for i in await ctx.catalog.items(job.id) if i.error_code][:ERRORS_SHOWN]


@audit.audited("job.cancel", "job", "job_id")
async def cancel_job(ctx: KbContext, principal: Principal, job_id: str) -> Job:
    job = await get_job(ctx, principal, job_id)
    audit.note(tenant_id=job.tenant_id, kind=job.kind.value)
    if not principal.can_write:
        raise NotFound(f"job {job_id!r} not found")
    return await ctx.catalog.request_cancel(job.id) or job


@audit.audited("job.retry", "job", "job_id")
async def retry_job(ctx: KbContext, principal: Principal, job_id: str) -> Retry:
    """Queue a new job for what ``job_id`` left undone (module docstring); writers only."""
    job = await get_job(ctx, principal, job_id)
    audit.note(tenant_id=job.tenant_id, kind=job.kind.value)
    require_writer(principal)
    if not job.status.finished:
        raise Conflict(
            f"job {job_id!r} is {job.status.value}: only a finished job can be retried",
            hint="cancel it first (POST /api/v1/jobs/{id}/cancel), or wait for it to end",
        )
    if job.status is JobStatus.SUCCEEDED and not job.failed:
        raise Conflict(f"job {job_id!r} succeeded with no failed item: there is nothing to retry")
    dataset = await writable(principal, ctx.catalog, job.dataset_id or "")
    if job.kind is JobKind.MIGRATE:
        require_admin(principal, dataset.tenant_id)
        retry = await retry_migration(ctx, job)
        return Retry(retry, retried=retry.total)
    if job.kind is JobKind.SYNC:
        source = await ctx.catalog.get_source(str(job.payload.get("source_id", "")))
        if source is None or source.dataset_id != dataset.id:
            raise Conflict(f"the source of job {job_id!r} was removed: there is nothing to retry")
        return Retry(await enqueue_sync(ctx, dataset, source), retried=job.total - job.done)
    return await _retry_files(ctx, job, dataset)


def _for_good(item: JobItem) -> bool:
    return item.stage is ItemStage.FAILED and is_permanent(item.error_code or "")


async def _retry_files(ctx: KbContext, job: Job, dataset: Dataset) -> Retry:
    undone = [
        i for i in await ctx.catalog.items(job.id) if not i.stage.finished or i.stage is ItemStage.FAILED
    ]
    skipped = Counter(i.error_code or "" for i in undone if _for_good(i))
    entries = []
    for item in undone:
        entry = await ctx.catalog.get_file(item.file_id or item.key)
        if entry is not None and entry.dataset_id == dataset.id and not _for_good(item):
            entries.append(entry)
    if not entries and skipped:
        raise Conflict(
            f"job {job.id!r} has nothing to retry: its {skipped.total()} failed files would fail "
            f"the same way again ({_counted(skipped)})",
            hint="fix the files and upload them again, or change the server (OCR, size limit) and re-index",
        )
    if not entries:
        raise Conflict(f"job {job.id!r} left no file to retry (none failed, or they were deleted)")
    ids = [e.id for e in entries]
    for entry in entries:
        await ctx.catalog.put_file(replace(entry, status=FileStatus.QUEUED))
    retry = new_job(dataset, job.kind, {"file_ids": ids}, ctx.max_attempts)
    return Retry(await ctx.catalog.enqueue(retry, ids), retried=len(ids), skipped=dict(skipped))


def _counted(codes: Counter[str]) -> str:
    return ", ".join(f"{n} {code}" for code, n in codes.most_common())
