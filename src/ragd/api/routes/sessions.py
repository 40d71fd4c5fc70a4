"""The web UI's sessions, listed and revoked (docs/ui.md, "Sessions").

    GET    /api/v1/tenants/{id}/sessions            a tenant's live sessions: the service key, or
    DELETE /api/v1/tenants/{id}/sessions/{session}  an admin key of that tenant
    GET    /api/v1/sessions                         the service key's own sessions: the service key
    DELETE /api/v1/sessions/{session}
    DELETE /api/v1/sessions                         every session of the service key (after rotating it)

A session is listed with its key (``key_id``), when it was made, last seen and expires, and the
browser's user agent; never its secret (only a hash of it is stored).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.kb import ui_sessions as kb_sessions
from ragd.kb_types import UiSession

router = APIRouter(prefix="/api/v1", tags=["sessions"])
Svc = Annotated[Services, Depends(services)]


def session_out(s: UiSession) -> dict[str, Any]:
    return {
        "id": s.id,
        "key_id": s.key_id,
        "tenant_id": s.tenant_id,
        "role": s.role,
        "created_at": s.created_at,
        "last_seen_at": s.last_seen_at,
        "expires_at": s.expires_at,
        "user_agent": s.user_agent,
    }


@router.get("/tenants/{tenant_id}/sessions")
async def list_tenant_sessions(tenant_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    found = await kb_sessions.list_sessions(svc.knowledge(), caller, tenant_id)
    return {"sessions": [session_out(s) for s in found]}


@router.delete("/tenants/{tenant_id}/sessions/{session_id}")
async def revoke_tenant_session(tenant_id: str, session_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    await kb_sessions.revoke_session(svc.knowledge(), caller, tenant_id, session_id)
    return {"revoked": True, "id": session_id}


@router.get("/sessions")
async def list_service_sessions(caller: Caller, svc: Svc) -> dict[str, Any]:
    found = await kb_sessions.list_sessions(svc.knowledge(), caller, None)
    return {"sessions": [session_out(s) for s in found]}


@router.delete("/sessions/{session_id}")
async def revoke_service_session(session_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    await kb_sessions.revoke_session(svc.knowledge(), caller, None, session_id)
    return {"revoked": True, "id": session_id}


@router.delete("/sessions")
async def revoke_all_service_sessions(caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"revoked": await kb_sessions.revoke_service_sessions(svc.knowledge(), caller)}
