"""Tenants and keys: the service key manages tenants; a tenant's admins manage its keys.

Another tenant's id is answered exactly like a missing one (404).
"""

from __future__ import annotations

from ragd.errors import Forbidden, InvalidRequest, NotFound
from ragd.kb import audit
from ragd.kb.context import KbContext
from ragd.kb.tenant_template import current_template, template_datasets
from ragd.kb_types import ApiKeyInfo, Principal, Tenant

MAX_NAME = 200


def _tenant_not_found(tenant_id: str) -> NotFound:
    return NotFound(f"tenant {tenant_id[:100]!r} not found")


@audit.audited("tenant.create", "tenant")
async def create_tenant(ctx: KbContext, principal: Principal, name: str) -> Tenant:
    if not principal.is_service:
        raise Forbidden("only the service key creates tenants")
    text = name.strip()
    if not text or len(text) > MAX_NAME or any(ord(c) < 32 for c in text):
        raise InvalidRequest(f"a tenant name is 1-{MAX_NAME} printable characters")
    audit.note(name=text)
    # the template's datasets are created with it, in one transaction (docs/knowledge-bases.md)
    template = await current_template(ctx.catalog, ctx.standard_datasets)
    tenant = await ctx.catalog.create_tenant(text, template_datasets(template))
    audit.note(tenant_id=tenant.id, target_id=tenant.id, datasets=[d.name for d in template.datasets])
    return tenant


async def list_tenants(ctx: KbContext, principal: Principal) -> list[Tenant]:
    tenants = await ctx.catalog.list_tenants()
    return tenants if principal.is_service else [t for t in tenants if t.id == principal.tenant_id]


async def _admin_of(ctx: KbContext, principal: Principal, tenant_id: str) -> None:
    if not principal.is_service and principal.tenant_id != tenant_id:
        raise _tenant_not_found(tenant_id)
    if not principal.can_admin:
        raise Forbidden("managing keys needs an admin key of the tenant")
    if not any(t.id == tenant_id for t in await ctx.catalog.list_tenants()):
        raise _tenant_not_found(tenant_id)


@audit.audited("key.create", "key")
async def create_key(
    ctx: KbContext, principal: Principal, tenant_id: str, role: str, name: str
) -> tuple[ApiKeyInfo, str]:
    await _admin_of(ctx, principal, tenant_id)
    audit.note(tenant_id=tenant_id, role=role, name=name[:MAX_NAME])
    info, secret = await ctx.catalog.create_key(tenant_id, role, name)
    audit.note(target_id=info.id)
    return info, secret


async def list_keys(ctx: KbContext, principal: Principal, tenant_id: str) -> list[ApiKeyInfo]:
    await _admin_of(ctx, principal, tenant_id)
    return await ctx.catalog.list_keys(tenant_id)


@audit.audited("key.revoke", "key", "key_id")
async def revoke_key(ctx: KbContext, principal: Principal, tenant_id: str, key_id: str) -> None:
    await _admin_of(ctx, principal, tenant_id)
    audit.note(tenant_id=tenant_id)
    if not await ctx.catalog.revoke_key(tenant_id, key_id):
        raise NotFound(f"key {key_id[:100]!r} not found")
    await ctx.catalog.revoke_key_sessions(key_id)  # its UI sessions (they stopped resolving with it)
