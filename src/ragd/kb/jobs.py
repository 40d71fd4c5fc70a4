"""Jobs as a key may see them: its tenant's, and for a reader only those of datasets it can read."""

from __future__ import annotations

from ragd.errors import NotFound
from ragd.kb.context import KbContext
from ragd.kb_types import Job, JobItem, Principal

ERRORS_SHOWN = 20


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
    ctx: KbContext, principal: Principal, *, updated_after: float | None = None, limit: int = 100
) -> list[Job]:
    jobs = await ctx.catalog.list_jobs(principal.tenant_id, updated_after=updated_after, limit=limit)
    return [j for j in jobs if await _visible(ctx, principal, j)]


async def failed_items(ctx: KbContext, job: Job) -> list[JobItem]:
    if not job.failed:
        return []
    return [i for i in await ctx.catalog.items(job.id) if i.error_code][:ERRORS_SHOWN]


async def cancel_job(ctx: KbContext, principal: Principal, job_id: str) -> Job:
    job = await get_job(ctx, principal, job_id)
    if not principal.can_write:
        raise NotFound(f"job {job_id!r} not found")
    return await ctx.catalog.request_cancel(job.id) or job
