"""Alembic, run from code: the migration scripts ship inside the package.

No ``alembic.ini`` is needed: :func:`alembic_config` points ``script_location``
at ``migrations/`` and hands Alembic an open connection.  :func:`upgrade`
runs in one transaction that first takes a lock (PostgreSQL: an advisory lock;
SQLite: ``BEGIN IMMEDIATE``), so replicas starting together migrate once.

To write a new revision (developers), from the repository root::

    python -c "from ragd.catalog.sql.migrate import new_revision; new_revision('add x')"

which autogenerates it against a scratch SQLite database at head.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from ragd.catalog.sql.engine import create_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: pg_advisory_xact_lock key held while migrating ("ragd" in ASCII)
MIGRATION_LOCK = 0x72616764


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def upgrade(engine: AsyncEngine) -> None:
    """Bring the database to the newest revision (nothing to do when it is there already)."""
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(_upgrade_sync)


def _upgrade_sync(connection: Connection) -> None:
    if current_revision(connection) == head_revision():
        return
    command.upgrade(alembic_config(connection), "head")


def new_revision(message: str) -> None:  # pragma: no cover - a developer tool
    asyncio.run(_new_revision(message))


async def _new_revision(message: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(f"sqlite+aiosqlite:///{scratch}/scratch.db")
        try:
            await upgrade(engine)
            async with engine.begin() as conn:
                await conn.run_sync(
                    lambda c: command.revision(alembic_config(c), message=message, autogenerate=True)
                )
        finally:
            await engine.dispose()
