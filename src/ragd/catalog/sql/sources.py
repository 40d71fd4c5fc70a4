"""Sources and their sync ledger (one record per item key, whatever the source)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import delete, insert, select, update

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import ledger, sources
from ragd.catalog.sql.upsert import upsert
from ragd.kb_types import LedgerEntry, SourceSpec


class SqlSources:
    _db: Database

    async def create_source(self, spec: SourceSpec) -> SourceSpec:
        """Store a source (``created_at`` now); NotFound when the dataset does not exist."""
        stored = dataclasses.replace(spec, created_at=self._db.now())
        values = {
            "id": stored.id,
            "dataset_id": stored.dataset_id,
            "kind": stored.kind.value,
            "config": dict(stored.config),
            "created_at": stored.created_at,
            "last_synced_at": stored.last_synced_at,
            "last_error": stored.last_error,
            "disabled_reason": stored.disabled_reason,
        }
        conflict = f"a source {spec.id!r} exists"
        async with self._db.write(conflict=conflict, missing=f"no dataset {spec.dataset_id!r}") as conn:
            await conn.execute(insert(sources).values(**values))
        return stored

    async def get_source(self, source_id: str) -> SourceSpec | None:
        async with self._db.read() as conn:
            row = (await conn.execute(select(sources).where(sources.c.id == source_id))).mappings().first()
        return records.source(row) if row is not None else None

    async def list_sources(self, dataset_id: str | None = None) -> list[SourceSpec]:
        query = select(sources).order_by(sources.c.created_at, sources.c.id)
        if dataset_id is not None:
            query = query.where(sources.c.dataset_id == dataset_id)
        async with self._db.read() as conn:
            return [records.source(r) for r in (await conn.execute(query)).mappings()]

    async def delete_source(self, source_id: str) -> None:
        async with self._db.write() as conn:
            await conn.execute(delete(sources).where(sources.c.id == source_id))

    async def mark_synced(self, source_id: str, at: float, error: str | None) -> None:
        statement = update(sources).where(sources.c.id == source_id)
        async with self._db.write() as conn:
            await conn.execute(statement.values(last_synced_at=at, last_error=error))

    async def set_source_disabled(self, source_id: str, reason: str | None) -> SourceSpec | None:
        """Disable a live source with ``reason`` (None: enable a disabled one); the source as it now
        stands, or None when nothing changed (an unknown id, or already so: of two replicas doing
        the same at once, one changes it)."""
        state = sources.c.disabled_reason
        now_is = state.is_(None) if reason is not None else state.is_not(None)
        async with self._db.write() as conn:
            statement = update(sources).where(sources.c.id == source_id, now_is)
            if (await conn.execute(statement.values(disabled_reason=reason))).rowcount == 0:
                return None
            row = (await conn.execute(select(sources).where(sources.c.id == source_id))).mappings().first()
        return records.source(row) if row is not None else None

    async def ledger(self, source_id: str) -> dict[str, LedgerEntry]:
        query = select(ledger).where(ledger.c.source_id == source_id)
        async with self._db.read() as conn:
            entries = [records.ledger_entry(r) for r in (await conn.execute(query)).mappings()]
        return {e.key: e for e in entries}

    async def record_item(self, entry: LedgerEntry) -> None:
        """Insert or replace the record of (source_id, key); NotFound for an unknown source."""
        async with self._db.write(missing=f"no source {entry.source_id!r}") as conn:
            await upsert(conn, ledger, records.ledger_values(entry))

    async def forget_item(self, source_id: str, key: str) -> None:
        statement = delete(ledger).where(ledger.c.source_id == source_id, ledger.c.key == key)
        async with self._db.write() as conn:
            await conn.execute(statement)
