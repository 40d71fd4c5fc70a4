"""Dynamic batching for remote embedders: concurrent ``embed_documents`` calls share requests.

Ingesting a folder embeds each file's few chunks separately, and many tiny
requests cost more per text than a few full ones.  :class:`CoalescingEmbedder`
queues concurrent callers' texts and, each time the previous request is done,
sends everything queued (up to ``max_texts``) as one call — so with several
files in flight the provider gets full requests back to back, and a lone
caller waits for nothing extra.  (The local model does this per batch itself:
:mod:`ragd.embed.length_queue`.)

Failures stay per group: every caller whose texts were in a failed call gets
that call's exception; callers in other calls are unaffected.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseEmbedder, DenseSpec
from ragd.types import DenseVector


@dataclass(slots=True)
class _Request:
    texts: list[str]
    future: asyncio.Future[list[DenseVector]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class CoalescingEmbedder:
    """A :class:`DenseEmbedder` that merges concurrent document calls into shared batches."""

    def __init__(self, inner: DenseEmbedder, *, max_texts: int = 256) -> None:
        self._inner = inner
        self._max_texts = max_texts
        self._queue: deque[_Request] = deque()
        self._worker: asyncio.Task[None] | None = None
        self.spec: DenseSpec = inner.spec
        self.calls = 0  # inner calls made (observable for tests and benchmarks)

    @property
    def tokenizer(self) -> TokenCounter | None:
        return self._inner.tokenizer

    async def embed_query(self, text: str) -> DenseVector:
        return await self._inner.embed_query(text)

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        if not texts:
            return []
        request = _Request(list(texts))
        self._queue.append(request)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain(), name="ragd-embed-coalesce")
        return await asyncio.shield(request.future)

    async def _drain(self) -> None:
        while self._queue:
            group = self._take()
            texts = [t for r in group for t in r.texts]
            self.calls += 1
            try:
                vectors = await self._inner.embed_documents(texts)
            except asyncio.CancelledError:
                for r in (*group, *self._queue):
                    r.future.cancel()
                raise
            except Exception as exc:  # every caller in the group sees the failure
                for r in group:
                    if not r.future.done():
                        r.future.set_exception(exc)
                continue
            start = 0
            for r in group:
                if not r.future.done():
                    r.future.set_result(vectors[start : start + len(r.texts)])
                start += len(r.texts)

    def _take(self) -> list[_Request]:
        """Queued requests, oldest first, up to ``max_texts`` texts (always at least one request)."""
        group = [self._queue.popleft()]
        size = len(group[0].texts)
        while self._queue and size + len(self._queue[0].texts) <= self._max_texts:
            request = self._queue.popleft()
            group.append(request)
            size += len(request.texts)
        return group

    async def aclose(self) -> None:
        if self._worker is not None:
            await asyncio.gather(self._worker, return_exceptions=True)
        await self._inner.aclose()
