"""Datasets: unique names per tenant, one unique collection name each."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import datasets, files
from ragd.errors import Conflict, NotFound
from ragd.kb_types import Dataset, DatasetStats, FileStatus


def _taken(ds: Dataset, *, new: bool) -> str:
    taken = f"the tenant already has a dataset named {ds.name!r}"
    return f"{taken} (or collection {ds.collection_name!r} is taken)" if new else taken


class SqlDatasets:
    _db: Database

    async def create_dataset(self, dataset: Dataset) -> Dataset:
        now = self._db.now()
        stored = dataclasses.replace(dataset, created_at=now, updated_at=now)
        values = {
            "id": stored.id,
            "tenant_id": stored.tenant_id,
            "collection_name": stored.collection_name,
            "created_at": now,
            "updated_at": now,
            **records.dataset_values(stored),
        }
        async with self._db.write(conflict=_taken(dataset, new=True), missing="no such tenant") as conn:
            await conn.execute(insert(datasets).values(**values))
        return stored

    async def get_dataset(self, dataset_id: str) -> Dataset | None:
        async with self._db.read() as conn:
            row = (await conn.execute(select(datasets).where(datasets.c.id == dataset_id))).mappings().first()
        return records.dataset(row) if row is not None else None

    async def list_datasets(self, tenant_id: str | None) -> list[Dataset]:
        query = select(datasets).order_by(datasets.c.name, datasets.c.id)
        if tenant_id is not None:
            query = query.where(datasets.c.tenant_id == tenant_id)
        async with self._db.read() as conn:
            return [records.dataset(r) for r in (await conn.execute(query)).mappings()]

    async def update_dataset(self, dataset: Dataset) -> Dataset:
        """Replace name/description/chunking/allowed_roles; Conflict on a taken name; NotFound
        for an unknown id.  Returns the stored dataset (``updated_at`` now)."""
        statement = (
            update(datasets)
            .where(datasets.c.id == dataset.id, datasets.c.generation == dataset.generation)
            .values(updated_at=self._db.now(), **records.dataset_values(dataset))
            .returning(*datasets.c)
        )
        async with self._db.write(conflict=_taken(dataset, new=False)) as conn:
            row = (await conn.execute(statement)).mappings().first()
            exists = (
                row is not None
                or (await conn.execute(select(datasets.c.id).where(datasets.c.id == dataset.id))).first()
            )
        if row is None and exists:
            # a migration switched its version (model, chunking) since it was read: not overwritten
            raise Conflict(f"dataset {dataset.id!r} changed version meanwhile; read it again and retry")
        if row is None:
            raise NotFound(f"no dataset {dataset.id!r}")
        return records.dataset(row)

    async def collection_models(self, collection_names: Sequence[str]) -> dict[str, str]:
        names = list(dict.fromkeys(collection_names))
        if not names:
            return {}
        query = select(datasets.c.collection_name, datasets.c.embedding).where(
            datasets.c.collection_name.in_(names), datasets.c.embedding.is_not(None)
        )
        async with self._db.read() as conn:
            return {row.collection_name: row.embedding for row in await conn.execute(query)}

    async def dataset_stats(self, dataset_ids: Sequence[str] | None) -> dict[str, DatasetStats]:
        """One GROUP BY (dataset, status) over the files, folded per dataset."""
        if dataset_ids is not None and not dataset_ids:
            return {}
        query = select(
            files.c.dataset_id,
            files.c.status,
            func.count(),
            func.coalesce(func.sum(files.c.chunks), 0),
            func.max(files.c.updated_at),
        ).group_by(files.c.dataset_id, files.c.status)
        if dataset_ids is not None:
            query = query.where(files.c.dataset_id.in_(list(dict.fromkeys(dataset_ids))))
        async with self._db.read() as conn:
            rows = list(await conn.execute(query))
        return _fold_stats(rows)

    async def delete_dataset(self, dataset_id: str) -> None:
        async with self._db.write() as conn:
            await conn.execute(delete(datasets).where(datasets.c.id == dataset_id))


def _fold_stats(rows: Sequence[Any]) -> dict[str, DatasetStats]:
    """(dataset_id, status, files, chunks, newest updated_at) rows -> stats per dataset."""
    out: dict[str, DatasetStats] = {}
    for dataset_id, status, count, chunks, newest in rows:
        was = out.get(dataset_id, DatasetStats())
        out[dataset_id] = DatasetStats(
            files=was.files + int(count),
            chunks=was.chunks + int(chunks),
            files_by_status={**was.files_by_status, FileStatus.parse(status): int(count)},
            last_file_update=max(float(newest), was.last_file_update or 0.0),
        )
    return out
