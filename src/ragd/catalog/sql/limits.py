"""Per-tenant limits over the settings' defaults, and what each tenant holds against them.

A tenant's row holds only its overrides (``{"max_chunks": 5000}``): a limit it does not name follows
the settings.  Usage is counted from the catalog, so every replica sees the same figures: chunks of
all the tenant's files, bytes of the files that hold chunks (a queued or failed upload holds none),
and its jobs RUNNING with a live lease.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import and_, case, delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import datasets, files, jobs, tenant_limits, tenants
from ragd.catalog.sql.upsert import upsert
from ragd.errors import NotFound
from ragd.kb_types import LIMIT_NAMES, JobStatus, TenantUsage


class SqlLimits:
    _db: Database

    async def get_tenant_limits(self, tenant_id: str) -> dict[str, int]:
        async with self._db.read() as conn:
            query = select(tenant_limits.c.limits).where(tenant_limits.c.tenant_id == tenant_id)
            found = (await conn.execute(query)).scalar()
        return _clean(found)

    async def list_tenant_limits(self) -> dict[str, dict[str, int]]:
        async with self._db.read() as conn:
            rows = await conn.execute(select(tenant_limits.c.tenant_id, tenant_limits.c.limits))
            return {tenant_id: _clean(limits) for tenant_id, limits in rows}

    async def set_tenant_limits(self, tenant_id: str, overrides: Mapping[str, int]) -> dict[str, int]:
        clean = _clean(overrides)
        async with self._db.write() as conn:
            known = select(tenants.c.id).where(tenants.c.id == tenant_id)
            if (await conn.execute(known)).scalar() is None:
                raise NotFound(f"tenant {tenant_id[:100]!r} not found")
            if clean:
                values = {"tenant_id": tenant_id, "limits": clean, "updated_at": self._db.now()}
                await upsert(conn, tenant_limits, values)
            else:
                await conn.execute(delete(tenant_limits).where(tenant_limits.c.tenant_id == tenant_id))
        return clean

    async def tenant_usage(
        self, tenant_id: str | None = None, *, exclude_file: str | None = None
    ) -> dict[str, TenantUsage]:
        async with self._db.read() as conn:
            stored = await _stored(conn, tenant_id, exclude_file)
            running = await _running(conn, tenant_id, self._db.now())
        out: dict[str, TenantUsage] = {}
        for tid in stored.keys() | running.keys():
            chunks, size = stored.get(tid, (0, 0))
            out[tid] = TenantUsage(chunks=chunks, bytes=size, running_jobs=running.get(tid, 0))
        return out


async def _stored(
    conn: AsyncConnection, tenant_id: str | None, exclude_file: str | None
) -> dict[str, tuple[int, int]]:
    held = case((files.c.chunks > 0, files.c.size), else_=0)
    query = (
        select(
            datasets.c.tenant_id, func.coalesce(func.sum(files.c.chunks), 0), func.coalesce(func.sum(held), 0)
        )
        .select_from(files.join(datasets, files.c.dataset_id == datasets.c.id))
        .group_by(datasets.c.tenant_id)
    )
    if tenant_id is not None:
        query = query.where(datasets.c.tenant_id == tenant_id)
    if exclude_file is not None:
        query = query.where(files.c.id != exclude_file)
    return {tid: (int(chunks), int(size)) for tid, chunks, size in await conn.execute(query)}


async def _running(conn: AsyncConnection, tenant_id: str | None, now: float) -> dict[str, int]:
    live = and_(jobs.c.status == JobStatus.RUNNING.value, jobs.c.lease_expires >= now)
    query = select(jobs.c.tenant_id, func.count()).where(live).group_by(jobs.c.tenant_id)
    if tenant_id is not None:
        query = query.where(jobs.c.tenant_id == tenant_id)
    return {tid: int(n) for tid, n in await conn.execute(query)}


def _clean(limits: object) -> dict[str, int]:
    """The known, non-negative integer limits of a stored (or given) mapping, in LIMIT_NAMES order."""
    if not isinstance(limits, Mapping):
        return {}
    out: dict[str, int] = {}
    for name in LIMIT_NAMES:
        value = limits.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[name] = value
    return out
