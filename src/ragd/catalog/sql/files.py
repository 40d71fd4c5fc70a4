"""A dataset's files: the catalog side of what the store holds under ``meta.file_id``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sqlalchemy import delete, select, update

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import datasets, files
from ragd.catalog.sql.upsert import upsert
from ragd.errors import InvalidMetadata, NotFound
from ragd.kb_types import FieldType, FileEntry, FileMetadata


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

    async def field_types(self, dataset_id: str) -> dict[str, FieldType]:
        """Each user metadata field's type in the dataset's files (none: an unknown dataset)."""
        async with self._db.read() as conn:
            query = select(datasets.c.field_types).where(datasets.c.id == dataset_id)
            return _field_types((await conn.execute(query)).scalar_one_or_none())

    async def set_file_metadata(
        self, file_id: str, metadata: FileMetadata, types: Mapping[str, FieldType]
    ) -> FileEntry:
        """Replace a file's tags and fields, and record ``types`` (its fields') in its dataset, in
        one transaction: a field whose type differs from the one the dataset recorded is
        INVALID_METADATA and nothing is written; NotFound when there is no such file."""
        async with self._db.write() as conn:
            row = (await conn.execute(select(files).where(files.c.id == file_id))).mappings().first()
            if row is None:
                raise NotFound(f"no file {file_id!r}")
            query = select(datasets.c.field_types).where(datasets.c.id == row["dataset_id"]).with_for_update()
            known = _field_types((await conn.execute(query)).scalar_one_or_none())
            for name, kind in sorted(types.items()):
                if known.get(name, kind) is not kind:
                    raise InvalidMetadata(
                        f"field {name!r} is a {known[name].value} in this dataset, not a {kind.value}",
                        hint="send a value of the field's type, or use another field name",
                    )
            merged = {**known, **types}
            if merged != known:
                await conn.execute(
                    update(datasets)
                    .where(datasets.c.id == row["dataset_id"])
                    .values(field_types={k: v.value for k, v in sorted(merged.items())})
                )
            now = self._db.now()
            changes = {"tags": list(metadata.tags), "fields": dict(metadata.fields), "updated_at": now}
            await conn.execute(update(files).where(files.c.id == file_id).values(**changes))
        return dataclasses.replace(records.file_entry(row), metadata=metadata, updated_at=now)


def _field_types(raw: object) -> dict[str, FieldType]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for name, value in raw.items():
        try:
            out[str(name)] = FieldType.parse(str(value))
        except ValueError:
            continue
    return out
