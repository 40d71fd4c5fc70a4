"""Catalog fixtures: a migrated SqlCatalog on each engine (``catalog_url`` comes from
tests/conftest.py), a controllable clock, and a raw look at the tables."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import create_async_engine

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.kb_types import Dataset

START = 1_800_000_000.0


class FakeClock:
    """Epoch seconds that only move when told to."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def catalog(catalog_url: str, clock: FakeClock) -> AsyncIterator[SqlCatalog]:
    opened = await open_catalog(catalog_url, clock=clock)
    yield opened
    await opened.aclose()


async def table_rows(url: str, table: Table) -> list[dict[str, Any]]:
    """Every row of ``table``, read on an engine of its own (not through the catalog)."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return [dict(r) for r in (await conn.execute(select(table))).mappings()]
    finally:
        await engine.dispose()


async def make_dataset(catalog: SqlCatalog, tenant_name: str = "acme", name: str = "docs") -> Dataset:
    tenant = await catalog.create_tenant(tenant_name)
    return await catalog.create_dataset(
        Dataset(
            id=f"ds-{tenant_name}-{name}",
            tenant_id=tenant.id,
            name=name,
            collection_name=f"c-{tenant.id}-{name}",
        )
    )
