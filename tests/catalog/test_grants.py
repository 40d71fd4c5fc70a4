"""SourceGrants contract and a source's disabled_reason, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.catalog.sql.tables import source_grants, sources
from ragd.errors import NotFound
from ragd.kb_types import SourceGrant, SourceKind, SourceSpec
from tests.catalog.conftest import START, FakeClock, make_dataset, table_rows


async def test_grants_are_stored_listed_by_tenant_and_revoked_not_deleted(
    catalog: SqlCatalog, clock: FakeClock, catalog_url: str
) -> None:
    acme = await catalog.create_tenant("acme")
    zeta = await catalog.create_tenant("zeta")
    folder = await catalog.create_grant(
        SourceGrant(
            id="g1", tenant_id=acme.id, kind=SourceKind.FOLDER, target="/srv/acme", created_by="service"
        )
    )
    assert (folder.created_at, folder.shared, folder.revoked_at) == (START, False, None)
    assert await catalog.get_grant("g1") == folder
    clock.advance(1)
    bucket = SourceGrant(id="g2", tenant_id=zeta.id, kind=SourceKind.S3, target="b/zeta/", shared=True)
    await catalog.create_grant(bucket)
    assert [g.id for g in await catalog.list_grants()] == ["g1", "g2"]
    assert [g.id for g in await catalog.list_grants(acme.id)] == ["g1"]
    assert (await catalog.get_grant("g2")) == dataclasses.replace(bucket, created_at=START + 1)
    assert await catalog.get_grant("nope") is None

    clock.advance(1)
    revoked = await catalog.revoke_grant("g1")
    assert revoked is not None
    assert (revoked.revoked_at, revoked.live) == (START + 2, False)
    clock.advance(1)
    again = await catalog.revoke_grant("g1")
    assert again is not None
    assert again.revoked_at == START + 2, "a revoked grant keeps its time"
    assert await catalog.revoke_grant("nope") is None
    assert await catalog.list_grants(acme.id) == []
    assert [g.id for g in await catalog.list_grants(acme.id, include_revoked=True)] == ["g1"]
    rows = await table_rows(catalog_url, source_grants)
    assert sorted(r["id"] for r in rows) == ["g1", "g2"], "revoking keeps the record"


async def test_a_grant_of_an_unknown_tenant_is_not_found(catalog: SqlCatalog) -> None:
    with pytest.raises(NotFound):
        await catalog.create_grant(SourceGrant(id="g", tenant_id="ghost", kind=SourceKind.S3, target="b/"))


async def test_a_source_is_disabled_with_a_reason_and_enabled_again(
    catalog: SqlCatalog, catalog_url: str
) -> None:
    ds = await make_dataset(catalog)
    spec = SourceSpec(id="s1", dataset_id=ds.id, kind=SourceKind.FOLDER, config={"path": "/srv/a"})
    stored = await catalog.create_source(spec)
    assert (stored.disabled_reason, stored.disabled) == (None, False)
    disabled = await catalog.set_source_disabled("s1", "no live grant")
    assert disabled is not None
    assert (disabled.disabled_reason, disabled.disabled) == ("no live grant", True)
    assert (await catalog.list_sources(ds.id))[0].disabled_reason == "no live grant"
    assert [r["disabled_reason"] for r in await table_rows(catalog_url, sources)] == ["no live grant"]
    enabled = await catalog.set_source_disabled("s1", None)
    assert enabled is not None
    assert enabled.disabled_reason is None
    assert await catalog.set_source_disabled("nope", "x") is None
    assert await catalog.set_source_disabled("s1", None) is None, "already live: nothing changed"
    await catalog.set_source_disabled("s1", "first")
    assert await catalog.set_source_disabled("s1", "second") is None, "already disabled: kept"
    assert (await catalog.get_source("s1")).disabled_reason == "first"  # type: ignore[union-attr]
    born_disabled = SourceSpec(
        id="s2", dataset_id=ds.id, kind=SourceKind.S3, config={"bucket": "b"}, disabled_reason="why"
    )
    await catalog.create_source(born_disabled)
    assert (await catalog.get_source("s2")).disabled_reason == "why"  # type: ignore[union-attr]
