"""The in-process dense embedder: a BERT sentence encoder on onnxruntime, no torch.

Inference runs off the event loop (onnxruntime releases the GIL), so it keeps serving
(``/health``).  Queries and documents use two sessions over the same graph:

- a query runs on its own thread, on a session that uses every thread and spins (latency), so it
  never waits behind an ingest;
- documents (and a model endpoint's batches of queries) go through one
  :class:`~ragd.embed.length_queue.LengthQueue` shared by every caller,
  served by *lanes*: worker threads that each take the next batch of alike lengths and run it on
  ``threads / lanes`` intra-op threads.  Concurrent calls (the files of a folder ingest) share
  batches, so padding stays ~1% and no lane idles at the end of one call while another's texts
  wait.  One single-threaded lane per core measured ~20% more chunks/s than one batch on all
  cores, and loses only its share when chunking, BM25 or a store write takes a core, where
  intra-op threads all wait at the next barrier for the one descheduled.  The lanes and the
  documents' tokenizer thread run at niceness :data:`LANE_NICE` (Linux): with nothing else to do
  they take every core, and a search's query (its own thread, normal priority) preempts them.

Concurrent queries share model calls (:mod:`ragd.embed.query_batcher`): one that finds the model
idle runs at once; those that arrive meanwhile go together in the next batch.  Recent queries'
vectors are cached.

Vectors come back in input order.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseSpec
from ragd.embed.hf_tokenizer import HfTokenizer, TokenIds
from ragd.embed.length_queue import LengthQueue, QueueClosed
from ragd.embed.model_source import ModelFolder, resolve_model
from ragd.embed.onnx_runner import Matrix, OnnxEncoder, open_encoder
from ragd.embed.quantize import calibration_texts
from ragd.embed.query_batcher import QueryBatcher, QueryCache
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import EmbeddingSettings
from ragd.types import DenseVector

logger = logging.getLogger(__name__)

A = TypeVar("A")
R = TypeVar("R")


@dataclass(eq=False, slots=True)
class _Call:
    """One ``embed_documents`` call in flight: its token ids and the vectors filled in so far."""

    token_ids: list[TokenIds]
    vectors: Matrix
    future: asyncio.Future[list[DenseVector]]
    loop: asyncio.AbstractEventLoop
    remaining: int = field(init=False)

    def __post_init__(self) -> None:
        self.remaining = len(self.token_ids)


class OnnxDenseEmbedder:
    """:class:`ragd.embed.base.DenseEmbedder` over a local model folder."""

    def __init__(
        self,
        spec: DenseSpec,
        tokenizer: HfTokenizer,
        encoder: OnnxEncoder,
        batch_size: int,
        lanes: int = 1,
        max_batch_tokens: int | None = None,
        *,
        query_batch: int = 32,
        query_cache: int = 1024,
    ) -> None:
        self.spec = spec
        self._tokenizer = tokenizer
        self._encoder = encoder
        self._batch_size = batch_size
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ragd-tokenize", initializer=_yield_to_searches
        )
        self._query_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragd-query")
        self._query_turn = threading.Lock()
        self._query_cache = QueryCache(query_cache)
        self._query_batcher = QueryBatcher(self._embed_queries, self._query_executor, max_batch=query_batch)
        self._alone = 0  # queries embedded on a search's own thread right now (embed_query_now)
        self._alone_lock = threading.Lock()
        self._queue: LengthQueue[tuple[_Call, int]] = LengthQueue(batch_size, max_batch_tokens)
        self._lanes = [
            threading.Thread(target=self._lane, name=f"ragd-lane-{index}", daemon=True)
            for index in range(max(1, lanes))
        ]
        for thread in self._lanes:
            thread.start()
        self._closed = False

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings, cache_dir: Path) -> OnnxDenseEmbedder:
        """Resolve ``settings.model``, load its tokenizer and open (building once) its ONNX graph."""
        started = time.perf_counter()
        folder = resolve_model(settings.model)
        window = _window(settings, folder)
        tokenizer = HfTokenizer.from_file(folder.tokenizer_file, window)
        threads = settings.threads or os.cpu_count() or 1
        lanes = settings.lanes or min(threads, 4)
        per_lane = max(1, threads // lanes)
        encoder = open_encoder(
            folder,
            cache_dir,
            batch_threads=per_lane,
            query_threads=threads,
            precision=settings.precision,
            calibration=lambda: tokenizer.pad(tokenizer.encode_for_model(calibration_texts())),
        )
        spec = DenseSpec(
            model=settings.model,
            dimension=folder.dimension,
            max_tokens=window,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
            precision=settings.precision,
        )
        logger.info(
            "dense model %s (%s) ready in %.2f s (dim %d, window %d, %s pooling, %d lanes x %d threads)",
            settings.model,
            settings.precision,
            time.perf_counter() - started,
            spec.dimension,
            window,
            folder.pooling.value,
            lanes,
            per_lane,
        )
        # int8 scales a call's activations by the range of the whole call: one text a call keeps each
        # text's vector its own (not its batch neighbours'), and measured no slower here
        alone = settings.precision == "int8"
        return cls(
            spec,
            tokenizer,
            encoder,
            1 if alone else settings.batch_size,
            lanes,
            settings.max_batch_tokens or None,
            query_batch=1 if alone else settings.query_batch,
            query_cache=settings.query_cache,
        )

    @property
    def tokenizer(self) -> TokenCounter:
        return self._tokenizer

    async def embed_query(self, text: str) -> DenseVector:
        """The query's vector: cached, else embedded with the queries that arrive alongside it."""
        if self._closed:
            raise EmbeddingFailed("the dense embedder is closed")
        cached = self._query_cache.get(text)
        if cached is not None:
            return cached
        return await self._query_batcher.embed(text)

    @property
    def query_batches(self) -> tuple[int, int]:
        """Model calls made for batched queries so far, and the queries they held."""
        return self._query_batcher.batches, self._query_batcher.batched_queries

    def claim_alone(self) -> bool:
        """Claim the model for one query to run alone on its search's thread, when no other query
        is being embedded or waiting (call on the event loop; :meth:`embed_query_now` with
        ``claimed=True`` gives the claim back).  Checked and taken at once: concurrent searches
        cannot all see the model idle and queue on it one by one; all but one are batched."""
        with self._alone_lock:
            if self._alone or not self._query_batcher.idle:
                return False
            self._alone += 1
            return True

    def embed_query_now(self, text: str, *, claimed: bool = False) -> DenseVector:
        """The query's vector, computed on the calling thread (a worker: this blocks).

        One model call runs at a time (its session already uses every core); a caller on another
        worker thread waits its turn.  While it runs, other queries go to the batcher."""
        try:
            if self._closed:
                raise EmbeddingFailed("the dense embedder is closed")
            cached = self._query_cache.get(text)
            if cached is not None:
                return cached
            if not claimed:
                with self._alone_lock:
                    self._alone += 1
                claimed = True
            (vector,) = self._embed_queries([text])
            return vector
        finally:
            if claimed:
                self.release_alone()

    def release_alone(self) -> None:
        """Give back a :meth:`claim_alone` claim (done by :meth:`embed_query_now`)."""
        with self._alone_lock:
            self._alone -= 1

    def _embed_queries(self, texts: list[str]) -> list[DenseVector]:
        """Queries' model call, a lone one or a batch of concurrent ones: on the query session
        (every core, never queued behind an ingest's batches), one call at a time.  A batch used
        to run on one thread of the document session, to leave the other core to the searches;
        with neither session spinning, every core measured 330 against 297 req/s served at 20
        clients (docs/benchmarks.md, "Served throughput")."""
        with self._query_turn:
            ids = self._tokenize([self.spec.query_prefix + text for text in texts])
            matrix = self._encoder.encode(self._tokenizer.pad(ids), query=True)
        return [self._query_cache.put(text, np.array(row)) for text, row in zip(texts, matrix, strict=True)]

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        return await self._embed_queued(texts, self.spec.document_prefix)

    async def embed_queries(self, texts: Sequence[str]) -> list[DenseVector]:
        """Many queries' vectors (a model endpoint's batch): through the document lanes with the
        query prefix, so they never stand in the way of a search's query (uncached)."""
        return await self._embed_queued(texts, self.spec.query_prefix)

    async def _embed_queued(self, texts: Sequence[str], prefix: str) -> list[DenseVector]:
        if not texts:
            return []
        token_ids = await self._run(self._executor, self._tokenize, [prefix + text for text in texts])
        loop = asyncio.get_running_loop()
        vectors = np.empty((len(token_ids), self.spec.dimension), dtype=np.float32)
        call = _Call(token_ids, vectors, loop.create_future(), loop)
        try:
            self._queue.put(call, [(len(ids), (call, row)) for row, ids in enumerate(token_ids)])
        except QueueClosed as exc:
            raise EmbeddingFailed("the dense embedder is closed") from exc
        try:
            return await call.future
        except asyncio.CancelledError:
            self._queue.discard(call)  # its texts still queued are not embedded for nothing
            raise

    async def aclose(self) -> None:
        """Stop taking work; waits (off the loop) for the texts already queued to be embedded."""
        self._closed = True
        self._queue.close()
        for thread in self._lanes:
            await asyncio.to_thread(thread.join)
        for executor in (self._executor, self._query_executor):
            await asyncio.to_thread(executor.shutdown, wait=True)

    def _lane(self) -> None:
        """A worker thread: embed the queue's next batch until the queue is closed and drained."""
        _yield_to_searches()
        while (batch := self._queue.take()) is not None:
            rows_per_call = Counter(call for call, _ in batch)
            try:
                inputs = self._tokenizer.pad([call.token_ids[row] for call, row in batch])
                matrix = self._encoder.encode(inputs)
            except Exception as exc:  # EmbeddingFailed; every call in the batch fails with it
                for call in rows_per_call:
                    self._queue.discard(call)
                    _notify(call, _fail, call, exc)
                continue
            for (call, row), vector in zip(batch, matrix, strict=True):
                call.vectors[row] = vector
            for call, done in rows_per_call.items():
                _notify(call, _progress, call, done)

    def _tokenize(self, texts: list[str]) -> list[TokenIds]:
        try:
            return self._tokenizer.encode_for_model(texts)
        except Exception as exc:  # tokenizers raises plain Exceptions
            raise EmbeddingFailed(f"tokenizing {len(texts)} texts failed: {exc}") from exc

    async def _run(self, executor: ThreadPoolExecutor, function: Callable[[A], R], argument: A) -> R:
        if self._closed:
            raise EmbeddingFailed("the dense embedder is closed")
        try:
            job = asyncio.get_running_loop().run_in_executor(executor, function, argument)
        except RuntimeError as exc:  # the executor was shut down under us
            raise EmbeddingFailed("the dense embedder is closed") from exc
        return await job


