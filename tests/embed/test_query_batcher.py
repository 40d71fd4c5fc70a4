"""The query batcher: concurrent queries share model calls, a lone one runs at once; the cache."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from ragd.embed.query_batcher import QueryBatcher, QueryCache
from ragd.errors import EmbeddingFailed
from ragd.types import DenseVector


class SlowModel:
    """A blocking batch embedder: ``seconds`` per call, a vector that encodes the text's length."""

    def __init__(self, seconds: float = 0.05, fail_on: str | None = None) -> None:
        self.seconds, self.fail_on = seconds, fail_on
        self.calls: list[list[str]] = []
        self.running = 0
        self.max_running = 0
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[DenseVector]:
        with self._lock:
            self.calls.append(list(texts))
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            time.sleep(self.seconds)
            if self.fail_on in texts:
                raise EmbeddingFailed("the model broke")
            return [np.full(3, float(len(t)), dtype=np.float32) for t in texts]
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def pool() -> ThreadPoolExecutor:
    executor = ThreadPoolExecutor(max_workers=4)
    yield executor  # type: ignore[misc]
    executor.shutdown()


async def test_a_lone_query_runs_at_once_alone(pool: ThreadPoolExecutor) -> None:
    model = SlowModel(0.01)
    batcher = QueryBatcher(model, pool)
    assert batcher.idle
    vector = await batcher.embed("abc")
    assert vector.tolist() == [3.0, 3.0, 3.0]
    assert model.calls == [["abc"]]
    assert batcher.idle


async def test_queries_arriving_during_a_call_share_the_next_one(pool: ThreadPoolExecutor) -> None:
    model = SlowModel(0.05)
    batcher = QueryBatcher(model, pool, max_batch=8)
    first = asyncio.ensure_future(batcher.embed("q"))
    await asyncio.sleep(0.01)  # the first call is running
    texts = [f"query {'x' * i}" for i in range(12)]
    texts.insert(1, texts[0])  # the same text twice in one batch: embedded once
    rest = await asyncio.gather(*(batcher.embed(t) for t in texts))
    assert (await first).tolist() == [1.0] * 3
    for text, vector in zip(texts, rest, strict=True):
        assert vector.tolist() == [float(len(text))] * 3
    assert [len(c) for c in model.calls] == [1, 7, 5]  # 13 waiting: 8 (one text twice), then 5
    assert model.max_running == 1, "one model call at a time"
    assert (batcher.batches, batcher.batched_queries) == (3, 14)


async def test_a_failed_call_fails_its_queries_only(pool: ThreadPoolExecutor) -> None:
    model = SlowModel(0.05, fail_on="bad")
    batcher = QueryBatcher(model, pool)
    first = asyncio.ensure_future(batcher.embed("ok"))
    await asyncio.sleep(0.01)
    doomed = [asyncio.ensure_future(batcher.embed(t)) for t in ("bad", "fine")]
    assert (await first).tolist() == [2.0] * 3
    for future in doomed:
        with pytest.raises(EmbeddingFailed):
            await future
    assert (await batcher.embed("again")).tolist() == [5.0] * 3
    assert batcher.idle


async def test_a_cancelled_query_is_not_embedded(pool: ThreadPoolExecutor) -> None:
    model = SlowModel(0.05)
    batcher = QueryBatcher(model, pool)
    first = asyncio.ensure_future(batcher.embed("a"))
    await asyncio.sleep(0.01)
    gone = asyncio.ensure_future(batcher.embed("gone"))
    kept = asyncio.ensure_future(batcher.embed("kept"))
    await asyncio.sleep(0)
    gone.cancel()
    await first
    assert (await kept).tolist() == [4.0] * 3
    assert model.calls == [["a"], ["kept"]]


def test_the_cache_keeps_the_most_recent_and_hands_out_read_only_vectors() -> None:
    cache = QueryCache(2)
    for text in ("a", "b"):
        cache.put(text, np.zeros(2, dtype=np.float32))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", np.ones(2, dtype=np.float32))
    assert cache.get("b") is None
    assert cache.get("a") is not None
    vector = cache.get("c")
    assert vector is not None
    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 5.0
    off = QueryCache(0)
    off.put("x", np.zeros(2, dtype=np.float32))
    assert off.get("x") is None
