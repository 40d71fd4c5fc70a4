"""The in-process dense embedder: a BERT sentence encoder on onnxruntime, no torch.

Inference runs in one dedicated worker thread (onnxruntime releases the GIL), one batch per
job, so the event loop keeps serving (``/health``) and a query can slip in between the batches
of a long ingest.  Documents are batched shortest-first to avoid paying for padding, then
returned in input order.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseSpec
from ragd.embed.hf_tokenizer import HfTokenizer, TokenIds
from ragd.embed.model_source import ModelFolder, resolve_model
from ragd.embed.onnx_runner import Matrix, OnnxEncoder, open_encoder
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import EmbeddingSettings
from ragd.types import DenseVector

logger = logging.getLogger(__name__)

A = TypeVar("A")
R = TypeVar("R")


class OnnxDenseEmbedder:
    """:class:`ragd.embed.base.DenseEmbedder` over a local model folder."""

    def __init__(
        self, spec: DenseSpec, tokenizer: HfTokenizer, encoder: OnnxEncoder, batch_size: int
    ) -> None:
        self.spec = spec
        self._tokenizer = tokenizer
        self._encoder = encoder
        self._batch_size = batch_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragd-embed")
        self._closed = False

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings, cache_dir: Path) -> OnnxDenseEmbedder:
        """Resolve ``settings.model``, load its tokenizer and open (building once) its ONNX graph."""
        started = time.perf_counter()
        folder = resolve_model(settings.model)
        window = _window(settings, folder)
        tokenizer = HfTokenizer.from_file(folder.tokenizer_file, window)
        encoder = open_encoder(folder, cache_dir, settings.threads or os.cpu_count() or 1)
        spec = DenseSpec(
            model=settings.model,
            dimension=folder.dimension,
            max_tokens=window,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
        )
        logger.info(
            "dense model %s ready in %.2f s (dim %d, window %d, %s pooling)",
            settings.model,
            time.perf_counter() - started,
            spec.dimension,
            window,
            folder.pooling.value,
        )
        return cls(spec, tokenizer, encoder, settings.batch_size)

    @property
    def tokenizer(self) -> TokenCounter:
        return self._tokenizer

    async def embed_query(self, text: str) -> DenseVector:
        (vector,) = await self._run(self._embed_now, [self.spec.query_prefix + text])
        return vector

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        if not texts:
            return []
        prefix = self.spec.document_prefix
        token_ids = await self._run(self._tokenize, [prefix + text for text in texts])
        order = sorted(range(len(token_ids)), key=lambda index: len(token_ids[index]))
        vectors: dict[int, DenseVector] = {}
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            matrix = await self._run(self._encode, [token_ids[row] for row in rows])
            for row, vector in zip(rows, matrix, strict=True):
                vectors[row] = vector.copy()
        return [vectors[row] for row in range(len(texts))]

    async def aclose(self) -> None:
        """Stop taking work; waits (off the loop) for the batches already queued to finish."""
        self._closed = True
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    def _embed_now(self, texts: list[str]) -> list[DenseVector]:
        return list(self._encode(self._tokenize(texts)))

    def _tokenize(self, texts: list[str]) -> list[TokenIds]:
        try:
            return self._tokenizer.encode_for_model(texts)
        except Exception as exc:  # tokenizers raises plain Exceptions
            raise EmbeddingFailed(f"tokenizing {len(texts)} texts failed: {exc}") from exc

    def _encode(self, token_ids: list[TokenIds]) -> Matrix:
        return self._encoder.encode(self._tokenizer.pad(token_ids))

    async def _run(self, function: Callable[[A], R], argument: A) -> R:
        if self._closed:
            raise EmbeddingFailed("the dense embedder is closed")
        try:
            job = asyncio.get_running_loop().run_in_executor(self._executor, function, argument)
        except RuntimeError as exc:  # the executor was shut down under us
            raise EmbeddingFailed("the dense embedder is closed") from exc
        return await job


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
