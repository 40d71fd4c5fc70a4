"""``ragd grants add|list|revoke``: straight on the catalog, enabling and disabling the tenant's
sources as the grants say (the upgrade path of docs/knowledge-bases.md#source-grants)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragd.catalog.sql import open_catalog
from ragd.catalog.sql.tables import audit_log
from ragd.cli.app import app
from ragd.kb.grants import sweep
from ragd.kb_types import Dataset, SourceKind, SourceSpec
from tests.catalog.conftest import table_rows


def test_grant_list_and_revoke_from_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    url = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'ragd.db'}"
    folder = tmp_path / "shares" / "acme"
    folder.mkdir(parents=True)
    runner = CliRunner()
    assert runner.invoke(app, ["tenants", "create", "acme"]).exit_code == 0

    async def legacy_source() -> None:  # a source from before grants, disabled at start-up
        catalog = await open_catalog(url)
        try:
            tenant = (await catalog.list_tenants())[0]
            ds = await catalog.create_dataset(
                Dataset(id="ds", tenant_id=tenant.id, name="docs", collection_name="kb-ds")
            )
            spec = SourceSpec(
                id="old", dataset_id=ds.id, kind=SourceKind.FOLDER, config={"path": str(folder)}
            )
            await catalog.create_source(spec)
            await sweep(catalog)
        finally:
            await catalog.aclose()

    async def disabled() -> str | None:
        catalog = await open_catalog(url)
        try:
            found = await catalog.get_source("old")
            assert found is not None
            return found.disabled_reason
        finally:
            await catalog.aclose()

    asyncio.run(legacy_source())
    assert asyncio.run(disabled()) is not None
    made = runner.invoke(app, ["grants", "add", "--tenant", "acme", "folder", str(folder)])
    assert made.exit_code == 0, made.output
    assert asyncio.run(disabled()) is None, "the grant enabled the source it covers"
    grant_id = made.output.split()[1].rstrip(":")

    bad = runner.invoke(app, ["grants", "add", "--tenant", "acme", "folder", "relative/path"])
    assert bad.exit_code == 2
    assert "INVALID_REQUEST" in bad.output
    listed = runner.invoke(app, ["grants", "list", "--tenant", "acme"])
    assert grant_id in listed.output
    revoked = runner.invoke(app, ["grants", "revoke", "--tenant", "acme", grant_id])
    assert revoked.exit_code == 0, revoked.output
    assert "1 source(s) disabled" in revoked.output
    assert asyncio.run(disabled()) is not None
    assert grant_id not in runner.invoke(app, ["grants", "list", "--tenant", "acme"]).output
    assert grant_id in runner.invoke(app, ["grants", "list", "--tenant", "acme", "--all"]).output
    rows = asyncio.run(table_rows(url, audit_log))
    mine = [(r["action"], r["client"]) for r in rows if r["action"].startswith(("grant.", "source."))]
    assert ("grant.create", "cli") in mine
    assert ("grant.revoke", "cli") in mine
    assert [a for a, _ in mine].count("source.disable") == 2
