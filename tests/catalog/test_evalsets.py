"""Datasets' evaluation sets in the catalog, on SQLite and PostgreSQL: stored in order, bounded
all-or-nothing, deleted one by one and with their dataset."""

from __future__ import annotations

import asyncio

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.catalog.sql.tables import eval_queries
from ragd.errors import EvalSetFull, NotFound
from ragd.kb_types import EvalQuery, EvalSource
from tests.catalog.conftest import START, make_dataset, table_rows


def _q(n: int, dataset_id: str = "", **kw: object) -> EvalQuery:
    return EvalQuery(id=f"q{n}", dataset_id=dataset_id, query=f"question {n}", files=(f"f{n}",), **kw)  # type: ignore[arg-type]


async def test_labelled_queries_are_stored_listed_in_order_and_deleted(catalog: SqlCatalog) -> None:
    ds = await make_dataset(catalog)
    other = await make_dataset(catalog, "globex")
    first = _q(1, answer="forty-two", source=EvalSource.SANDBOX)
    stored = await catalog.add_eval_queries(ds.id, [first, _q(2), _q(3)], max_queries=10)
    assert [q.id for q in stored] == ["q1", "q2", "q3"]
    assert all(q.dataset_id == ds.id and q.created_at >= START for q in stored)
    listed = await catalog.list_eval_queries(ds.id)
    assert listed == stored
    assert listed[0].answer == "forty-two"
    assert listed[0].source is EvalSource.SANDBOX
    assert listed[0].files == ("f1",)
    assert listed[0].chunks == ()
    assert [q.id for q in await catalog.list_eval_queries(ds.id, limit=1, offset=1)] == ["q2"]
    assert await catalog.count_eval_queries(ds.id) == 3
    assert await catalog.count_eval_queries(other.id) == 0
    assert not await catalog.delete_eval_query(other.id, "q1")  # not that dataset's
    assert await catalog.delete_eval_query(ds.id, "q1")
    assert not await catalog.delete_eval_query(ds.id, "q1")
    assert [q.id for q in await catalog.list_eval_queries(ds.id)] == ["q2", "q3"]


async def test_the_bound_stores_all_or_nothing(catalog: SqlCatalog) -> None:
    ds = await make_dataset(catalog)
    await catalog.add_eval_queries(ds.id, [_q(1), _q(2)], max_queries=3)
    with pytest.raises(EvalSetFull):
        await catalog.add_eval_queries(ds.id, [_q(3), _q(4)], max_queries=3)
    assert await catalog.count_eval_queries(ds.id) == 2
    await catalog.add_eval_queries(ds.id, [_q(3)], max_queries=3)
    with pytest.raises(EvalSetFull):
        await catalog.add_eval_queries(ds.id, [_q(4)], max_queries=3)


async def test_concurrent_adds_cannot_both_pass_the_bound(catalog: SqlCatalog) -> None:
    ds = await make_dataset(catalog)
    results = await asyncio.gather(
        *(catalog.add_eval_queries(ds.id, [_q(n)], max_queries=3) for n in range(6)), return_exceptions=True
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 3
    assert all(isinstance(r, EvalSetFull) for r in results if isinstance(r, BaseException))
    assert await catalog.count_eval_queries(ds.id) == 3


async def test_an_unknown_dataset_is_not_found_and_a_deleted_one_takes_its_set(
    catalog: SqlCatalog, catalog_url: str
) -> None:
    with pytest.raises(NotFound):
        await catalog.add_eval_queries("nope", [_q(1)], max_queries=3)
    ds = await make_dataset(catalog)
    await catalog.add_eval_queries(ds.id, [_q(1), _q(2)], max_queries=3)
    await catalog.delete_dataset(ds.id)
    assert await table_rows(catalog_url, eval_queries) == []
