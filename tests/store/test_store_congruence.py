"""Qdrant Edge answers like the reference (qdrant-client local mode, which mirrors the server API).

Same data, same queries: results must agree as ordered groups of tied scores
(engines may order ties differently), with the same scores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import numpy as np
import pytest
import pytest_asyncio

from ragd.store.edge_store import EdgeStore
from ragd.store.qdrant_store import QdrantStore
from ragd.types import FusionParams, Hit, PointFilter, StoreQuery

from .data import corpus, manifest, query_near, random_sparse, tie_groups

FILTERS = (
    PointFilter(),
    PointFilter(collection_names=("kb-alpha",)),
    PointFilter(collection_names=("kb-beta", "file-gamma")),
    PointFilter(file_id="kb-alpha-file-2"),
)


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pair(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[EdgeStore, QdrantStore]]:
    data = corpus(seed=21, files_per_collection=4, chunks_per_file=10)
    edge = EdgeStore(tmp_path_factory.mktemp("congruence"), "ingestion_files")
    client = QdrantStore(url=":memory:")
    for s in (edge, client):
        await s.open(manifest())
        await s.upsert(data.chunks)
    yield edge, client
    for s in (edge, client):
        await s.close()


def _queries() -> list[StoreQuery]:
    data = corpus(seed=21, files_per_collection=4, chunks_per_file=10)
    rng = np.random.default_rng(5)
    out = []
    for i in range(8):
        dense = query_near(rng, data.centers[i % len(data.centers)])
        sparse = random_sparse(rng, terms=60)  # many terms: overlaps several chunks
        fusion = FusionParams(k=(2, 60)[i % 2], dense_weight=(1.0, 0.25, 1.0, 2.0)[i % 4])
        base = StoreQuery(filter=FILTERS[i % len(FILTERS)], limit=10, prefetch_limit=25, fusion=fusion)
        out += [
            dataclasses.replace(base, dense=dense),
            dataclasses.replace(base, sparse=sparse),
            dataclasses.replace(base, dense=dense, sparse=sparse),
        ]
    return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-5 * max(1.0, abs(b))


def _comparable(hits: list[Hit]) -> list[tuple[float, frozenset[str]]]:
    groups = tie_groups(hits)
    return [*groups[:-1], (groups[-1][0], frozenset())] if groups else []  # the last tie group may be cut


@pytest.mark.parametrize(
    "query",
    _queries(),
    ids=lambda q: f"{'d' if q.dense is not None else ''}{'s' if q.sparse is not None else ''}",
)
async def test_edge_and_reference_return_the_same_ranked_hits(
    pair: tuple[EdgeStore, QdrantStore], query: StoreQuery
) -> None:
    edge, client = pair
    got, want = await edge.search(query), await client.search(query)
    assert got, "the query should match something"
    mine, theirs = _comparable(got), _comparable(want)
    assert [ids for _, ids in mine] == [ids for _, ids in theirs]
    assert [score for score, _ in mine] == pytest.approx([score for score, _ in theirs], rel=1e-5)
    by_id = {h.id: h for h in want}
    for hit in got:
        if hit.id in by_id:
            ref = by_id[hit.id]
            assert _same(hit.scores.dense, ref.scores.dense)
            assert _same(hit.scores.sparse, ref.scores.sparse)
            assert _same(hit.scores.fused, ref.scores.fused)
            assert hit.meta == ref.meta
            assert hit.content == ref.content


async def test_counts_and_facets_agree(pair: tuple[EdgeStore, QdrantStore]) -> None:
    edge, client = pair
    for flt in FILTERS:
        assert await edge.count(flt) == await client.count(flt)
        for key in ("meta.collection_name", "meta.file_id", "meta.collection_type"):
            assert await edge.facet(key, flt) == await client.facet(key, flt)
