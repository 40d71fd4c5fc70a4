"""A tenant's limits and what it uses against them (docs/knowledge-bases.md, "Limits").

    GET  /api/v1/tenants/{id}/limits    service key, or an admin key of that tenant
    PUT  /api/v1/tenants/{id}/limits    service key only; recorded in the audit trail (limits.update)
    GET  /api/v1/tenants/{id}/usage     service key, or an admin key of that tenant

A PUT replaces the tenant's overrides: a limit it leaves out (or sends as null) follows the settings
(``RAGD_LIMITS__*``); 0 means no limit.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.kb import limits as kb_limits
from ragd.kb_types import TenantUsage

router = APIRouter(prefix="/api/v1/tenants", tags=["tenants"])
Svc = Annotated[Services, Depends(services)]
_COUNT = Field(None, ge=0, le=kb_limits.MAX_LIMIT)


class LimitsUpdate(BaseModel):
    """The tenant's overrides; null or absent: the setting's default applies; 0: no limit."""

    model_config = ConfigDict(extra="forbid")

    search_per_minute: int | None = _COUNT
    chat_per_minute: int | None = _COUNT
    models_per_minute: int | None = _COUNT
    max_chunks: int | None = _COUNT
    max_bytes: int | None = _COUNT
    max_concurrent_jobs: int | None = _COUNT


def limits_out(view: kb_limits.LimitsView) -> dict[str, Any]:
    return {
        "tenant_id": view.tenant_id,
        "limits": asdict(view.limits),
        "overrides": dict(view.overrides),
        "defaults": asdict(view.defaults),
    }


def usage_out(used: TenantUsage, view: kb_limits.LimitsView) -> dict[str, Any]:
    limits = view.limits
    return {
        "tenant_id": view.tenant_id,
        "usage": asdict(used),
        "limits": asdict(limits),
        "against": {
            "chunks": {"used": used.chunks, "limit": limits.max_chunks},
            "bytes": {"used": used.bytes, "limit": limits.max_bytes},
            "running_jobs": {"used": used.running_jobs, "limit": limits.max_concurrent_jobs},
        },
    }


@router.get("/{tenant_id}/limits")
async def get_limits(tenant_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return limits_out(await kb_limits.get_limits(svc.knowledge(), caller, tenant_id))


@router.put("/{tenant_id}/limits")
async def put_limits(tenant_id: str, body: LimitsUpdate, caller: Caller, svc: Svc) -> dict[str, Any]:
    values = body.model_dump()
    return limits_out(await kb_limits.set_limits(svc.knowledge(), caller, tenant_id, values))


@router.get("/{tenant_id}/usage")
async def get_usage(tenant_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    used, view = await kb_limits.get_usage(svc.knowledge(), caller, tenant_id)
    return usage_out(used, view)
