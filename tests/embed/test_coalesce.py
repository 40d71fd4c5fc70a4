"""Dynamic batching: concurrent callers share model calls, get exactly their own vectors back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from ragd.embed.base import DenseEmbedder, DenseSpec
from ragd.embed.coalesce import CoalescingEmbedder
from ragd.errors import EmbeddingFailed
from ragd.types import DenseVector


class Recording:
    """An embedder whose vector for a text is derived from the text, recording each call's size."""

    spec = DenseSpec(model="recording", dimension=4, max_tokens=128)
    tokenizer = None

    def __init__(self, fail_on: str | None = None, delay_s: float = 0.01) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.delay_s = delay_s

    async def embed_query(self, text: str) -> DenseVector:
        return (await self.embed_documents([text]))[0]

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        self.calls.append(list(texts))
        await asyncio.sleep(self.delay_s)
        if self.fail_on is not None and self.fail_on in texts:
            raise EmbeddingFailed(f"cannot embed {self.fail_on!r}")
        return [np.full(4, float(len(t)), dtype=np.float32) for t in texts]

    async def aclose(self) -> None:
        return None


async def test_concurrent_callers_share_calls_and_get_their_own_vectors() -> None:
    inner = Recording()
    embedder = CoalescingEmbedder(inner)
    batches = [[f"{'x' * (i + 1)}-{j}" for j in range(2)] for i in range(6)]
    results = await asyncio.gather(*(embedder.embed_documents(b) for b in batches))
    for texts, vectors in zip(batches, results, strict=True):
        assert [float(v[0]) for v in vectors] == [float(len(t)) for t in texts]
    assert [len(c) for c in inner.calls] == [12]  # all queued before the model was free: one call
    assert embedder.calls == 1


async def test_callers_arriving_while_the_model_runs_merge_into_the_next_call() -> None:
    inner = Recording(delay_s=0.05)
    embedder = CoalescingEmbedder(inner)
    first = asyncio.create_task(embedder.embed_documents(["a"]))
    await asyncio.sleep(0.01)  # the model is busy with "a"
    rest = [asyncio.create_task(embedder.embed_documents([f"b{i}", f"c{i}"])) for i in range(4)]
    await asyncio.gather(first, *rest)
    assert [len(c) for c in inner.calls] == [1, 8]


async def test_max_texts_bounds_a_merged_call() -> None:
    inner = Recording()
    embedder = CoalescingEmbedder(inner, max_texts=4)
    await asyncio.gather(*(embedder.embed_documents([f"t{i}a", f"t{i}b"]) for i in range(5)))
    assert [len(c) for c in inner.calls] == [4, 4, 2]


async def test_a_failure_reaches_only_the_callers_in_that_call() -> None:
    inner = Recording(fail_on="bad")
    embedder = CoalescingEmbedder(inner, max_texts=2)
    results = await asyncio.gather(
        embedder.embed_documents(["ok1"]),
        embedder.embed_documents(["bad", "x"]),
        embedder.embed_documents(["ok2", "ok3"]),
        return_exceptions=True,
    )
    assert isinstance(results[1], EmbeddingFailed)
    assert [float(v[0]) for v in results[0]] == [3.0]  # type: ignore[union-attr]
    assert [float(v[0]) for v in results[2]] == [3.0, 3.0]  # type: ignore[union-attr]


async def test_empty_input_makes_no_call_and_queries_pass_through() -> None:
    inner = Recording()
    embedder = CoalescingEmbedder(inner)
    assert await embedder.embed_documents([]) == []
    assert float((await embedder.embed_query("abc"))[0]) == 3.0
    assert inner.calls == [["abc"]]
    assert embedder.spec is inner.spec


@pytest.mark.slow
async def test_real_model_vectors_are_unchanged_by_coalescing(dense: DenseEmbedder) -> None:
    texts = [f"document number {i} about {'retrieval ' * (i % 7)}" for i in range(24)]
    direct = await dense.embed_documents(texts)
    embedder = CoalescingEmbedder(dense)
    groups = [texts[i : i + 3] for i in range(0, len(texts), 3)]
    merged = [v for vs in await asyncio.gather(*(embedder.embed_documents(g) for g in groups)) for v in vs]
    assert embedder.calls < len(groups)
    for a, b in zip(direct, merged, strict=True):
        assert float(np.dot(a, b)) > 0.99999
