"""Tenants and their API keys.

    POST/GET   /api/v1/tenants                       service key only (a new one gets the template's datasets)
    GET/PUT/DELETE /api/v1/tenants/template          service key only: the datasets of every new tenant
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
from ragd.api.kb_schemas import KeyCreate, TemplateBody, TenantCreate, key_out, tenant_out
from ragd.bootstrap import Services
from ragd.kb import tenant_template as kb_template
from ragd.kb import tenants as kb_tenants
from ragd.kb import ui_sessions as kb_sessions

router = APIRouter(prefix="/api/v1/tenants", tags=["tenants"])
Svc = Annotated[Services, Depends(services)]


@router.get("/template")
async def get_template(caller: Caller, svc: Svc) -> dict[str, Any]:
    """The datasets every new tenant is created with; ``custom`` false: the settings' default."""
    return _template_out(await kb_template.get_template(svc.knowledge(), caller))


@router.put("/template")
async def set_template(body: TemplateBody, caller: Caller, svc: Svc) -> dict[str, Any]:
    """Replace the template (existing tenants are not changed)."""
    specs = [d.spec() for d in body.datasets]
    return _template_out(await kb_template.set_template(svc.knowledge(), caller, specs))


@router.delete("/template")
async def reset_template(caller: Caller, svc: Svc) -> dict[str, Any]:
    """Back to the settings' default (RAGD_TENANTS__DATASETS)."""
    return _template_out(await kb_template.set_template(svc.knowledge(), caller, None))


def _template_out(template: kb_template.TenantTemplate) -> dict[str, Any]:
    return {"datasets": [d.to_json() for d in template.datasets], "custom": template.custom}


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
