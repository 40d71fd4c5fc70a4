"""Tenants and their API keys.

    POST/GET   /api/v1/tenants                       service key only
    POST/GET   /api/v1/tenants/{id}/keys             service key, or an admin key of that tenant
    DELETE     /api/v1/tenants/{id}/keys/{key}   (its web UI sessions end with it)

A key's secret is returned once, at creation; only its hash is stored.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.kb_schemas import KeyCreate, TenantCreate, key_out, tenant_out
from ragd.bootstrap import Services
from ragd.kb import tenants as kb_tenants
from ragd.kb import ui_sessions as kb_sessions

router = APIRouter(prefix="/api/v1/tenants", tags=["tenants"])
Svc = Annotated[Services, Depends(services)]


@router.post("", status_code=201)
async def create_tenant(body: TenantCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    return tenant_out(await kb_tenants.create_tenant(svc.knowledge(), caller, body.name))


@router.get("")
async def list_tenants(caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"tenants": [tenant_out(t) for t in await kb_tenants.list_tenants(svc.knowledge(), caller)]}


@router.post("/{tenant_id}/keys", status_code=201)
async def create_key(tenant_id: str, body: KeyCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    info, secret = await kb_tenants.create_key(svc.knowledge(), caller, tenant_id, body.role, body.name)
    return {"key": key_out(info), "secret": secret}


@router.get("/{tenant_id}/keys")
async def list_keys(tenant_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    """Each key with ``sessions``: how many live web UI sessions it has (``…/sessions`` lists them)."""
    ctx = svc.knowledge()
    keys = await kb_tenants.list_keys(ctx, caller, tenant_id)
    live = Counter(s.key_id for s in await kb_sessions.list_sessions(ctx, caller, tenant_id))
    return {"keys": [{**key_out(k), "sessions": live[k.id]} for k in keys]}


@router.delete("/{tenant_id}/keys/{key_id}")
async def revoke_key(tenant_id: str, key_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    await kb_tenants.revoke_key(svc.knowledge(), caller, tenant_id, key_id)
    return {"revoked": True, "id": key_id}
