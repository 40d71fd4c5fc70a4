"""Concurrent queries embedded together (dynamic micro-batching), and recent queries remembered.

Embedding a query costs ~3 ms of model time on a 2-core VM, most of it fixed per call: a batch of
20 short queries costs a few times one.  So concurrent searches share model calls:

* a query that arrives while the model is idle runs at once, alone: no timer, no added latency;
* queries that arrive while a batch runs queue up and go together in the next one (at most
  ``max_batch``), as embedding servers batch their requests; when more wait than a batch holds,
  they are taken key by key (:class:`~ragd.embed.fair_queue.FairQueue`, the key the caller works
  for), so one key's many queries do not push another key's behind them.

A query's vector depends on its text and the model only, so the last ``cache_size`` queries'
vectors are kept (least recently used out): a repeated query (a retry, the same question asked in a
chat and a search) skips the model.  Vectors handed out are read-only, shared by every caller.

The batcher serves the event loop that first used it; a call from another loop (a test's) runs
alone, off that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

from ragd.embed.fair_queue import FairQueue, work_key
from ragd.types import DenseVector

EmbedBatch = Callable[[list[str]], Sequence[DenseVector]]


class QueryCache:
    """The vectors of the last ``size`` query texts (thread-safe; size 0 keeps nothing)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[str, DenseVector] = OrderedDict()

    def get(self, text: str) -> DenseVector | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
            return vector

    def put(self, text: str, vector: DenseVector) -> DenseVector:
        """Remember ``vector`` (made read-only) and return it."""
        vector.setflags(write=False)
        if self._size <= 0:
            return vector
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector


class QueryBatcher:
    """Embeds queries through ``embed_batch`` (a blocking call run on ``executor``), batched."""

    def __init__(self, embed_batch: EmbedBatch, executor: Executor, *, max_batch: int = 32) -> None:
        self._embed_batch = embed_batch
        self._executor = executor
        self._max_batch = max(1, max_batch)
        self._pending: FairQueue[tuple[str, asyncio.Future[DenseVector]]] = FairQueue()
        self._drain_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: batches run so far and the queries they held (for tests and metrics)
        self.batches = 0
        self.batched_queries = 0

    @property
    def idle(self) -> bool:
        return self._drain_task is None and not self._pending

    async def embed(self, text: str) -> DenseVector:
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        if loop is not self._loop:
            (vector,) = await loop.run_in_executor(self._executor, self._embed_batch, [text])
            return vector
        future: asyncio.Future[DenseVector] = loop.create_future()
        self._pending.put(work_key(), (text, future))
        if self._drain_task is None:
            self._drain_task = loop.create_task(self._drain(), name="ragd-query-batches")
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch = [(t, f) for t, f in self._pending.take_many(self._max_batch) if not f.done()]
                if not batch:
                    continue
                texts = list(dict.fromkeys(text for text, _ in batch))
                try:
                    vectors = await loop.run_in_executor(self._executor, self._embed_batch, texts)
                except Exception as exc:  # every query of the batch fails with it
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.batches += 1
                self.batched_queries += len(batch)
                by_text = dict(zip(texts, vectors, strict=True))
                for text, future in batch:
                    if not future.done():
                        future.set_result(by_text[text])
        finally:
            self._drain_task = None
