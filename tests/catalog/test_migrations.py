"""The Alembic revisions build exactly tables.py, opening twice is a no-op, and failures speak
ragd's errors."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from ragd.catalog.sql import open_catalog
from ragd.catalog.sql.migrate import head_revision
from ragd.catalog.sql.tables import job_clock, metadata
from ragd.errors import CatalogUnavailable, ConfigurationError
from tests.catalog.conftest import table_rows


async def _inspect(url: str, look: Any) -> Any:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


def _schema_diff(conn: Connection) -> list[Any]:
    context = MigrationContext.configure(conn, opts={"compare_type": True})
    return list(compare_metadata(context, metadata))


def _revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


async def test_the_migrations_build_exactly_the_tables(catalog_url: str) -> None:
    catalog = await open_catalog(catalog_url)
    await catalog.aclose()
    assert await _inspect(catalog_url, _schema_diff) == []
    tables = await _inspect(catalog_url, lambda c: set(inspect(c).get_table_names()))
    assert tables == {*metadata.tables, "alembic_version"}
    assert head_revision() == "0010"


async def test_reopening_keeps_the_data_and_the_revision(catalog_url: str) -> None:
    first = await open_catalog(catalog_url)
    tenant = await first.create_tenant("acme")
    await first.aclose()
    again = await open_catalog(catalog_url)
    try:
        assert await again.list_tenants() == [tenant]
    finally:
        await again.aclose()
    assert await _inspect(catalog_url, _revision) == head_revision()
    assert len(await table_rows(catalog_url, job_clock)) == 1


async def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'ragd.db'}"
    catalog = await open_catalog(url)
    await catalog.aclose()
    mode = await _inspect(url, lambda c: c.execute(text("PRAGMA journal_mode")).scalar())
    assert mode == "wal"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_an_unreachable_database_is_catalog_unavailable(tmp_path: Path) -> None:
    with pytest.raises(CatalogUnavailable):
        await open_catalog(f"sqlite+aiosqlite:///{tmp_path / 'missing-dir' / 'ragd.db'}")
    with pytest.raises(CatalogUnavailable):
        await open_catalog(f"postgresql+asyncpg://ragd@127.0.0.1:{_closed_port()}/ragd")


async def test_a_bad_url_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        await open_catalog("not a url")
    with pytest.raises(ConfigurationError):
        await open_catalog("nosuchdb+nodriver://x/y")
    with pytest.raises(ConfigurationError):
        await open_catalog("mysql+aiomysql://u@127.0.0.1/ragd")
    with pytest.raises(ConfigurationError):  # a sync driver
        await open_catalog(f"sqlite:///{tmp_path / 'ragd.db'}")


async def test_sqlite_readers_do_not_wait_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "ragd.db"
    catalog = await open_catalog(f"sqlite+aiosqlite:///{path}")
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        await catalog.create_tenant("acme")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO tenants (id, name, created_at) VALUES ('x', 'uncommitted', 0)")
        tenants = await asyncio.wait_for(catalog.list_tenants(), timeout=5)
        assert [t.name for t in tenants] == ["acme"]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        await catalog.aclose()


async def test_a_0001_catalog_is_upgraded_with_its_data(catalog_url: str) -> None:
    """A catalog made by the first release gets the dataset reranker and model columns, its rows kept."""
    from alembic import command

    from ragd.catalog.sql.migrate import alembic_config

    engine = create_async_engine(catalog_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0001"))
            await conn.execute(text("INSERT INTO tenants (id, name, created_at) VALUES ('t', 'acme', 0)"))
            await conn.execute(
                text(
                    "INSERT INTO datasets (id, tenant_id, name, collection_name, description, "
                    "allowed_roles, created_at, updated_at) VALUES ('d', 't', 'old', 'kb-d', '', '[]', 0, 0)"
                )
            )
    finally:
        await engine.dispose()
    catalog = await open_catalog(catalog_url)
    try:
        old = await catalog.get_dataset("d")
        assert old is not None
        assert (old.name, old.reranker, old.embedding) == ("old", None, None)
        await catalog.update_dataset(dataclasses.replace(old, reranker="none", embedding="secure"))
        again = await catalog.get_dataset("d")
        assert again is not None
        assert (again.reranker, again.embedding) == ("none", "secure")
        assert await catalog.collection_models(["kb-d", "other"]) == {"kb-d": "secure"}
    finally:
        await catalog.aclose()
    assert await _inspect(catalog_url, _revision) == head_revision() == "0010"
    assert await _inspect(catalog_url, _schema_diff) == []


async def test_a_0003_catalog_gives_its_finished_jobs_the_status_their_items_say(catalog_url: str) -> None:
    """Jobs an older release called "succeeded" despite failed items end partial or failed."""
    from alembic import command

    from ragd.catalog.sql.migrate import alembic_config

    engine = create_async_engine(catalog_url)
    jobs = {  # id: (status, done, failed, error_code)
        "clean": ("succeeded", 3, 0, None),
        "some": ("succeeded", 1, 5, None),
        "none": ("succeeded", 0, 2, None),
        "broke": ("failed", 0, 0, "STORE_UNAVAILABLE"),
        "stopped": ("cancelled", 1, 1, "CANCELLED"),
    }
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0003"))
            for job_id, (status, done, failed, code) in jobs.items():
                await conn.execute(
                    text(
                        "INSERT INTO jobs (id, tenant_id, kind, status, payload, dedupe_key, attempts, "
                        "max_attempts, cancel_requested, run_after, error_code, created_at, updated_at, "
                        "total, done, failed, chunks) VALUES (:id, 't', 'ingest', :status, '{}', :id, 1, 3, "
                        ":no, 0, :code, 0, 0, :total, :done, :failed, 0)"
                    ),
                    {
                        "id": job_id,
                        "status": status,
                        "code": code,
                        "no": False,
                        "total": done + failed,
                        "done": done,
                        "failed": failed,
                    },
                )
    finally:
        await engine.dispose()
    catalog = await open_catalog(catalog_url)
    try:
        statuses = {j.id: j.status.value for j in await catalog.list_jobs(None)}
    finally:
        await catalog.aclose()
    assert statuses == {
        "clean": "succeeded",
        "some": "partial",
        "none": "failed",
        "broke": "failed",
        "stopped": "cancelled",
    }
