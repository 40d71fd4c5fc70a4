"""The search use-case over a real Edge store and the real model: paging past duplicate texts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest

from ragd.embed.base import DenseEmbedder, InProcessQueryEmbedder
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.retrieve.ranking import content_key
from ragd.retrieve.search import Retriever, SearchRequest
from ragd.settings import RetrievalSettings
from ragd.store.base import InProcessSearch
from ragd.store.edge_store import EdgeStore
from ragd.types import DenseVector, Hit, IndexManifest, PointFilter, SearchMode, StoredChunk, StoreQuery

COPIES = 30  # one text stored under many ids: more than any first page holds
DUPLICATE = "Qdrant keeps the sparse vectors of every chunk next to its dense vector."
DISTINCT = [
    f"Qdrant chunk {i}: sparse and dense vectors, note number {i} about the index." for i in range(12)
]


class CountingStore:
    """The real store, recording each search's limit and which entry point ran it."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner, self.limits, self.calls = inner, list[int](), list[str]()
        self.queries: list[StoreQuery] = []

    async def search(self, query: StoreQuery) -> list[Hit]:
        self.queries.append(query)
        self.limits.append(query.limit)
        self.calls.append("search")
        return await self.inner.search(query)

    async def count(self, flt: PointFilter) -> int:
        return await self.inner.count(flt)

    async def search_after(self, prepare: Callable[[], StoreQuery]) -> tuple[StoreQuery, list[Hit]]:
        query, hits = await self.inner.search_after(prepare)
        self.queries.append(query)
        self.limits.append(query.limit)
        self.calls.append("search_after")
        return query, hits


class RemoteLike:
    """The real model behind only the async port: what a remote embedder offers."""

    def __init__(self, inner: DenseEmbedder) -> None:
        self.inner, self.spec = inner, inner.spec

    async def embed_query(self, text: str) -> DenseVector:
        return await self.inner.embed_query(text)


@pytest.fixture
async def store(tmp_path: Path, dense: DenseEmbedder) -> AsyncIterator[EdgeStore]:
    sparse = Bm25SparseEmbedder("english")
    edge = EdgeStore(tmp_path / "data")
    await edge.open(IndexManifest(dense.spec.model, dense.spec.dimension, "", "", sparse.name, "test"))
    texts = [DUPLICATE] * COPIES + DISTINCT
    vectors = await dense.embed_documents(texts)
    await edge.upsert(
        [
            StoredChunk(
                id=f"00000000-0000-0000-0000-{i:012d}",
                content=text,
                meta={"collection_name": "kb", "file_id": f"f{i}"},
                dense=vector,
                sparse=sparse.embed_documents([text])[0],
            )
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ]
    )
    yield edge
    await edge.close()


def counted_retriever(store: EdgeStore, dense: DenseEmbedder) -> tuple[CountingStore, Retriever]:
    """A default retriever over ``store`` that records every store call it makes."""
    counting = CountingStore(store)
    retriever = Retriever(counting, dense, Bm25SparseEmbedder("english"), RetrievalSettings(), ("en",))  # type: ignore[arg-type]
    return counting, retriever


@pytest.mark.parametrize("mode", list(SearchMode))
async def test_duplicates_never_cost_the_caller_results(
    store: EdgeStore, dense: DenseEmbedder, mode: SearchMode
) -> None:
    counting, retriever = counted_retriever(store, dense)
    query = "sparse vectors of every chunk next to the dense vector"

    hits = await retriever.search(SearchRequest(query, ("kb",), k=10, mode=mode))

    keys = [content_key(h.content) for h in hits]
    assert len(hits) == 10
    assert len(set(keys)) == 10
    assert content_key(DUPLICATE) in keys
    assert len(counting.limits) == 2
    assert counting.limits[0] < counting.limits[1]
    assert counting.calls[0] == ("search" if mode is SearchMode.SPARSE else "search_after")
    # the same answer as de-duplicating the whole fused list at once
    full = await store.search(
        StoreQuery(
            PointFilter(collection_names=("kb",)),
            counting.limits[1],
            dense=await dense.embed_query(query) if mode is not SearchMode.SPARSE else None,
            sparse=Bm25SparseEmbedder("english").embed_query(query) if mode is not SearchMode.DENSE else None,
            prefetch_limit=counting.limits[1],
            fusion=counting.queries[-1].fusion,
            explain=False,
        )
    )
    best: dict[str, float] = {}  # each distinct text at its best engine score
    for hit in full:
        best.setdefault(content_key(hit.content), hit.score)
    cutoff = list(best.values())[9]
    # equal fused scores (ties) come back in either order: the tenth place may go to any of them
    assert {key for key, score in best.items() if score > cutoff} <= set(keys)
    assert set(keys) <= {key for key, score in best.items() if score >= cutoff}


async def test_local_model_and_embedded_engine_search_on_one_thread(
    store: EdgeStore, dense: DenseEmbedder
) -> None:
    """The default wiring takes the one-hand-off path; it answers exactly like the generic one."""
    assert isinstance(dense, InProcessQueryEmbedder)
    assert isinstance(store, InProcessSearch)
    query = "sparse and dense vectors note number 7"
    for mode in (SearchMode.DENSE, SearchMode.HYBRID):
        chained, generic = CountingStore(store), CountingStore(store)
        sparse, settings = Bm25SparseEmbedder("english"), RetrievalSettings()
        fast = Retriever(chained, dense, sparse, settings, ("en",))  # type: ignore[arg-type]
        slow = Retriever(generic, RemoteLike(dense), sparse, settings, ("en",))  # type: ignore[arg-type]

        fast_hits = await fast.search(SearchRequest(query, ("kb",), k=5, mode=mode))
        slow_hits = await slow.search(SearchRequest(query, ("kb",), k=5, mode=mode))

        assert chained.calls == ["search_after"]
        assert generic.calls == ["search"]
        # equal RRF scores (ties) may come back in either order: compare ranks' scores, and the set
        assert [h.score for h in fast_hits] == [h.score for h in slow_hits]
        assert {(h.id, h.score) for h in fast_hits} == {(h.id, h.score) for h in slow_hits}


async def test_embed_query_now_is_embed_query(dense: DenseEmbedder) -> None:
    assert isinstance(dense, InProcessQueryEmbedder)
    text = "how are sparse vectors weighted"
    now = await asyncio.to_thread(dense.embed_query_now, text)
    assert np.array_equal(now, await dense.embed_query(text))


async def test_a_page_without_duplicates_is_one_search(store: EdgeStore, dense: DenseEmbedder) -> None:
    counting, retriever = counted_retriever(store, dense)

    hits = await retriever.search(SearchRequest("note number 3 about the index", ("kb",), k=3))

    assert len(hits) == 3
    assert counting.limits == [5]
