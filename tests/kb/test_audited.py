"""``ragd.kb.audit.audited``: one record per call of a use-case, whatever its end, on a real
(SQLite) catalog; the request's client address comes from ``CLIENT``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.errors import Conflict, Forbidden
from ragd.kb import audit
from ragd.kb.context import KbContext
from ragd.kb_types import AuditOutcome, AuditQuery, Principal

ADMIN = Principal(tenant_id="t1", role="admin", key_id="k1")


class Ctx:
    def __init__(self, catalog: SqlCatalog) -> None:
        self.catalog = catalog


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[KbContext]:
    catalog = await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'ragd.db'}")
    yield cast(KbContext, Ctx(catalog))
    await catalog.aclose()


@audit.audited("thing.change", "thing", "thing_id")
async def change(
    ctx: KbContext, principal: Principal, thing_id: str, *, fail: Exception | None = None
) -> str:
    audit.note(tenant_id="t-owner", step="checked")
    if fail is not None:
        raise fail
    audit.note(result="changed")
    return thing_id.upper()


async def records(ctx: KbContext) -> list[Any]:
    return list(reversed(await ctx.catalog.list_audit(AuditQuery())))


async def test_an_ok_call_is_one_record_with_its_notes(ctx: KbContext) -> None:
    token = audit.CLIENT.set("192.0.2.7")
    try:
        assert await change(ctx, ADMIN, "abc") == "ABC"
    finally:
        audit.CLIENT.reset(token)
    (entry,) = await records(ctx)
    assert (entry.action, entry.outcome, entry.actor, entry.actor_role) == (
        "thing.change",
        AuditOutcome.OK,
        "k1",
        "admin",
    )
    assert (entry.tenant_id, entry.target_kind, entry.target_id) == ("t-owner", "thing", "abc")
    assert entry.detail == {"step": "checked", "result": "changed"}
    assert entry.client == "192.0.2.7"


@pytest.mark.parametrize(
    ("error", "outcome", "code"),
    [
        (Forbidden("no"), AuditOutcome.DENIED, "FORBIDDEN"),
        (Conflict("busy"), AuditOutcome.FAILED, "CONFLICT"),
        (RuntimeError("boom"), AuditOutcome.FAILED, "PIPELINE_FAILED"),
    ],
)
async def test_a_refused_or_failed_call_is_recorded_and_the_error_raised(
    ctx: KbContext, error: Exception, outcome: AuditOutcome, code: str
) -> None:
    with pytest.raises(type(error)):
        await change(ctx, ADMIN, "abc", fail=error)
    (entry,) = await records(ctx)
    assert entry.outcome is outcome
    assert entry.detail["code"] == code
    assert entry.detail["step"] == "checked"
    assert "result" not in entry.detail
    assert entry.client is None


async def test_note_outside_an_audited_call_does_nothing(ctx: KbContext) -> None:
    audit.note(tenant_id="x", anything=1)
    assert await records(ctx) == []
