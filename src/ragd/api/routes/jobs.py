"""Jobs: poll one, list, cancel, and follow them live over Server-Sent Events.

    GET  /api/v1/jobs[?status=…]          the key's jobs, newest first (only those in the statuses named)
    GET  /api/v1/jobs/{id}                one job with every item's stage
    POST /api/v1/jobs/{id}/cancel
    POST /api/v1/jobs/{id}/retry          a new job for what a finished job left undone and can
                                          succeed again; ``retry`` says how many items it
                                          retries and which failed ones it skipped (by code)
    GET  /api/v1/events[?job_id=…]        text/event-stream: ``event: job`` with the job's counts,
                                          rate, ETA and failed items whenever it changes

The stream reads the shared catalog (not in-process state), so it shows jobs
run by any replica.  ``Last-Event-ID`` resumes after a reconnect; a comment
line every 15 s keeps proxies from closing an idle stream.  Following one job
ends the stream once the job has finished.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.kb_schemas import item_out, job_out
from ragd.bootstrap import Services
from ragd.kb import jobs as kb_jobs
from ragd.kb import limits as kb_limits
from ragd.kb.context import KbContext
from ragd.kb_types import Principal

router = APIRouter(prefix="/api/v1", tags=["jobs"])
Svc = Annotated[Services, Depends(services)]

POLL_S = 0.5
KEEPALIVE_S = 15.0


@router.get("/jobs")
async def list_jobs(
    caller: Caller,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    status: Annotated[
        list[str] | None, Query(max_length=10, description="only jobs in these statuses (repeatable)")
    ] = None,
) -> dict[str, Any]:
    statuses = kb_jobs.parse_statuses(status) if status else None
    jobs = await kb_jobs.list_jobs(svc.knowledge(), caller, limit=limit, statuses=statuses)
    return {"jobs": [job_out(j) for j in jobs]}


@router.get("/jobs/{job_id}")
async def get_job(job_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    job, items = await kb_jobs.job_items(svc.knowledge(), caller, job_id)
    out = job_out(job, [i for i in items if i.error_code][: kb_jobs.ERRORS_SHOWN])
    out["waiting"] = await kb_limits.waiting_reason(svc.knowledge(), job)  # queued behind its tenant's bound
    out["items"] = [item_out(i) for i in items]
    return out


@router.post("/jobs/{job_id}/cancel")
async def cancel_job(job_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return job_out(await kb_jobs.cancel_job(svc.knowledge(), caller, job_id))


@router.post("/jobs/{job_id}/retry", status_code=202)
async def retry_job(job_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    """A new job for the failed or unfinished items of a finished job (docs/knowledge-bases.md)."""
    retry = await kb_jobs.retry_job(svc.knowledge(), caller, job_id)
    svc.wake_worker()
    return job_out(retry.job) | {"retry": {"retried": retry.retried, "skipped": retry.skipped}}


@router.get("/events", response_class=StreamingResponse)
async def events(
    request: Request,
    caller: Caller,
    svc: Svc,
    job_id: Annotated[str | None, Query(max_length=100)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    kb = svc.knowledge()
    if job_id is not None:
        await kb_jobs.get_job(kb, caller, job_id)  # 404 before the stream starts
    cursor = _cursor(last_event_id)
    return StreamingResponse(
        _stream(request, kb, caller, job_id, cursor),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _cursor(last_event_id: str | None) -> float | None:
    try:
        return float(last_event_id) if last_event_id else None
    except ValueError:
        return None


async def _changes(
    kb: KbContext, caller: Principal, job_id: str | None, cursor: float | None
) -> list[dict[str, Any]]:
    if job_id is not None:
        job = await kb_jobs.get_job(kb, caller, job_id)
        jobs = [job] if cursor is None or job.updated_at > cursor else []
    else:
        jobs = await kb_jobs.list_jobs(kb, caller, updated_after=cursor, limit=1000)
    return [job_out(j, await kb_jobs.failed_items(kb, j)) for j in sorted(jobs, key=lambda j: j.updated_at)]


async def _stream(
    request: Request, kb: KbContext, caller: Principal, job_id: str | None, cursor: float | None
) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    quiet_since = time.monotonic()
    while not await request.is_disconnected():
        for job in await _changes(kb, caller, job_id, cursor):
            cursor = max(cursor or 0.0, job["updated_at"])
            yield f"id: {job['updated_at']!r}\nevent: job\ndata: {json.dumps(job)}\n\n"
            quiet_since = time.monotonic()
            if job_id is not None and job["finished"]:
                return
        if time.monotonic() - quiet_since > KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(POLL_S)
