"""What a tenant's folder and S3 sources may reach (docs/knowledge-bases.md, "Source grants").

POST    /api/v1/tenants/{id}/grants              service key: grant {kind, target, shared?}
GET     /api/v1/tenants/{id}/grants              service key, or an admin key of that tenant
                                                 (?include_revoked=true: revoked ones too)
DELETE  /api/v1/tenants/{id}/grants/{grant}      service key: revoke (sources it alone
                                                 covered are disabled)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.kb_schemas import GrantCreate, grant_out
from ragd.bootstrap import Services
from ragd.kb import grants as kb_grants
from ragd.kb.sources import search_visibility

router = APIRouter(prefix="/api/v1/tenants/{tenant_id}/grants", tags=["tenants"])
Svc = Annotated[Services, Depends(services)]


@router.post("", status_code=201)
async def create_grant(tenant_id: str, body: GrantCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    kb = svc.knowledge()
    grant = await kb_grants.create_grant(
        kb.catalog,
        caller,
        tenant_id,
        body.kind,
        body.target,
        shared=body.shared,
        folder_roots=svc.settings.catalog.folder_roots,
        allowed_buckets=svc.settings.s3.allowed_buckets,
        apply=search_visibility(kb),
    )
    return grant_out(grant)


@router.get("")
async def list_grants(
    tenant_id: str,
    caller: Caller,
    svc: Svc,
    include_revoked: Annotated[bool, Query(description="also the revoked grants")] = False,
) -> dict[str, Any]:
    found = await kb_grants.list_grants(
        svc.knowledge().catalog, caller, tenant_id, include_revoked=include_revoked
    )
    return {"grants": [grant_out(g) for g in found]}


@router.delete("/{grant_id}")
async def revoke_grant(tenant_id: str, grant_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    kb = svc.knowledge()
    grant, disabled = await kb_grants.revoke_grant(
        kb.catalog, caller, tenant_id, grant_id, apply=search_visibility(kb)
    )
    return {"revoked": True, "grant": grant_out(grant), "disabled_sources": [s.id for s in disabled]}
