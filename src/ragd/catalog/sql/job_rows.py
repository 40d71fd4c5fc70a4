"""Statements shared by the job queue's operations: lock, load, recount, dedupe key."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import RowMapping, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql.tables import files, job_items, jobs
from ragd.kb_types import FileStatus, ItemStage, Job

#: stages that count as done (finished and not failed)
DONE_STAGES = tuple(s.value for s in ItemStage if s.finished and s is not ItemStage.FAILED)


async def lock_job(conn: AsyncConnection, job_id: str) -> RowMapping | None:
    """The job's row, locked for this transaction (PostgreSQL ``FOR UPDATE``; SQLite's write
    transaction already excludes every other writer)."""
    query = select(jobs).where(jobs.c.id == job_id).with_for_update()
    return (await conn.execute(query)).mappings().first()


async def load_job(conn: AsyncConnection, job_id: str) -> RowMapping:
    return (await conn.execute(select(jobs).where(jobs.c.id == job_id))).mappings().one()


async def recount(conn: AsyncConnection, job_id: str) -> None:
    """Set the job's total/done/failed/chunks from its items (call with the job row locked)."""
    stage = job_items.c.stage
    query = select(
        func.count(),
        func.coalesce(func.sum(case((stage.in_(DONE_STAGES), 1), else_=0)), 0),
        func.coalesce(func.sum(case((stage == ItemStage.FAILED.value, 1), else_=0)), 0),
        func.coalesce(func.sum(job_items.c.chunks), 0),
    ).where(job_items.c.job_id == job_id)
    total, done, failed, chunks = (await conn.execute(query)).one()
    counts = {"total": total, "done": done, "failed": failed, "chunks": chunks}
    await conn.execute(update(jobs).where(jobs.c.id == job_id).values(**counts))


def dedupe_key(job: Job) -> str:
    """SHA-256 of the job's kind, dataset and canonical JSON payload."""
    body: list[Any] = [job.kind.value, job.dataset_id, dict(job.payload)]
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def advisory_key(*parts: str) -> int:
    """A signed 64-bit PostgreSQL advisory-lock key for ``parts``."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_UNSETTLED_FILES = (FileStatus.QUEUED.value, FileStatus.INDEXING.value)


async def settle_files(conn: AsyncConnection, job_id: str, code: str, now: float) -> None:
    """A job ended for good without finishing some of its files: they end ``failed`` with ``code``.

    No file of an ended job stays ``queued`` or ``indexing`` (its job items likewise end ``failed``);
    files the job already finished keep their outcome.
    """
    message = f"its job ended ({code}) before this file was processed"
    unfinished = [ItemStage.PENDING.value, ItemStage.FETCHING.value, ItemStage.INDEXING.value]
    # an item names its file once the file is known; an upload's items are keyed by the file id itself
    of_job = select(func.coalesce(job_items.c.file_id, job_items.c.key)).where(job_items.c.job_id == job_id)
    await conn.execute(
        update(files)
        .where(files.c.id.in_(of_job), files.c.status.in_(_UNSETTLED_FILES))
        .values(status=FileStatus.FAILED.value, error_code=code, error_message=message, updated_at=now)
    )
    await conn.execute(
        update(job_items)
        .where(job_items.c.job_id == job_id, job_items.c.stage.in_(unfinished))
        .values(stage=ItemStage.FAILED.value, error_code=code, error_message=message)
    )
    await recount(conn, job_id)
