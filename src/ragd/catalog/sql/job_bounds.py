"""How many jobs a tenant may run at once (``max_concurrent_jobs``), checked inside a claim.

The count is of the tenant's RUNNING jobs with a live lease, read in the claim's transaction, so it
holds across every worker of every replica.  On SQLite the claim is the only writer (``BEGIN
IMMEDIATE``).  On PostgreSQL two replicas may be claiming jobs of one tenant at once: each takes
the tenant's transaction-scoped advisory lock before counting, and a claim that cannot take it at
once passes the tenant over for this round (waiting could deadlock two claims that hold each
other's tenants); the count, a new snapshot under READ COMMITTED, sees the other's committed start.
"""

from __future__ import annotations

from sqlalchemy import and_, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql.job_rows import advisory_key
from ragd.catalog.sql.tables import jobs, tenant_limits
from ragd.kb_types import JobStatus

_NAME = "max_concurrent_jobs"


class JobBounds:
    """Each tenant's bound: its override, else the settings' default (0: none)."""

    def __init__(self, default: int, overrides: dict[str, int]) -> None:
        self.default = default
        self.overrides = overrides

    def of(self, tenant_id: str) -> int:
        return self.overrides.get(tenant_id, self.default)


async def job_bounds(conn: AsyncConnection, default: int) -> JobBounds:
    overrides: dict[str, int] = {}
    for tenant_id, limits in await conn.execute(select(tenant_limits.c.tenant_id, tenant_limits.c.limits)):
        value = limits.get(_NAME) if isinstance(limits, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            overrides[tenant_id] = value
    return JobBounds(max(0, default), overrides)


async def tenant_full(conn: AsyncConnection, tenant_id: str, bounds: JobBounds, now: float) -> bool:
    """Whether the tenant may not start another job now (its bound reached, or on PostgreSQL
    another claim is counting its jobs this moment)."""
    bound = bounds.of(tenant_id)
    if not bound:
        return False
    if conn.dialect.name == "postgresql":
        lock = text("SELECT pg_try_advisory_xact_lock(:key)")
        if not (await conn.execute(lock, {"key": advisory_key("jobs-running", tenant_id)})).scalar():
            return True
    live = and_(
        jobs.c.tenant_id == tenant_id, jobs.c.status == JobStatus.RUNNING.value, jobs.c.lease_expires >= now
    )
    running = (await conn.execute(select(func.count()).select_from(jobs).where(live))).scalar() or 0
    return int(running) >= bound
