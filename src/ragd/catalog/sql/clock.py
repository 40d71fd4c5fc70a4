"""The job change clock: ``jobs.updated_at`` values that commit in order.

A change feed polls ``updated_after=<the largest updated_at it has seen>``, so
an update must never commit with a value at or below one already visible.
Per-job ``max(now, previous + ε)`` is not enough (two jobs changed in the same
clock tick, or two replicas whose transactions commit out of order), so every
job change takes the next value of one shared counter row, as the *last*
statement before its commit:

* the value is ``max(now, last + ε)``, strictly increasing;
* on PostgreSQL the ``UPDATE`` locks the row until commit, so values are handed
  out in commit order (a transaction that holds the row only commits; it never
  waits for another lock, so no deadlock can form around it);
* on SQLite every write transaction is already serialised (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

from sqlalchemy import case, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql.tables import job_clock, jobs

#: the smallest step between two updates; still representable next to today's epoch seconds
EPSILON = 1e-6


async def bump_jobs(conn: AsyncConnection, now: float, *job_ids: str) -> None:
    """Stamp the next clock value as ``updated_at`` of each of ``job_ids`` (one value each, so
    that a page of the feed never ends in the middle of a tie)."""
    for job_id in job_ids:
        value = await next_tick(conn, now)
        await conn.execute(update(jobs).where(jobs.c.id == job_id).values(updated_at=value))


async def next_tick(conn: AsyncConnection, now: float) -> float:
    step = job_clock.c.value + EPSILON
    await conn.execute(
        update(job_clock).where(job_clock.c.id == 1).values(value=case((step > now, step), else_=now))
    )
    value = (await conn.execute(select(job_clock.c.value).where(job_clock.c.id == 1))).scalar_one()
    return float(value)
