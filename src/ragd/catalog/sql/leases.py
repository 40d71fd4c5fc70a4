"""The job queue's leases: claim, heartbeat, finish.

A claim runs in one write transaction: on PostgreSQL the candidate row is
taken with ``SELECT … FOR UPDATE SKIP LOCKED`` (a row another replica is
claiming is skipped, never claimed twice); on SQLite the transaction began
with ``BEGIN IMMEDIATE``, so it is the only writer.  A running job whose lease
lapsed is runnable again, except when its cancel was requested (it becomes
CANCELLED) or it has used up its attempts (FAILED with ``WORKER_LOST``): a job
that kills its worker every time must not be retried for ever.  A tenant already
running its ``max_concurrent_jobs`` is passed over (:mod:`.job_bounds`).  A SYNC job waits while
a twin of it (the same source: the same dedupe key) runs with a live lease: one source never has
two syncs at once, whoever queued them (a hand sync, the folder watcher, a schedule).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import RowMapping, and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql import records
from ragd.catalog.sql.clock import bump_jobs
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.job_bounds import job_bounds, tenant_full
from ragd.catalog.sql.job_rows import load_job, lock_job, settle_files
from ragd.catalog.sql.tables import jobs
from ragd.errors import NotFound
from ragd.kb_types import Job, JobKind, JobStatus

logger = logging.getLogger(__name__)

WORKER_LOST = "WORKER_LOST"
#: abandoned jobs closed by one claim at most, before it gives up for this round
_SWEEP = 50
_QUEUED, _RUNNING = JobStatus.QUEUED.value, JobStatus.RUNNING.value
_FINAL = tuple(s for s in JobStatus if s.finished)


class SqlLeases:
    _db: Database

    async def claim(self, worker_id: str, lease_s: float, *, max_running: int = 0) -> Job | None:
        async with self._db.write() as conn:
            now = self._db.now()
            changed: list[str] = []
            claimed: str | None = None
            bounds = await job_bounds(conn, max_running)
            full: set[str] = set()  # tenants running their bound: their jobs wait queued
            for _ in range(_SWEEP):
                row = await _next_runnable(conn, now, full)
                if row is None:
                    break
                if await _close_abandoned(conn, row, now):
                    changed.append(row["id"])
                    continue
                if await tenant_full(conn, row["tenant_id"], bounds, now):
                    full.add(row["tenant_id"])
                    continue
                changed.append(row["id"])
                await _start(conn, row["id"], worker_id, now + lease_s, now)
                claimed = row["id"]
                break
            if changed:
                await bump_jobs(conn, now, *changed)
            return records.job(await load_job(conn, claimed)) if claimed else None

    async def heartbeat(self, job_id: str, worker_id: str, lease_s: float) -> Job | None:
        """Extend the lease (not a visible change: ``updated_at`` stays); None when the worker
        no longer holds it."""
        async with self._db.write() as conn:
            statement = (
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.lease_owner == worker_id, jobs.c.status == _RUNNING)
                .values(lease_expires=self._db.now() + lease_s)
                .returning(*jobs.c)
            )
            row = (await conn.execute(statement)).mappings().first()
            return records.job(row) if row is not None else None

    async def finish(
        self,
        job_id: str,
        worker_id: str,
        status: JobStatus,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
        retry_in_s: float | None = None,
    ) -> Job:
        """End an attempt (see the Protocol).  A worker that no longer holds the lease changes
        nothing and gets the job as it stands; a job whose cancel was requested is not retried;
        NotFound for an unknown job; ValueError for a status that is not final."""
        if status not in _FINAL:
            raise ValueError(f"finish needs a final status, not {status.value!r}")
        async with self._db.write() as conn:
            row = await lock_job(conn, job_id)
            if row is None:
                raise NotFound(f"no job {job_id!r}")
            if row["lease_owner"] != worker_id or row["status"] != _RUNNING:
                return records.job(row)
            now = self._db.now()
            change: dict[str, Any] = {
                "lease_owner": None,
                "lease_expires": None,
                "error_code": error_code,
                "error_message": error_message,
            }
            retry = (
                status is JobStatus.FAILED
                and retry_in_s is not None
                and row["attempts"] < row["max_attempts"]
                and not row["cancel_requested"]
            )
            if retry and retry_in_s is not None:
                change |= {"status": _QUEUED, "run_after": now + retry_in_s}
            else:
                if row["cancel_requested"] and status is JobStatus.SUCCEEDED:  # never "succeeded"
                    status = JobStatus.CANCELLED
                    change |= {"error_code": "CANCELLED", "error_message": "cancelled on request"}
                elif status is JobStatus.SUCCEEDED:  # ran to the end: its items say how it ended
                    status = JobStatus.completed(row["done"], row["failed"])
                change |= {"status": status.value, "finished_at": now}
                if status not in (JobStatus.SUCCEEDED, JobStatus.PARTIAL):
                    await settle_files(conn, job_id, change["error_code"] or status.value.upper(), now)
            await conn.execute(update(jobs).where(jobs.c.id == job_id).values(**change))
            await bump_jobs(conn, now, job_id)
            return records.job(await load_job(conn, job_id))


async def _next_runnable(conn: AsyncConnection, now: float, skip_tenants: set[str]) -> RowMapping | None:
    twin = jobs.alias("twin")
    twin_running = exists().where(
        twin.c.tenant_id == jobs.c.tenant_id,
        twin.c.dedupe_key == jobs.c.dedupe_key,
        twin.c.status == _RUNNING,
        twin.c.lease_expires >= now,
        twin.c.id != jobs.c.id,
    )
    one_sync_at_a_time = or_(jobs.c.kind != JobKind.SYNC.value, ~twin_running)
    due = and_(jobs.c.status == _QUEUED, jobs.c.run_after <= now, one_sync_at_a_time)
    lapsed = and_(jobs.c.status == _RUNNING, jobs.c.lease_expires < now)
    runnable = or_(due, lapsed)
    if skip_tenants:
        runnable = and_(runnable, jobs.c.tenant_id.not_in(sorted(skip_tenants)))
    query = (
        select(jobs)
        .where(runnable)
        .order_by(jobs.c.created_at, jobs.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    return (await conn.execute(query)).mappings().first()


async def _start(conn: AsyncConnection, job_id: str, worker_id: str, expires: float, now: float) -> None:
    statement = (
        update(jobs)
        .where(jobs.c.id == job_id)
        .values(
            status=_RUNNING,
            lease_owner=worker_id,
            lease_expires=expires,
            attempts=jobs.c.attempts + 1,
            started_at=now,
            finished_at=None,
        )
    )
    await conn.execute(statement)


async def _close_abandoned(conn: AsyncConnection, row: RowMapping, now: float) -> bool:
    """Finish a lapsed job that must not run again; False when it may be claimed."""
    if row["status"] != _RUNNING:
        return False
    change: dict[str, Any]
    if row["cancel_requested"]:
        change = {"status": JobStatus.CANCELLED.value}
    elif row["attempts"] >= row["max_attempts"]:
        message = f"its worker stopped renewing the lease on each of {row['attempts']} attempts"
        change = {"status": JobStatus.FAILED.value, "error_code": WORKER_LOST, "error_message": message}
    else:
        return False
    logger.warning("job %s abandoned by its worker: %s", row["id"], change["status"])
    await settle_files(conn, row["id"], change.get("error_code") or "CANCELLED", now)
    change |= {"lease_owner": None, "lease_expires": None, "finished_at": now}
    await conn.execute(update(jobs).where(jobs.c.id == row["id"]).values(**change))
    return True