#: how much nicer than the process the lanes are (Linux: per thread): bulk work yields the cores to
#: searches' queries and the event loop when both want them, and takes them all when nothing else does
LANE_NICE = 10


def _yield_to_searches() -> None:
    """Make the calling thread :data:`LANE_NICE` nicer than it is, at most 19 (where the OS has
    per-thread niceness: Linux; elsewhere a no-op)."""
    with suppress(AttributeError, OSError):
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + LANE_NICE))


def _notify(call: _Call, function: Callable[..., None], *args: object) -> None:
    """Run ``function`` on the caller's event loop (it owns the future); a closed loop is gone."""
    with suppress(RuntimeError):  # the caller's loop was closed: nobody is waiting
        call.loop.call_soon_threadsafe(function, *args)


def _progress(call: _Call, done: int) -> None:
    call.remaining -= done
    if call.remaining == 0 and not call.future.done():
        call.future.set_result(list(call.vectors))


def _fail(call: _Call, exc: Exception) -> None:
    if not call.future.done():
        call.future.set_exception(exc)


def _window(settings: EmbeddingSettings, folder: ModelFolder) -> int:
    """The token window: the model's, or ``settings.max_tokens`` when set (never past its positions)."""
    if not settings.max_tokens:
        return folder.max_seq_length
    if settings.max_tokens > folder.max_positions:
        raise ConfigurationError(
            f"embedding.max_tokens={settings.max_tokens} exceeds the {folder.max_positions} positions "
            f"of {settings.model!r}",
            hint=f"set embedding.max_tokens to at most {folder.max_positions}, or 0 for the model default",
        )
    return settings.max_tokens
