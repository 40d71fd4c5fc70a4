"""The real model: queries embedded together (padded to the longest) get the vectors they get alone;
repeated queries come from the cache."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from tests.embed_local.conftest import Make

QUERIES = [
    "capital of France",
    "how do I reset my password when the e-mail link has expired",
    "hybrid search",
    "which settings control the relevance floor of the chat proxy and of POST /search",
    "BM25",
    "what does EXTRACTION_UNUSABLE mean",
]


async def test_batched_queries_get_the_vectors_they_get_alone(make_embedder: Make) -> None:
    embedder = make_embedder(query_cache=0)
    alone = [await asyncio.to_thread(embedder.embed_query_now, q) for q in QUERIES]
    real = embedder._embed_queries
    sizes: list[int] = []

    def counted(texts: list[str]) -> list[Any]:
        sizes.append(len(texts))
        return real(texts)

    embedder._query_batcher._embed_batch = counted  # type: ignore[assignment]
    vectors = await asyncio.gather(*(embedder.embed_query(q) for q in QUERIES))
    assert sizes == [len(QUERIES)], "queued together, embedded in one call"
    for a, b in zip(alone, vectors, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


async def test_a_repeated_query_skips_the_model(make_embedder: Make) -> None:
    embedder = make_embedder(query_cache=8)
    calls: list[list[str]] = []
    real = embedder._embed_queries

    def counted(texts: list[str]) -> list[Any]:
        calls.append(texts)
        return real(texts)

    embedder._embed_queries = counted  # type: ignore[method-assign]
    embedder._query_batcher._embed_batch = counted  # type: ignore[assignment]
    first = await embedder.embed_query("hybrid search")
    again = await embedder.embed_query("hybrid search")
    now = await asyncio.to_thread(embedder.embed_query_now, "hybrid search")
    assert calls == [["hybrid search"]]
    assert first is again is now
    assert not first.flags.writeable
    assert embedder.claim_alone()
    embedder.release_alone()
