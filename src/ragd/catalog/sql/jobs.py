"""The job queue's records: enqueue (with dedupe), items and their counts, cancel, listing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql import records
from ragd.catalog.sql.clock import bump_jobs
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.job_rows import advisory_key, dedupe_key, load_job, lock_job, recount, settle_files
from ragd.catalog.sql.tables import job_items, jobs
from ragd.catalog.sql.upsert import upsert
from ragd.errors import NotFound
from ragd.kb_types import ItemStage, Job, JobItem, JobStatus


class SqlJobs:
    _db: Database

    async def enqueue(self, job: Job, items: Sequence[str] = (), *, dedupe: bool = False) -> Job:
        """Store ``job`` as QUEUED (attempts 0, due now).  ``dedupe``: a still-queued job of the
        same tenant, kind, dataset and payload is returned instead, with ``items`` added to it."""
        key, keys = dedupe_key(job), list(dict.fromkeys(items))
        async with self._db.write(conflict=f"a job {job.id!r} exists") as conn:
            now = self._db.now()
            twin = await self._queued_twin(conn, job.tenant_id, key) if dedupe else None
            if twin is not None:
                if await _add_items(conn, twin, keys):
                    await recount(conn, twin)
                    await bump_jobs(conn, now, twin)
                return records.job(await load_job(conn, twin))
            await conn.execute(insert(jobs).values(**new_job_values(job, key, len(keys), now)))
            await _add_items(conn, job.id, keys)
            await bump_jobs(conn, now, job.id)
            return records.job(await load_job(conn, job.id))

    async def _queued_twin(self, conn: AsyncConnection, tenant_id: str, key: str) -> str | None:
        if conn.dialect.name == "postgresql":  # one dedupe check at a time per payload
            lock = text("SELECT pg_advisory_xact_lock(:key)")
            await conn.execute(lock, {"key": advisory_key(tenant_id, key)})
        query = (
            select(jobs.c.id)
            .where(
                jobs.c.tenant_id == tenant_id,
                jobs.c.dedupe_key == key,
                jobs.c.status == JobStatus.QUEUED.value,
            )
            .order_by(jobs.c.created_at, jobs.c.id)
            .limit(1)
            .with_for_update()
        )
        found: str | None = (await conn.execute(query)).scalar()
        return found

    async def get_job(self, job_id: str) -> Job | None:
        async with self._db.read() as conn:
            row = (await conn.execute(select(jobs).where(jobs.c.id == job_id))).mappings().first()
        return records.job(row) if row is not None else None

    async def count_jobs(
        self, tenant_id: str | None = None, *, dataset_ids: Sequence[str] | None = None
    ) -> dict[JobStatus, int]:
        query = select(jobs.c.status, func.count()).group_by(jobs.c.status)
        if tenant_id is not None:
            query = query.where(jobs.c.tenant_id == tenant_id)
        if dataset_ids is not None:
            ids = list(dict.fromkeys(dataset_ids))
            query = query.where(or_(jobs.c.dataset_id.is_(None), jobs.c.dataset_id.in_(ids)))
        async with self._db.read() as conn:
            counted = {str(status): int(n) for status, n in await conn.execute(query)}
        return {status: counted.get(status.value, 0) for status in JobStatus}

    async def list_jobs(
        self,
        tenant_id: str | None,
        *,
        updated_after: float | None = None,
        limit: int = 100,
        statuses: Sequence[JobStatus] | None = None,
    ) -> list[Job]:
        query = select(jobs).limit(limit)
        if tenant_id is not None:
            query = query.where(jobs.c.tenant_id == tenant_id)
        if statuses is not None:
            query = query.where(jobs.c.status.in_([s.value for s in dict.fromkeys(statuses)]))
        if updated_after is None:
            query = query.order_by(jobs.c.created_at.desc(), jobs.c.id.desc())
        else:
            query = query.where(jobs.c.updated_at > updated_after).order_by(jobs.c.updated_at)
        async with self._db.read() as conn:
            return [records.job(r) for r in (await conn.execute(query)).mappings()]

    async def request_cancel(self, job_id: str) -> Job | None:
        async with self._db.write() as conn:
            row = await lock_job(conn, job_id)
            if row is None:
                return None
            now = self._db.now()
            change: dict[str, Any] = {}
            if row["status"] == JobStatus.QUEUED.value:
                change = {"status": JobStatus.CANCELLED.value, "finished_at": now}
                await settle_files(conn, job_id, "CANCELLED", now)
            elif row["status"] == JobStatus.RUNNING.value and not row["cancel_requested"]:
                change = {"cancel_requested": True}
            if change:
                await conn.execute(update(jobs).where(jobs.c.id == job_id).values(**change))
                await bump_jobs(conn, now, job_id)
            return records.job(await load_job(conn, job_id))

    async def set_items(self, job_id: str, keys: Sequence[str]) -> None:
        async with self._db.write() as conn:
            if await lock_job(conn, job_id) is None:
                raise NotFound(f"no job {job_id!r}")
            if await _add_items(conn, job_id, list(dict.fromkeys(keys))):
                await recount(conn, job_id)
                await bump_jobs(conn, self._db.now(), job_id)

    async def update_item(
        self,
        job_id: str,
        key: str,
        stage: ItemStage,
        *,
        file_id: str | None = None,
        chunks: int = 0,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """Move one item to ``stage`` (adding it when new; ``file_id`` None keeps the item's
        file id) and recount the job, in one transaction; NotFound for an unknown job."""
        values = {
            "job_id": job_id,
            "key": key,
            "stage": stage.value,
            "file_id": file_id,
            "chunks": chunks,
            "error_code": error_code,
            "error_message": error_message,
        }
        async with self._db.write() as conn:
            if await lock_job(conn, job_id) is None:
                raise NotFound(f"no job {job_id!r}")
            await upsert(conn, job_items, values, keep=("file_id",) if file_id is None else ())
            await recount(conn, job_id)
            await bump_jobs(conn, self._db.now(), job_id)

    async def items(self, job_id: str) -> list[JobItem]:
        query = select(job_items).where(job_items.c.job_id == job_id).order_by(job_items.c.key)
        async with self._db.read() as conn:
            return [records.job_item(r) for r in (await conn.execute(query)).mappings()]


def new_job_values(job: Job, key: str, total: int, now: float) -> dict[str, Any]:
    return {
        "id": job.id,
        "tenant_id": job.tenant_id,
        "kind": job.kind.value,
        "status": JobStatus.QUEUED.value,
        "dataset_id": job.dataset_id,
        "payload": dict(job.payload),
        "dedupe_key": key,
        "attempts": 0,
        "max_attempts": job.max_attempts,
        "cancel_requested": False,
        "run_after": now,
        "created_at": job.created_at or now,
        "updated_at": now,
        "total": total,
        "done": 0,
        "failed": 0,
        "chunks": 0,
    }


async def _add_items(conn: AsyncConnection, job_id: str, keys: list[str]) -> bool:
    """Insert the keys the job does not have yet (as PENDING); True when any were new."""
    if not keys:
        return False
    query = select(job_items.c.key).where(job_items.c.job_id == job_id)
    present = set((await conn.execute(query)).scalars())
    new = [k for k in keys if k not in present]
    if new:
        rows = [{"job_id": job_id, "key": k, "stage": ItemStage.PENDING.value, "chunks": 0} for k in new]
        await conn.execute(insert(job_items), rows)
    return bool(new)
