"""UiSessions contract, on SQLite and PostgreSQL: a random secret resolves to its session while
the session is not revoked, not expired and its key is not revoked; only the secret's hash is stored."""

from __future__ import annotations

import hashlib

from ragd.catalog.sql import SqlCatalog
from ragd.catalog.sql.tables import ui_sessions
from ragd.kb_types import Principal
from tests.catalog.conftest import START, FakeClock, table_rows

SERVICE = Principal(tenant_id=None, role="admin")
HOUR = 3600.0


async def _tenant_key(catalog: SqlCatalog, name: str = "acme", role: str = "editor") -> Principal:
    tenant = await catalog.create_tenant(name)
    _, secret = await catalog.create_key(tenant.id, role, "k")
    found = await catalog.resolve_key(secret)
    assert found is not None
    return found


async def test_a_session_resolves_to_its_keys_principal(catalog: SqlCatalog) -> None:
    editor = await _tenant_key(catalog)
    session, secret = await catalog.create_ui_session(editor, HOUR, "Mozilla/5.0 (X11)")
    assert len(secret) >= 40
    assert (session.key_id, session.tenant_id, session.role) == (editor.key_id, editor.tenant_id, "editor")
    assert (session.created_at, session.expires_at, session.user_agent) == (
        START,
        START + HOUR,
        "Mozilla/5.0 (X11)",
    )
    resolved = await catalog.resolve_ui_session(secret)
    assert resolved == session
    assert resolved.principal == editor
    assert await catalog.resolve_ui_session(secret + "x") is None
    assert await catalog.resolve_ui_session("") is None


async def test_a_service_session_is_the_service(catalog: SqlCatalog) -> None:
    session, secret = await catalog.create_ui_session(SERVICE, HOUR)
    assert (session.key_id, session.tenant_id, session.user_agent) == (None, None, None)
    resolved = await catalog.resolve_ui_session(secret)
    assert resolved is not None
    assert resolved.principal.is_service
    assert resolved.principal.can_admin
    assert await catalog.list_ui_sessions(None) == [session]


async def test_only_the_hash_of_the_secret_is_stored(catalog: SqlCatalog, catalog_url: str) -> None:
    editor = await _tenant_key(catalog)
    session, secret = await catalog.create_ui_session(editor, HOUR, "x" * 5000 + "\x00")
    rows = await table_rows(catalog_url, ui_sessions)
    assert [r["secret_hash"] for r in rows] == [hashlib.sha256(secret.encode()).hexdigest()]
    assert all(secret not in str(value) for value in rows[0].values())
    assert rows[0]["user_agent"] == "x" * 200 == session.user_agent  # trimmed, no control characters


async def test_a_session_expires_and_last_seen_slides_at_most_once_a_minute(
    catalog: SqlCatalog, clock: FakeClock, catalog_url: str
) -> None:
    editor = await _tenant_key(catalog)
    session, secret = await catalog.create_ui_session(editor, HOUR)
    clock.advance(30)
    assert await catalog.resolve_ui_session(secret) is not None
    assert (await table_rows(catalog_url, ui_sessions))[0]["last_seen_at"] == START  # not written
    clock.advance(40)
    assert await catalog.resolve_ui_session(secret) is not None
    assert (await table_rows(catalog_url, ui_sessions))[0]["last_seen_at"] == START + 70
    assert (await catalog.list_ui_sessions(editor.tenant_id))[0].last_seen_at == START + 70
    clock.advance(HOUR - 70 - 1)
    assert await catalog.resolve_ui_session(secret) is not None  # using it does not extend it
    clock.advance(1)
    assert await catalog.resolve_ui_session(secret) is None
    assert await catalog.list_ui_sessions(editor.tenant_id) == []
    assert session.expires_at == START + HOUR


async def test_revoking_the_session_or_its_key_ends_it(catalog: SqlCatalog) -> None:
    editor = await _tenant_key(catalog)
    assert editor.tenant_id is not None
    assert editor.key_id is not None
    one, first = await catalog.create_ui_session(editor, HOUR)
    _, second = await catalog.create_ui_session(editor, HOUR)
    _, third = await catalog.create_ui_session(editor, HOUR)
    assert await catalog.revoke_ui_session(one.id, editor.tenant_id) is True
    assert await catalog.revoke_ui_session(one.id, editor.tenant_id) is False
    assert await catalog.resolve_ui_session(first) is None
    assert await catalog.resolve_ui_session(second) is not None

    # a revoked key: its sessions are dead at once, before they are marked
    assert await catalog.revoke_key(editor.tenant_id, editor.key_id) is True
    assert await catalog.resolve_ui_session(second) is None
    assert await catalog.list_ui_sessions(editor.tenant_id) == []
    assert await catalog.revoke_key_sessions(editor.key_id) == 2
    assert await catalog.resolve_ui_session(third) is None


async def test_sessions_are_listed_per_tenant_and_key_and_revoked_only_within_the_tenant(
    catalog: SqlCatalog,
) -> None:
    acme_admin = await _tenant_key(catalog, "acme", "admin")
    tenant = acme_admin.tenant_id
    assert tenant is not None
    _, reader_secret = await catalog.create_key(tenant, "reader", "r")
    acme_reader = await catalog.resolve_key(reader_secret)
    zeta = await _tenant_key(catalog, "zeta", "admin")
    assert acme_reader is not None
    assert zeta.tenant_id is not None
    a1, _ = await catalog.create_ui_session(acme_admin, HOUR)
    r1, _ = await catalog.create_ui_session(acme_reader, HOUR)
    z1, z_secret = await catalog.create_ui_session(zeta, HOUR)
    s1, _ = await catalog.create_ui_session(SERVICE, HOUR)
    assert {s.id for s in await catalog.list_ui_sessions(tenant)} == {a1.id, r1.id}
    assert await catalog.list_ui_sessions(tenant, acme_reader.key_id) == [r1]
    assert await catalog.list_ui_sessions(zeta.tenant_id) == [z1]
    assert await catalog.list_ui_sessions(None) == [s1]
    # another tenant's (or the service key's) session is not acme's to revoke
    assert await catalog.revoke_ui_session(z1.id, tenant) is False
    assert await catalog.revoke_ui_session(s1.id, tenant) is False
    assert await catalog.revoke_ui_session(z1.id, None) is False
    assert await catalog.resolve_ui_session(z_secret) is not None
    assert await catalog.revoke_key_sessions(None) == 1
    assert await catalog.list_ui_sessions(None) == []
    assert len(await catalog.list_ui_sessions(tenant)) == 2


async def test_purge_deletes_expired_and_revoked_sessions_only(
    catalog: SqlCatalog, clock: FakeClock, catalog_url: str
) -> None:
    editor = await _tenant_key(catalog)
    short, _ = await catalog.create_ui_session(editor, 60)
    revoked, _ = await catalog.create_ui_session(editor, HOUR)
    live, secret = await catalog.create_ui_session(editor, HOUR)
    await catalog.revoke_ui_session(revoked.id, editor.tenant_id)
    clock.advance(61)
    assert await catalog.purge_ui_sessions() == 2
    assert [r["id"] for r in await table_rows(catalog_url, ui_sessions)] == [live.id]
    assert await catalog.resolve_ui_session(secret) is not None
    assert short.id != live.id
