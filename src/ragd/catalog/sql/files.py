"""A dataset's files: the catalog side of what the store holds under ``meta.file_id``."""

from __future__ import annotations

import dataclasses

from sqlalchemy import delete, select

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import files
from ragd.catalog.sql.upsert import upsert
from ragd.kb_types import FileEntry


class SqlFiles:
    _db: Database

    async def put_file(self, entry: FileEntry) -> FileEntry:
        """Insert or replace by id (``updated_at`` set to now; a replaced file keeps its
        ``created_at``); NotFound when the dataset does not exist.  Returns the stored entry."""
        now = self._db.now()
        values = {**records.file_values(entry), "created_at": entry.created_at or now, "updated_at": now}
        async with self._db.write(missing=f"no dataset {entry.dataset_id!r}") as conn:
            await upsert(conn, files, values, keep=("created_at",))
            stored = await conn.execute(select(files.c.created_at).where(files.c.id == entry.id))
            created_at = stored.scalar_one()
        return dataclasses.replace(entry, created_at=created_at, updated_at=now)

    async def get_file(self, file_id: str) -> FileEntry | None:
        async with self._db.read() as conn:
            row = (await conn.execute(select(files).where(files.c.id == file_id))).mappings().first()
        return records.file_entry(row) if row is not None else None

    async def list_files(self, dataset_id: str, *, limit: int = 1000, offset: int = 0) -> list[FileEntry]:
        query = (
            select(files)
            .where(files.c.dataset_id == dataset_id)
            .order_by(files.c.name, files.c.id)
            .limit(limit)
            .offset(offset)
        )
        async with self._db.read() as conn:
            return [records.file_entry(r) for r in (await conn.execute(query)).mappings()]

    async def delete_file(self, file_id: str) -> None:
        async with self._db.write() as conn:
            await conn.execute(delete(files).where(files.c.id == file_id))
