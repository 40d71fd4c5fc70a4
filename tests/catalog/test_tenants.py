"""TenantDirectory contract, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.catalog.sql.tables import api_keys
from ragd.errors import Conflict, NotFound
from ragd.kb_types import Principal
from tests.catalog.conftest import START, table_rows


async def test_tenants_are_unique_by_name(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    await catalog.create_tenant("zeta")
    with pytest.raises(Conflict):
        await catalog.create_tenant("acme")
    assert acme.created_at == START
    assert [t.name for t in await catalog.list_tenants()] == ["acme", "zeta"]
    assert (await catalog.list_tenants())[0] == acme


async def test_a_key_resolves_to_its_principal_until_revoked(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    info, secret = await catalog.create_key(acme.id, "editor", "ci")
    assert secret.startswith("rgd_")
    assert len(secret) > 40
    assert info.prefix == secret[:8]
    assert (info.tenant_id, info.role, info.name) == (acme.id, "editor", "ci")
    assert await catalog.resolve_key(secret) == Principal(tenant_id=acme.id, role="editor", key_id=info.id)
    assert await catalog.list_keys(acme.id) == [info]

    assert await catalog.revoke_key(acme.id, info.id) is True
    assert await catalog.resolve_key(secret) is None
    assert await catalog.list_keys(acme.id) == []
    assert await catalog.revoke_key(acme.id, info.id) is False


async def test_unknown_secrets_and_foreign_keys_resolve_to_nothing(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    zeta = await catalog.create_tenant("zeta")
    info, secret = await catalog.create_key(acme.id, "admin", "main")
    assert await catalog.resolve_key("rgd_not-a-key") is None
    assert await catalog.resolve_key(secret + "x") is None
    assert await catalog.revoke_key(zeta.id, info.id) is False  # another tenant's key
    assert await catalog.resolve_key(secret) is not None
    with pytest.raises(NotFound):
        await catalog.create_key("no-such-tenant", "admin", "x")


async def test_only_the_hash_of_a_secret_is_stored(catalog: SqlCatalog, catalog_url: str) -> None:
    acme = await catalog.create_tenant("acme")
    _, first = await catalog.create_key(acme.id, "admin", "one")
    _, second = await catalog.create_key(acme.id, "reader", "two")
    assert first != second
    rows = await table_rows(catalog_url, api_keys)
    stored = {r["secret_hash"] for r in rows}
    assert stored == {hashlib.sha256(s.encode()).hexdigest() for s in (first, second)}
    for row in rows:
        assert first not in str(row.values())
        assert second not in str(row.values())
