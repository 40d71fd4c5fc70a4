"""A search's own ``hnsw_ef`` (issue 34 §2, seed 001) reaches the embedded engine's search params.

The shard is wrapped by a recorder that passes every call on to the real Qdrant Edge shard: the
test sees the ``SearchParams`` the engine was given, and the engine's own answer to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragd.store.edge_store import EdgeStore
from ragd.store.tuning import IndexTuning
from ragd.types import PointFilter, SearchMode, StoreQuery

from .data import corpus, manifest


class RecordingShard:
    """The real shard, with the ``params`` of every query it was sent recorded."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self.params: list[Any] = []

    def _record(self, request: Any) -> None:
        self.params.append(request.params)
        for prefetch in request.prefetches or ():
            self._record(prefetch)

    def query(self, request: Any) -> Any:
        self._record(request)
        return self.shard.query(request)

    def query_batch(self, batch: Any) -> Any:
        for request in batch.queries:
            self._record(request)
        return self.shard.query_batch(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    store = EdgeStore(tmp_path, tuning=IndexTuning(hnsw_ef=40))
    await store.open(manifest())
    await store.upsert(corpus().chunks)
    yield store
    await store.close()


def _dense_efs(recorder: RecordingShard) -> list[int | None]:
    return [p.hnsw_ef for p in recorder.params if p is not None]


@pytest.mark.parametrize("mode", [SearchMode.DENSE, SearchMode.HYBRID])
async def test_a_query_hnsw_ef_reaches_the_engine(store: Any, mode: SearchMode) -> None:
    data = corpus()
    target = data.chunks[5]
    recorder = RecordingShard(store._shard)
    store._shard = recorder
    sparse = target.sparse if mode is SearchMode.HYBRID else None
    flt = PointFilter(collection_names=(str(target.meta["collection_name"]),))
    hits = await store.search(StoreQuery(flt, 3, dense=target.dense, sparse=sparse, hnsw_ef=512))
    assert hits[0].id == target.id  # the engine took the params and answered
    assert _dense_efs(recorder)  # the dense search (alone, or the hybrid's dense prefetch) had params
    assert set(_dense_efs(recorder)) == {512}
    recorder.params.clear()
    await store.search(StoreQuery(flt, 3, dense=target.dense, sparse=sparse))  # none: the setting
    assert set(_dense_efs(recorder)) == {40}
    store._shard = recorder.shard
