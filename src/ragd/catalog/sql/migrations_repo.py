"""Dataset migrations (issue 31 §1): their records, and the dataset's version fields, changed together.

Every change of what a dataset serves (start: a version hidden; switch and rollback: the served
version exchanged with the hidden one; removal: a version no longer hidden) is one transaction
over the dataset's row (locked first on PostgreSQL) and the migration's, so every replica reads
exactly one complete version before or after it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import RowMapping, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import datasets, files, migrations
from ragd.errors import MigrationRunning, NotFound, WrongMigrationState
from ragd.kb_types import ChunkingSpec, Dataset, Migration, MigrationState, VersionSpec
from ragd.types import ChunkStrategy, CollectionVersion


def version_json(v: VersionSpec) -> dict[str, Any]:
    c = v.chunking
    return {
        "generation": v.generation,
        "embedding": v.embedding,
        "chunking": {
            "strategy": c.strategy.value if c.strategy else None,
            "size": c.size,
            "overlap": c.overlap,
        },
    }


def version_spec(data: Mapping[str, Any]) -> VersionSpec:
    c = data.get("chunking") or {}
    strategy = c.get("strategy")
    return VersionSpec(
        generation=str(data.get("generation") or ""),
        embedding=data.get("embedding"),
        chunking=ChunkingSpec(
            strategy=ChunkStrategy.parse(strategy) if strategy else None,
            size=c.get("size"),
            overlap=c.get("overlap"),
        ),
    )


def _row(m: Migration) -> dict[str, Any]:
    return {
        "id": m.id,
        "dataset_id": m.dataset_id,
        "tenant_id": m.tenant_id,
        "state": m.state.value,
        "source": version_json(m.source),
        "target": version_json(m.target),
        "job_id": m.job_id,
        "auto_switch": m.auto_switch,
        "max_regression": m.max_regression,
        "reports": dict(m.reports),
        "held": m.held,
        "failed_files": m.failed_files,
        "error_code": m.error_code,
        "error_message": m.error_message,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "switched_at": m.switched_at,
        "rolled_back_at": m.rolled_back_at,
        "retain_until": m.retain_until,
        "removed_at": m.removed_at,
    }


def _record(row: RowMapping) -> Migration:
    return Migration(
        id=row["id"],
        dataset_id=row["dataset_id"],
        tenant_id=row["tenant_id"],
        state=MigrationState.parse(row["state"]),
        source=version_spec(row["source"]),
        target=version_spec(row["target"]),
        job_id=row["job_id"],
        auto_switch=bool(row["auto_switch"]),
        max_regression=float(row["max_regression"]),
        reports=dict(row["reports"] or {}),
        held=row["held"],
        failed_files=int(row["failed_files"]),
        error_code=row["error_code"],
        error_message=row["error_message"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        switched_at=row["switched_at"],
        rolled_back_at=row["rolled_back_at"],
        retain_until=row["retain_until"],
        removed_at=row["removed_at"],
    )


class SqlMigrations:
    _db: Database

    async def _locked_dataset(self, conn: AsyncConnection, dataset_id: str) -> Dataset:
        query = select(datasets).where(datasets.c.id == dataset_id)
        if self._db.dialect == "postgresql":
            query = query.with_for_update()
        row = (await conn.execute(query)).mappings().first()
        if row is None:
            raise NotFound(f"dataset {dataset_id!r} not found")
        return records.dataset(row)

    async def _locked_migration(self, conn: AsyncConnection, migration_id: str) -> Migration:
        query = select(migrations).where(migrations.c.id == migration_id)
        if self._db.dialect == "postgresql":
            query = query.with_for_update()
        row = (await conn.execute(query)).mappings().first()
        if row is None:
            raise NotFound(f"migration {migration_id!r} not found")
        return _record(row)

    async def create_migration(self, migration: Migration) -> Migration:
        """Store a BUILDING migration and hide its target version in the dataset, in one
        transaction; MIGRATION_RUNNING when the dataset has one in flight."""
        now = self._db.now()
        stored = dataclasses.replace(migration, created_at=now, updated_at=now)
        async with self._db.write(conflict="a migration with that id exists") as conn:
            dataset = await self._locked_dataset(conn, migration.dataset_id)
            rows = await conn.execute(
                select(migrations.c.id, migrations.c.state).where(migrations.c.dataset_id == dataset.id)
            )
            for row in rows:
                if MigrationState.parse(row.state).in_flight:
                    raise MigrationRunning(
                        f"dataset {dataset.name!r} has migration {row.id} in flight: switch, "
                        "cancel or wait for it first"
                    )
            await conn.execute(insert(migrations).values(**_row(stored)))
            await _set_versions(
                conn, dataset, dataset.generation, (*dataset.hidden, migration.target.generation)
            )
        return stored

    async def get_migration(self, migration_id: str) -> Migration | None:
        async with self._db.read() as conn:
            query = select(migrations).where(migrations.c.id == migration_id)
            row = (await conn.execute(query)).mappings().first()
        return _record(row) if row is not None else None

    async def list_migrations(self, dataset_id: str, *, limit: int = 50) -> list[Migration]:
        """A dataset's migrations, newest first."""
        query = (
            select(migrations)
            .where(migrations.c.dataset_id == dataset_id)
            .order_by(migrations.c.created_at.desc(), migrations.c.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            return [_record(r) for r in (await conn.execute(query)).mappings()]

    async def migration_of_job(self, job_id: str) -> Migration | None:
        async with self._db.read() as conn:
            row = (
                (await conn.execute(select(migrations).where(migrations.c.job_id == job_id)))
                .mappings()
                .first()
            )
        return _record(row) if row is not None else None

    async def update_migration(
        self, migration_id: str, *, expect: Sequence[MigrationState] | None = None, **changes: Any
    ) -> Migration:
        """Set fields of a migration (``state`` a MigrationState); WrongMigrationState when its
        state is not one of ``expect``.  Not for switch/rollback/removal (they move the dataset)."""
        async with self._db.write() as conn:
            current = await self._locked_migration(conn, migration_id)
            if expect is not None and current.state not in expect:
                raise WrongMigrationState(f"migration {migration_id} is {current.state.value}")
            updated = dataclasses.replace(current, updated_at=self._db.now(), **changes)
            values = _row(updated)
            del values["id"]
            await conn.execute(update(migrations).where(migrations.c.id == migration_id).values(**values))
        return updated

    async def switch_migration(
        self,
        migration_id: str,
        *,
        to_target: bool,
        retain_until: float,
        expect: Sequence[MigrationState],
        file_chunks: Mapping[str, int] | None = None,
    ) -> tuple[Dataset, Migration]:
        """Serve the target version (``to_target``) or the source one again: the dataset's
        generation, model and chunking become that version's and the other version is hidden,
        in one transaction with the migration's new state and each file's chunk count in the
        version now served (``file_chunks``).  WrongMigrationState unless the migration is in one
        of ``expect`` and its other version is still stored."""
        async with self._db.write() as conn:
            current = await self._locked_migration(conn, migration_id)
            dataset = await self._locked_dataset(conn, current.dataset_id)
            if current.state not in expect:
                raise WrongMigrationState(f"migration {migration_id} is {current.state.value}")
            if current.removed_at is not None:
                raise WrongMigrationState(
                    f"migration {migration_id}: the version it would serve was removed "
                    "when its retention ended"
                )
            now = self._db.now()
            serve, spare = (current.target, current.source) if to_target else (current.source, current.target)
            hidden = tuple(t for t in dataset.hidden if t != serve.generation)
            if spare.generation not in hidden:
                hidden = (*hidden, spare.generation)
            await conn.execute(
                update(datasets)
                .where(datasets.c.id == dataset.id)
                .values(
                    generation=serve.generation,
                    hidden=list(hidden),
                    embedding=serve.embedding,
                    chunk_strategy=serve.chunking.strategy.value if serve.chunking.strategy else None,
                    chunk_size=serve.chunking.size,
                    chunk_overlap=serve.chunking.overlap,
                    updated_at=now,
                )
            )
            if to_target:
                changes: dict[str, Any] = {"state": MigrationState.SWITCHED, "switched_at": now, "held": None}
            else:
                changes = {"state": MigrationState.ROLLED_BACK, "rolled_back_at": now}
            if file_chunks:
                await conn.execute(
                    update(files)
                    .where(files.c.id == bindparam("fid"), files.c.dataset_id == dataset.id)
                    .values(chunks=bindparam("n")),
                    [{"fid": fid, "n": n} for fid, n in file_chunks.items()],
                )
            migration = dataclasses.replace(current, updated_at=now, retain_until=retain_until, **changes)
            values = _row(migration)
            del values["id"]
            await conn.execute(update(migrations).where(migrations.c.id == migration_id).values(**values))
            row = (await conn.execute(select(datasets).where(datasets.c.id == dataset.id))).mappings().one()
        return records.dataset(row), migration

    async def end_migration(self, migration_id: str, state: MigrationState, **changes: Any) -> Migration:
        """A migration that never switched ends (FAILED or CANCELLED): its target stays hidden
        until :meth:`removed_version` records its points gone."""
        return await self.update_migration(
            migration_id,
            expect=(MigrationState.BUILDING, MigrationState.READY),
            state=state,
            retain_until=self._db.now(),
            **changes,
        )

    async def removed_version(self, migration_id: str) -> Migration:
        """The migration's spare version's points are gone: the dataset no longer hides it."""
        async with self._db.write() as conn:
            current = await self._locked_migration(conn, migration_id)
            dataset = await self._locked_dataset(conn, current.dataset_id)
            gone = current.spare.generation
            if gone != dataset.generation:
                hidden = [t for t in dataset.hidden if t != gone]
                await conn.execute(update(datasets).where(datasets.c.id == dataset.id).values(hidden=hidden))
            now = self._db.now()
            migration = dataclasses.replace(current, updated_at=now, removed_at=now)
            await conn.execute(
                update(migrations)
                .where(migrations.c.id == migration_id)
                .values(updated_at=now, removed_at=now)
            )
        return migration

    async def open_migrations(self) -> list[Migration]:
        """Every migration not switched and not ended (building or ready), oldest first."""
        states = [MigrationState.BUILDING.value, MigrationState.READY.value]
        query = select(migrations).where(migrations.c.state.in_(states)).order_by(migrations.c.created_at)
        async with self._db.read() as conn:
            return [_record(r) for r in (await conn.execute(query)).mappings()]

    async def migrations_to_clean(self, now: float) -> list[Migration]:
        """Migrations whose spare version is due for removal: retention over, not removed yet."""
        query = select(migrations).where(
            migrations.c.removed_at.is_(None),
            migrations.c.retain_until.is_not(None),
            migrations.c.retain_until <= now,
        )
        async with self._db.read() as conn:
            return [_record(r) for r in (await conn.execute(query)).mappings()]

    async def collection_versions(self) -> dict[str, CollectionVersion]:
        """Every collection whose dataset hides a version: what a search of it reads."""
        query = select(
            datasets.c.collection_name, datasets.c.embedding, datasets.c.generation, datasets.c.hidden
        )
        out: dict[str, CollectionVersion] = {}
        async with self._db.read() as conn:
            for row in await conn.execute(query.where(datasets.c.hidden.is_not(None))):
                hidden = tuple(str(t) for t in (row.hidden or ()))
                if hidden:
                    out[row.collection_name] = CollectionVersion(
                        row.collection_name, row.embedding, row.generation or "", hidden
                    )
        return out


async def _set_versions(
    conn: AsyncConnection, dataset: Dataset, generation: str, hidden: Sequence[str]
) -> None:
    await conn.execute(
        update(datasets)
        .where(datasets.c.id == dataset.id)
        .values(generation=generation, hidden=list(dict.fromkeys(hidden)))
    )
