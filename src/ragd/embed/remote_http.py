"""Shared plumbing for remote dense embedders: batching, vector checks, the embedder itself.

The HTTP client, retries and backoff live in :mod:`ragd.remote_json` (shared with the
remote reranker); here they are set up so that every failure is an
:class:`~ragd.errors.EmbeddingFailed` naming the endpoint and the status, with hints
that point at the ``embedding.*`` settings.  The API key never appears in a message.

:class:`RemoteEmbedder` implements :class:`~ragd.embed.base.DenseEmbedder`
over any :class:`EmbeddingWire` (the request/response shape of one API);
``openai_compat`` and ``tei`` supply the wires.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, Self

import numpy as np

from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseSpec
from ragd.embed.hf_tokenizer import HfTokenizer
from ragd.errors import EmbeddingFailed
from ragd.remote_json import (
    Backoff,
    ErrorTerms,
    RemoteJsonClient,
    batched,
    display_url,
    parse_retry_after,
)
from ragd.settings import EmbeddingSettings
from ragd.types import DenseVector

#: The token window of a remote model that neither ``embedding.max_tokens`` nor the server names:
#: 512, the window of the BERT family most embedding models belong to (MiniLM, bge, e5, gte).
DEFAULT_REMOTE_WINDOW = 512

logger = logging.getLogger(__name__)

__all__ = [
    "EMBEDDING_ERRORS",
    "Backoff",
    "EmbeddingWire",
    "RemoteEmbedder",
    "RemoteJsonClient",
    "batched",
    "display_url",
    "fetch_vectors",
    "parse_retry_after",
    "probe_dimension",
    "unit_vectors",
]

EMBEDDING_ERRORS = ErrorTerms(
    group="embedding",
    error=EmbeddingFailed,
    hints={
        400: "the server rejected the request; check embedding.model and the input size",
        401: "check embedding.api_key",
        403: "check embedding.api_key and its permissions",
        404: "check embedding.base_url (OpenAI-compatible servers usually end in /v1) and embedding.model",
        413: "lower embedding.batch_size",
    },
)


def unit_vectors(
    rows: Sequence[object], *, count: int, dimension: int | None, source: str
) -> list[DenseVector]:
    """Check ``rows`` (one vector per text) and L2-normalise them to float32."""
    if len(rows) != count:
        raise EmbeddingFailed(f"{source} returned {len(rows)} vector(s) for {count} text(s)")
    try:
        matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        sizes = sorted({len(r) for r in rows if isinstance(r, list)})
        raise EmbeddingFailed(f"{source} returned malformed vectors (lengths {sizes})") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingFailed(f"{source} returned malformed vectors (shape {matrix.shape})")
    if dimension is not None and matrix.shape[1] != dimension:
        raise EmbeddingFailed(
            f"{source} returned {matrix.shape[1]}-dimensional vectors, expected {dimension}",
            hint="set embedding.dimension to the model's size (or leave it unset to probe it)",
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbeddingFailed(f"{source} returned a zero or non-finite vector")
    return list(matrix / norms)


class EmbeddingWire(Protocol):
    """The request and response shape of one embeddings API (pure: no I/O)."""

    @property
    def path(self) -> str:
        """Relative to the base URL, without a leading slash."""
        ...

    def request(self, texts: Sequence[str]) -> dict[str, object]: ...

    def vectors(self, payload: object) -> list[object]:
        """One raw vector per input text, in input order; ValueError (with a reason) if malformed."""
        ...

    async def window(self, client: RemoteJsonClient) -> int | None:
        """The model's token window as the server tells it, or None when it does not."""
        ...


class RemoteEmbedder:
    """A :class:`~ragd.embed.base.DenseEmbedder` over HTTP.  Build with a subclass's ``create``."""

    def __init__(
        self,
        client: RemoteJsonClient,
        wire: EmbeddingWire,
        spec: DenseSpec,
        batch_size: int,
        tokenizer: TokenCounter | None = None,
    ) -> None:
        self.spec = spec
        self._client = client
        self._wire = wire
        self._batch_size = batch_size
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> TokenCounter | None:
        """``embedding.tokenizer`` when given (exact chunk sizes); else None: sizes are estimated."""
        return self._tokenizer

    async def embed_query(self, text: str) -> DenseVector:
        texts = [self.spec.query_prefix + text]
        (vector,) = await fetch_vectors(self._client, self._wire, texts, self.spec.dimension)
        return vector

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        prefixed = [self.spec.document_prefix + t for t in texts]
        vectors: list[DenseVector] = []
        for batch in batched(prefixed, self._batch_size):
            vectors.extend(await fetch_vectors(self._client, self._wire, batch, self.spec.dimension))
        return vectors

    async def aclose(self) -> None:
        await self._client.aclose()

    @classmethod
    async def _connect(
        cls,
        settings: EmbeddingSettings,
        wire: EmbeddingWire,
        *,
        name: str,
        base_url: str,
        backoff: Backoff | None,
    ) -> Self:
        """Open a client, learn the dimension (``settings.dimension`` or one probe request), build."""
        client = RemoteJsonClient(
            base_url,
            api_key=settings.api_key,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            terms=EMBEDDING_ERRORS,
            backoff=backoff,
        )
        try:
            dimension = settings.dimension or await probe_dimension(client, wire)
            window = settings.max_tokens or await wire.window(client) or DEFAULT_REMOTE_WINDOW
            tokenizer = HfTokenizer.from_file(settings.tokenizer, window) if settings.tokenizer else None
        except BaseException:
            await client.aclose()
            raise
        spec = DenseSpec(
            model=name,
            dimension=dimension,
            max_tokens=window,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
        )
        return cls(client, wire, spec, settings.batch_size, tokenizer)


async def fetch_vectors(
    client: RemoteJsonClient, wire: EmbeddingWire, texts: Sequence[str], dimension: int | None
) -> list[DenseVector]:
    """One request for ``texts``; checked, L2-normalised vectors in input order."""
    payload = await client.post_json(wire.path, wire.request(texts))
    source = client.endpoint(wire.path)
    try:
        rows = wire.vectors(payload)
    except ValueError as exc:
        raise EmbeddingFailed(f"{source} returned an unexpected response: {exc}") from exc
    return unit_vectors(rows, count=len(texts), dimension=dimension, source=source)


async def probe_dimension(client: RemoteJsonClient, wire: EmbeddingWire) -> int:
    """The server's vector size, from embedding one short text."""
    (vector,) = await fetch_vectors(client, wire, ["dimension probe"], None)
    logger.info(
        "embedding server at %s returns %d-dimensional vectors", client.endpoint(wire.path), len(vector)
    )
    return len(vector)
