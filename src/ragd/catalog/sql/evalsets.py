"""Datasets' evaluation sets: labelled queries, bounded per dataset (issue 31 §2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import RowMapping, delete, func, insert, select

from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import datasets, eval_queries
from ragd.errors import EvalSetFull, NotFound
from ragd.kb_types import EvalQuery, EvalSource


def _row(query: EvalQuery, created_at: float) -> dict[str, Any]:
    return {
        "id": query.id,
        "dataset_id": query.dataset_id,
        "query": query.query,
        "files": list(query.files),
        "chunks": list(query.chunks),
        "answer": query.answer,
        "source": query.source.value,
        "created_at": created_at,
    }


def _record(row: RowMapping) -> EvalQuery:
    return EvalQuery(
        id=row["id"],
        dataset_id=row["dataset_id"],
        query=row["query"],
        files=tuple(row["files"] or ()),
        chunks=tuple(row["chunks"] or ()),
        answer=row["answer"],
        source=EvalSource.parse(row["source"]),
        created_at=row["created_at"],
    )


class SqlEvalSets:
    _db: Database

    async def add_eval_queries(
        self, dataset_id: str, queries: Sequence[EvalQuery], *, max_queries: int
    ) -> list[EvalQuery]:
        """Store ``queries`` (``created_at`` now, in order) in one transaction, or none of them:
        EvalSetFull when the set would hold more than ``max_queries``.  The dataset's row is locked
        first (PostgreSQL), so two concurrent adds cannot both pass the bound."""
        now = self._db.now()
        stored = [
            EvalQuery(q.id, dataset_id, q.query, q.files, q.chunks, q.answer, q.source, now + i * 1e-6)
            for i, q in enumerate(queries)
        ]
        missing = f"dataset {dataset_id!r} not found"
        async with self._db.write(conflict="a labelled query with that id exists", missing=missing) as conn:
            lock = select(datasets.c.id).where(datasets.c.id == dataset_id)
            if self._db.dialect == "postgresql":
                lock = lock.with_for_update()
            if (await conn.execute(lock)).first() is None:
                raise NotFound(missing)
            count = select(func.count()).select_from(eval_queries)
            held = (await conn.execute(count.where(eval_queries.c.dataset_id == dataset_id))).scalar_one()
            if held + len(stored) > max_queries:
                raise EvalSetFull(
                    f"the dataset's evaluation set holds {held} of at most {max_queries} labelled "
                    f"queries; {len(stored)} more do not fit (RAGD_EVALUATION__MAX_QUERIES)"
                )
            if stored:
                await conn.execute(insert(eval_queries), [_row(q, q.created_at) for q in stored])
        return stored

    async def list_eval_queries(
        self, dataset_id: str, *, limit: int = 100, offset: int = 0
    ) -> list[EvalQuery]:
        query = (
            select(eval_queries)
            .where(eval_queries.c.dataset_id == dataset_id)
            .order_by(eval_queries.c.created_at, eval_queries.c.id)
            .limit(limit)
            .offset(offset)
        )
        async with self._db.read() as conn:
            return [_record(r) for r in (await conn.execute(query)).mappings()]

    async def count_eval_queries(self, dataset_id: str) -> int:
        query = select(func.count()).select_from(eval_queries).where(eval_queries.c.dataset_id == dataset_id)
        async with self._db.read() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def delete_eval_query(self, dataset_id: str, query_id: str) -> bool:
        where = (eval_queries.c.id == query_id) & (eval_queries.c.dataset_id == dataset_id)
        async with self._db.write() as conn:
            result = await conn.execute(delete(eval_queries).where(where))
        return bool(result.rowcount)
