"""The UI-session use-cases on the real catalog (SQLite and PostgreSQL): who may list and end
sessions, and the audit records they leave (actor = the key's id; never a secret)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.catalog.sql.tables import audit_log
from ragd.errors import Forbidden, NotFound
from ragd.kb import tenants as kb_tenants
from ragd.kb import ui_sessions as kb_sessions
from ragd.kb.context import KbContext
from ragd.kb_types import Principal
from tests.catalog.conftest import table_rows

SERVICE = Principal(tenant_id=None, role="admin")


@pytest.fixture
async def kb(catalog_url: str, tmp_path: Path) -> AsyncIterator[KbContext]:
    catalog: SqlCatalog = await open_catalog(catalog_url)
    unused = ("store", "ingestor", "chunker_for", "reader_for", "max_upload_bytes")
    yield KbContext(catalog=catalog, files_dir=tmp_path, **cast(dict[str, Any], dict.fromkeys(unused)))
    await catalog.aclose()


async def _key(kb: KbContext, tenant_id: str, role: str) -> tuple[Principal, str]:
    _, secret = await kb.catalog.create_key(tenant_id, role, role)
    found = await kb.catalog.resolve_key(secret)
    assert found is not None
    return found, secret


async def _sessions_audit(url: str) -> list[dict[str, Any]]:
    rows = await table_rows(url, audit_log)
    return sorted((r for r in rows if r["action"].startswith("session.")), key=lambda r: r["seq"])


async def test_sign_in_and_out_are_audited_with_the_key_id_and_no_secret(
    kb: KbContext, catalog_url: str
) -> None:
    tenant = await kb.catalog.create_tenant("acme")
    reader, key_secret = await _key(kb, tenant.id, "reader")
    session, secret = await kb_sessions.sign_in(kb, reader, ttl_s=60, user_agent="UA")
    await kb_sessions.sign_out(kb, session)
    await kb_sessions.sign_out(kb, session)  # already ended: nothing more to record
    assert await kb.catalog.resolve_ui_session(secret) is None
    made, ended = await _sessions_audit(catalog_url)
    assert (made["action"], made["actor"], made["tenant_id"], made["target_id"]) == (
        "session.create",
        reader.key_id,
        tenant.id,
        session.id,
    )
    assert (ended["action"], ended["actor"], ended["target_id"], ended["detail"]["reason"]) == (
        "session.revoke",
        reader.key_id,
        session.id,
        "sign-out",
    )
    for row in (made, ended):
        assert secret not in str(row)
        assert key_secret not in str(row)


async def test_only_admins_of_the_tenant_and_the_service_key_manage_sessions(
    kb: KbContext, catalog_url: str
) -> None:
    acme = await kb.catalog.create_tenant("acme")
    zeta = await kb.catalog.create_tenant("zeta")
    acme_admin, _ = await _key(kb, acme.id, "admin")
    acme_reader, _ = await _key(kb, acme.id, "reader")
    zeta_admin, _ = await _key(kb, zeta.id, "admin")
    theirs, _ = await kb_sessions.sign_in(kb, zeta_admin, ttl_s=60, user_agent=None)
    service_session, _ = await kb_sessions.sign_in(kb, SERVICE, ttl_s=60, user_agent=None)
    with pytest.raises(Forbidden):
        await kb_sessions.list_sessions(kb, acme_reader, acme.id)
    with pytest.raises(NotFound):
        await kb_sessions.list_sessions(kb, acme_admin, zeta.id)
    with pytest.raises(NotFound):
        await kb_sessions.revoke_session(kb, acme_admin, zeta.id, theirs.id)
    with pytest.raises(NotFound):
        await kb_sessions.revoke_session(kb, acme_admin, acme.id, theirs.id)
    with pytest.raises(Forbidden):
        await kb_sessions.list_sessions(kb, acme_admin, None)
    with pytest.raises(Forbidden):
        await kb_sessions.revoke_service_sessions(kb, zeta_admin)
    assert [s.id for s in await kb_sessions.list_sessions(kb, zeta_admin, zeta.id)] == [theirs.id]
    assert [s.id for s in await kb_sessions.list_sessions(kb, SERVICE, None)] == [service_session.id]

    await kb_sessions.revoke_session(kb, SERVICE, zeta.id, theirs.id)
    assert await kb_sessions.revoke_service_sessions(kb, SERVICE) == 1
    revoked = [r for r in await _sessions_audit(catalog_url) if r["action"] == "session.revoke"]
    assert [(r["actor"], r["tenant_id"], r["target_id"]) for r in revoked] == [
        ("service", zeta.id, theirs.id),
        ("service", None, None),
    ]
    assert revoked[1]["detail"]["sessions"] == 1


async def test_revoking_a_key_marks_its_sessions_revoked(kb: KbContext) -> None:
    acme = await kb.catalog.create_tenant("acme")
    editor, _ = await _key(kb, acme.id, "editor")
    other, _ = await _key(kb, acme.id, "reader")
    assert editor.key_id is not None
    await kb_sessions.sign_in(kb, editor, ttl_s=60, user_agent=None)
    await kb_sessions.sign_in(kb, other, ttl_s=60, user_agent=None)
    await kb_tenants.revoke_key(kb, SERVICE, acme.id, editor.key_id)
    assert await kb.catalog.revoke_key_sessions(editor.key_id) == 0  # already marked by revoke_key
    assert [s.key_id for s in await kb.catalog.list_ui_sessions(acme.id)] == [other.key_id]
