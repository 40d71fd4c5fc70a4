"""Limits per tenant and per key: who reads and sets them, requests per minute, storage quotas.

A tenant's limits are the settings' ``limits`` group with its overrides on top (set by the
service key; a tenant admin reads its own).  Rates count each tenant key's requests per surface in
this process (:mod:`ragd.kb.rates`); the service key and a keyless loopback service are not counted.
Storage quotas are checked in :mod:`ragd.kb.quota`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ragd.catalog.base import Catalog
from ragd.errors import Forbidden, InvalidRequest, NotFound, RateLimited
from ragd.kb import audit
from ragd.kb.context import KbContext
from ragd.kb.limits_book import LimitsBook
from ragd.kb_types import (
    LIMIT_NAMES,
    Job,
    JobStatus,
    Principal,
    RateSurface,
    TenantLimits,
    TenantUsage,
)

#: the largest value a limit takes (a sanity bound on what the API accepts)
MAX_LIMIT = 2**53


@dataclass(frozen=True, slots=True)
class LimitsView:
    """A tenant's limits as the API shows them: in force, its own overrides, the settings'."""

    tenant_id: str
    limits: TenantLimits
    overrides: Mapping[str, int]
    defaults: TenantLimits


# -- rates ------------------------------------------------------------------------------------------


async def check_rate(catalog: Catalog, book: LimitsBook, principal: Principal, surface: RateSurface) -> None:
    """Count one request of a tenant key on ``surface``; RATE_LIMITED (429) when its bucket is empty."""
    if principal.tenant_id is None or principal.key_id is None:
        return
    per_minute = (await book.of(catalog, principal.tenant_id)).per_minute(surface)
    wait = book.rates.take(principal.key_id, surface, per_minute)
    if wait:
        raise RateLimited(
            f"this key made its {per_minute} {surface.value} requests of the minute",
            retry_after_s=wait,
            hint=f"retry in {wait} s; the service key sets the tenant's limits",
        )


# -- reading and setting ----------------------------------------------------------------------------


async def _known_tenant(catalog: Catalog, tenant_id: str) -> None:
    if not any(t.id == tenant_id for t in await catalog.list_tenants()):
        raise NotFound(f"tenant {tenant_id[:100]!r} not found")


async def _reader_of(catalog: Catalog, principal: Principal, tenant_id: str) -> None:
    """The service key, or an admin key of the tenant (another tenant's id is a 404, as missing)."""
    if not principal.is_service and principal.tenant_id != tenant_id:
        raise NotFound(f"tenant {tenant_id[:100]!r} not found")
    if not principal.can_admin:
        raise Forbidden("reading a tenant's limits needs an admin key of the tenant")
    await _known_tenant(catalog, tenant_id)


async def get_limits(ctx: KbContext, principal: Principal, tenant_id: str) -> LimitsView:
    await _reader_of(ctx.catalog, principal, tenant_id)
    overrides = await ctx.catalog.get_tenant_limits(tenant_id)
    book = ctx.limits
    return LimitsView(tenant_id, book.effective(overrides), overrides, book.defaults)


def parse_overrides(values: Mapping[str, object]) -> dict[str, int]:
    """A PUT body's overrides: known names, whole numbers 0..2^53 (0: no limit), None dropped (the
    setting applies); INVALID_REQUEST naming the first bad one."""
    out: dict[str, int] = {}
    for name, value in values.items():
        if name not in LIMIT_NAMES:
            raise InvalidRequest(f"unknown limit {name[:60]!r}; the limits are {', '.join(LIMIT_NAMES)}")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LIMIT:
            raise InvalidRequest(f"limit {name!r} must be a whole number from 0 (no limit) to 2^53")
        out[name] = value
    return out


@audit.audited("limits.update", "tenant", "tenant_id")
async def set_limits(
    ctx: KbContext, principal: Principal, tenant_id: str, values: Mapping[str, object]
) -> LimitsView:
    """Replace the tenant's overrides (service key only); recorded as ``limits.update`` with the
    overrides before and after."""
    if principal.is_service:
        audit.note(tenant_id=tenant_id)
    else:
        raise Forbidden("only the service key sets a tenant's limits")
    overrides = parse_overrides(values)
    before = await ctx.catalog.get_tenant_limits(tenant_id)
    stored = await ctx.catalog.set_tenant_limits(tenant_id, overrides)
    ctx.limits.forget(tenant_id)
    audit.note(before=before, after=stored)
    return LimitsView(tenant_id, ctx.limits.effective(stored), stored, ctx.limits.defaults)


async def get_usage(ctx: KbContext, principal: Principal, tenant_id: str) -> tuple[TenantUsage, LimitsView]:
    view = await get_limits(ctx, principal, tenant_id)
    used = (await ctx.catalog.tenant_usage(tenant_id)).get(tenant_id, TenantUsage())
    return used, view


async def waiting_reason(ctx: KbContext, job: Job) -> str | None:
    """Why a queued job is not running although it is due: its tenant runs its
    ``max_concurrent_jobs`` already; None otherwise (not queued, or no bound reached)."""
    if job.status is not JobStatus.QUEUED:
        return None
    bound = (await ctx.limits.of(ctx.catalog, job.tenant_id)).max_concurrent_jobs
    if not bound:
        return None
    running = (await ctx.catalog.tenant_usage(job.tenant_id)).get(job.tenant_id, TenantUsage()).running_jobs
    if running < bound:
        return None
    return f"waiting: the tenant runs {running} of its {bound} concurrent jobs (max_concurrent_jobs)"


# -- metrics ----------------------------------------------------------------------------------------

_USAGE_FIELDS = ("chunks", "bytes", "running_jobs")
_GAUGED_LIMITS = ("max_chunks", "max_bytes", "max_concurrent_jobs")


async def tenant_rows(catalog: Catalog, book: LimitsBook) -> list[tuple[str, dict[str, int], dict[str, int]]]:
    """Every tenant's (name, usage, storage and job limits in force), for ``/metrics``: three reads."""
    tenants = await catalog.list_tenants()
    usage = await catalog.tenant_usage()
    overrides = await catalog.list_tenant_limits()
    rows = []
    for tenant in tenants:
        used = usage.get(tenant.id, TenantUsage())
        limits = book.effective(overrides.get(tenant.id, {}))
        rows.append(
            (
                tenant.name,
                {name: int(getattr(used, name)) for name in _USAGE_FIELDS},
                {name: int(getattr(limits, name)) for name in _GAUGED_LIMITS},
            )
        )
    return rows
