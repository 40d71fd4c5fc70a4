"""Sources' schedules: set, pause, list what is due, and fire a due run once.

:meth:`SqlSchedules.fire_due` is the one place a scheduled run is decided, in one write
transaction: a compare-and-set of ``next_run_at`` (of two replicas that saw the same due source,
one moves it on, the other changes nothing), then the sync job is queued unless a sync of the
source is already queued or running (that one covers this slot).  On SQLite the transaction is
the only writer; on PostgreSQL the row's update serialises the claimers and the job queue's
advisory lock on the sync's dedupe key serialises it with a hand sync being queued.
"""

from __future__ import annotations

from sqlalchemy import insert, select, text, update

from ragd.catalog.sql import records
from ragd.catalog.sql.clock import bump_jobs
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.job_rows import advisory_key, dedupe_key, load_job
from ragd.catalog.sql.jobs import new_job_values
from ragd.catalog.sql.tables import jobs, sources
from ragd.kb_types import Job, JobStatus, SourceSchedule, SourceSpec

_ACTIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)


class SqlSchedules:
    _db: Database

    async def set_schedule(
        self, source_id: str, schedule: SourceSchedule | None, next_run_at: float | None
    ) -> SourceSpec | None:
        """Replace the source's schedule (None: none) and its next run; None for an unknown id."""
        values: dict[str, object] = {
            "schedule": schedule.to_json() if schedule else None,
            "next_run_at": next_run_at,
        }
        return await self._change(source_id, values)

    async def set_paused(self, source_id: str, paused: bool, next_run_at: float | None) -> SourceSpec | None:
        """Pause (or resume) the source, keeping its schedule; None for an unknown id."""
        return await self._change(source_id, {"paused": paused, "next_run_at": next_run_at})

    async def _change(self, source_id: str, values: dict[str, object]) -> SourceSpec | None:
        async with self._db.write() as conn:
            statement = update(sources).where(sources.c.id == source_id).values(**values)
            if (await conn.execute(statement)).rowcount == 0:
                return None
            row = (await conn.execute(select(sources).where(sources.c.id == source_id))).mappings().first()
        return records.source(row) if row is not None else None

    async def due_sources(self, now: float, limit: int = 100) -> list[SourceSpec]:
        """Scheduled, live, unpaused sources whose next run is at or before ``now``, earliest first."""
        query = (
            select(sources)
            .where(
                sources.c.schedule.is_not(None),
                sources.c.paused.is_(False),
                sources.c.disabled_reason.is_(None),
                sources.c.next_run_at <= now,
            )
            .order_by(sources.c.next_run_at, sources.c.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            return [records.source(r) for r in (await conn.execute(query)).mappings()]

    async def fire_due(self, spec: SourceSpec, next_run_at: float, job: Job) -> Job | None:
        """Claim the run of ``spec`` due at ``spec.next_run_at``: move it on to ``next_run_at`` and
        queue ``job`` (a SYNC of the source).  None when another claimer moved it first, or the
        source was paused, disabled or unscheduled meanwhile; the job already queued or running
        when a sync of the source is (no second one is queued)."""
        claim = (
            update(sources)
            .where(
                sources.c.id == spec.id,
                sources.c.next_run_at == spec.next_run_at,
                sources.c.schedule.is_not(None),
                sources.c.paused.is_(False),
                sources.c.disabled_reason.is_(None),
            )
            .values(next_run_at=next_run_at)
        )
        key = dedupe_key(job)
        async with self._db.write() as conn:
            if (await conn.execute(claim)).rowcount != 1:
                return None
            if conn.dialect.name == "postgresql":  # as the queue's dedupe: one check per payload
                lock = text("SELECT pg_advisory_xact_lock(:key)")
                await conn.execute(lock, {"key": advisory_key(job.tenant_id, key)})
            active = select(jobs.c.id).where(
                jobs.c.tenant_id == job.tenant_id, jobs.c.dedupe_key == key, jobs.c.status.in_(_ACTIVE)
            )
            running: str | None = (await conn.execute(active.limit(1))).scalar()
            if running is not None:
                return records.job(await load_job(conn, running))
            now = self._db.now()
            await conn.execute(update(sources).where(sources.c.id == spec.id).values(last_run_at=now))
            await conn.execute(insert(jobs).values(**new_job_values(job, key, 0, now)))
            await bump_jobs(conn, now, job.id)
            return records.job(await load_job(conn, job.id))
