"""``ragd tenants`` / ``ragd keys``: straight on the catalog, the secret printed once and usable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragd.catalog.sql import open_catalog
from ragd.cli.app import app


def test_tenant_and_key_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "fresh"))  # not created yet: the CLI makes it
    runner = CliRunner()
    made = runner.invoke(app, ["tenants", "create", "acme"])
    assert made.exit_code == 0, made.output
    again = runner.invoke(app, ["tenants", "create", "acme"])
    assert again.exit_code == 2
    assert "CONFLICT" in again.output
    key = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--role", "staff", "--name", "portal"])
    assert key.exit_code == 0, key.output
    secret = key.output.strip().splitlines()[-1]
    assert secret.startswith("rgd_")
    listed = runner.invoke(app, ["keys", "list", "--tenant", "acme"])
    assert "staff" in listed.output
    assert secret not in listed.output  # only a prefix is ever shown again
    missing = runner.invoke(app, ["keys", "create", "--tenant", "nobody", "--role", "admin"])
    assert missing.exit_code == 2
    assert "NOT_FOUND" in missing.output

    async def resolve() -> tuple[str | None, str]:
        catalog = await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'fresh' / 'ragd.db'}")
        try:
            principal = await catalog.resolve_key(secret)
            tenants = await catalog.list_tenants()
        finally:
            await catalog.aclose()
        assert principal is not None
        assert principal.tenant_id == tenants[0].id
        return principal.tenant_id, principal.role

    assert asyncio.run(resolve())[1] == "staff"


def test_tenants_create_applies_the_tenant_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ragd tenants create`` makes the template's datasets with the tenant (the settings' default
    here: the suite's environment sets none, this test the four standard ones)."""
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "fresh"))
    monkeypatch.setenv("RAGD_TENANTS__DATASETS", "knowledge,products,support,marketing")
    runner = CliRunner(env={"COLUMNS": "300"})
    shown = runner.invoke(app, ["tenants", "template"])
    assert shown.exit_code == 0, shown.output
    assert "the default (RAGD_TENANTS__DATASETS)" in shown.output
    made = runner.invoke(app, ["tenants", "create", "lead"])
    assert made.exit_code == 0, made.output
    assert "datasets: knowledge, products, support, marketing" in made.output

    async def names() -> list[str]:
        catalog = await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'fresh' / 'ragd.db'}")
        try:
            tenant = (await catalog.list_tenants())[0]
            return [d.name for d in await catalog.list_datasets(tenant.id)]
        finally:
            await catalog.aclose()

    assert asyncio.run(names()) == ["knowledge", "marketing", "products", "support"]
