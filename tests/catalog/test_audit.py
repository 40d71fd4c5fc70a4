"""AuditLog contract (append, filtered keyset pages), and the append-only triggers, on SQLite and
PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from ragd.catalog.sql import SqlCatalog
from ragd.kb_types import AuditOutcome, AuditQuery, AuditRecord
from tests.catalog.conftest import START, FakeClock


def entry(action: str, *, tenant: str | None = "t1", actor: str = "k1", **kw: Any) -> AuditRecord:
    fields: dict[str, Any] = {"outcome": AuditOutcome.OK, "tenant_id": tenant, **kw}
    return AuditRecord(id="", at=0.0, actor=actor, action=action, **fields)


async def test_a_record_is_stored_as_given_with_an_id_a_time_and_a_seq(catalog: SqlCatalog) -> None:
    stored = await catalog.append_audit(
        entry(
            "key.revoke",
            actor_role="admin",
            target_kind="key",
            target_id="abc",
            detail={"code": "NOT_FOUND", "nested": {"n": [1, 2]}},
            client="10.0.0.7",
            outcome=AuditOutcome.FAILED,
        )
    )
    assert stored.id
    assert stored.seq > 0
    assert stored.at == START
    assert await catalog.list_audit(AuditQuery()) == [stored]


async def test_filters_by_tenant_actor_action_and_time(catalog: SqlCatalog, clock: FakeClock) -> None:
    first = await catalog.append_audit(entry("dataset.create"))
    clock.advance(10)
    other = await catalog.append_audit(entry("dataset.delete", tenant="t2", actor="k2"))
    clock.advance(10)
    key = await catalog.append_audit(entry("key.create"))
    burst = await catalog.append_audit(entry("auth.failed_burst", tenant=None, actor="anonymous"))
    odd = await catalog.append_audit(entry("dataset_x.create"))  # "_" is no LIKE wildcard here

    def ids(found: list[AuditRecord]) -> list[str]:
        return [r.id for r in found]

    assert ids(await catalog.list_audit(AuditQuery(tenant_id="t2"))) == [other.id]
    assert ids(await catalog.list_audit(AuditQuery(actor="k1"))) == [odd.id, key.id, first.id]
    assert ids(await catalog.list_audit(AuditQuery(action="dataset"))) == [other.id, first.id]
    assert ids(await catalog.list_audit(AuditQuery(action="dataset.delete"))) == [other.id]
    assert ids(await catalog.list_audit(AuditQuery(action="dataset.del"))) == []
    assert ids(await catalog.list_audit(AuditQuery(since=START + 10, until=START + 20))) == [other.id]
    assert ids(await catalog.list_audit(AuditQuery(since=START + 20))) == [odd.id, burst.id, key.id]
    assert ids(await catalog.list_audit(AuditQuery(tenant_id="t1", action="key"))) == [key.id]


@pytest.mark.parametrize("newest_first", [True, False])
async def test_keyset_pages_cover_every_record_exactly_once(catalog: SqlCatalog, newest_first: bool) -> None:
    stored = [await catalog.append_audit(entry(f"dataset.n{i}")) for i in range(23)]
    await catalog.append_audit(entry("dataset.other", tenant="t2"))
    seen: list[AuditRecord] = []
    cursor = None
    while True:
        page = await catalog.list_audit(
            AuditQuery(tenant_id="t1"), after_seq=cursor, limit=5, newest_first=newest_first
        )
        seen += page
        if len(page) < 5:
            break
        cursor = page[-1].seq
    expected = list(reversed(stored)) if newest_first else stored
    assert [r.id for r in seen] == [r.id for r in expected]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET outcome = 'ok', actor = 'someone-else'",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE action = 'key.revoke'",
    ],
)
async def test_the_database_refuses_to_change_or_delete_a_record(catalog: SqlCatalog, statement: str) -> None:
    stored = await catalog.append_audit(entry("key.revoke", outcome=AuditOutcome.DENIED))
    with pytest.raises(DBAPIError):
        async with catalog._db.engine.begin() as conn:
            await conn.execute(text(statement))
    assert await catalog.list_audit(AuditQuery()) == [stored]


def test_the_catalog_offers_no_way_to_change_or_delete_a_record() -> None:
    verbs = [name for name in dir(SqlCatalog) if "audit" in name and not name.startswith("_")]
    assert sorted(verbs) == ["append_audit", "list_audit"]
