"""The web UI's sign-ins, held server-side (docs/ui.md, "Sessions"; docs/security.md, "Browser").

A sign-in makes a session of the key it checked: the browser keeps only the session's random
secret, the catalog only that secret's hash.  Who may see and end sessions:

* a tenant's sessions: an admin key of that tenant, or the service key (another tenant's id is
  answered like a missing one, 404);
* the service key's own sessions: the service key only.

Every session made or ended is recorded in the audit trail (``session.create``,
``session.revoke``; the actor is the key id, ``service`` for the service key).  Revoking a key
ends its sessions (:func:`ragd.kb.tenants.revoke_key`; its ``key.revoke`` record stands for them).
"""

from __future__ import annotations

from ragd.errors import Forbidden, NotFound
from ragd.kb import audit
from ragd.kb.context import KbContext
from ragd.kb.tenants import _admin_of as admin_of
from ragd.kb_types import Principal, UiSession

TARGET = "session"


async def sign_in(
    ctx: KbContext, principal: Principal, *, ttl_s: float, user_agent: str | None
) -> tuple[UiSession, str]:
    """A new session of ``principal``'s (already checked) key and its secret; dead sessions are
    purged on the way (sign-ins are rare, so this is where the table is kept small)."""
    await ctx.catalog.purge_ui_sessions()
    session, secret = await ctx.catalog.create_ui_session(principal, ttl_s, user_agent)
    await audit.record(
        ctx.catalog,
        principal,
        "session.create",
        target_kind=TARGET,
        target_id=session.id,
        detail={"expires_at": session.expires_at},
    )
    return session, secret


async def sign_out(ctx: KbContext, session: UiSession) -> None:
    if await ctx.catalog.revoke_ui_session(session.id, session.tenant_id):
        await _revoked(ctx, session.principal, session.tenant_id, session.id, "sign-out")


async def list_sessions(ctx: KbContext, principal: Principal, tenant_id: str | None) -> list[UiSession]:
    """A tenant's live sessions (None: the service key's own), newest first."""
    await _may_manage(ctx, principal, tenant_id)
    return await ctx.catalog.list_ui_sessions(tenant_id)


async def revoke_session(
    ctx: KbContext, principal: Principal, tenant_id: str | None, session_id: str
) -> None:
    await _may_manage(ctx, principal, tenant_id)
    if not await ctx.catalog.revoke_ui_session(session_id, tenant_id):
        raise NotFound(f"session {session_id[:100]!r} not found")
    await _revoked(ctx, principal, tenant_id, session_id, "revoked")


async def revoke_service_sessions(ctx: KbContext, principal: Principal) -> int:
    """End every session signed in with the service key (after rotating it, say)."""
    await _may_manage(ctx, principal, None)
    ended = await ctx.catalog.revoke_key_sessions(None)
    await _revoked(ctx, principal, None, None, "every session of the service key", ended=ended)
    return ended


async def _may_manage(ctx: KbContext, principal: Principal, tenant_id: str | None) -> None:
    if tenant_id is not None:
        await admin_of(ctx, principal, tenant_id)
    elif not principal.is_service:
        raise Forbidden("only the service key manages the service key's sessions")


async def _revoked(
    ctx: KbContext,
    principal: Principal,
    tenant_id: str | None,
    session_id: str | None,
    reason: str,
    *,
    ended: int = 1,
) -> None:
    await audit.record(
        ctx.catalog,
        principal,
        "session.revoke",
        tenant_id=tenant_id,
        target_kind=TARGET,
        target_id=session_id,
        detail={"reason": reason, "sessions": ended},
    )
