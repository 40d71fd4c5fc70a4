"""The embedding ports: dense (a model) and sparse (BM25 term weights).

Query and document embeddings are different calls so prefixes can't be forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragd.chunk.base import TokenCounter
from ragd.types import DenseVector, SparseVector


@dataclass(frozen=True, slots=True)
class DenseSpec:
    """Identity of a dense model, as recorded in the index manifest."""

    model: str
    dimension: int
    max_tokens: int
    query_prefix: str = ""
    document_prefix: str = ""
    #: the local model's weights as run: "fp32" or "int8" (RAGD_EMBEDDING__PRECISION)
    precision: str = "fp32"


class DenseEmbedder(Protocol):
    """Dense vectors, L2-normalised float32.  Errors: :class:`ragd.errors.EmbeddingFailed`."""

    spec: DenseSpec

    @property
    def tokenizer(self) -> TokenCounter | None:
        """The model's tokenizer when it is local (used to size chunks), else None."""
        ...

    async def embed_query(self, text: str) -> DenseVector: ...

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class InProcessQueryEmbedder(Protocol):
    """A dense embedder whose query embedding is CPU work in this process (no I/O).

    :meth:`embed_query_now` blocks: call it only from a worker thread, never on the event
    loop.  A search then embeds its query and runs the engine query back to back on one
    worker (:meth:`ragd.store.base.InProcessSearch.search_after`): two thread hand-offs
    fewer, ~0.4 ms of a ~5 ms search on a 2-core VM.
    """

    def embed_query_now(self, text: str, *, claimed: bool = False) -> DenseVector:
        """What :meth:`DenseEmbedder.embed_query` returns, computed on the calling thread;
        ``claimed``: the caller holds a :meth:`claim_alone` claim, given back when done."""
        ...

    def claim_alone(self) -> bool:
        """Claim the model for one query alone when no other is being embedded (on the event
        loop); False: go through :meth:`DenseEmbedder.embed_query`, which batches queries."""
        ...

    def release_alone(self) -> None:
        """Give back a claim that :meth:`embed_query_now` never got to use."""
        ...


@runtime_checkable
class BatchQueryEmbedder(Protocol):
    """A dense embedder that embeds many queries at once apart from searches' queries (the model
    endpoints' ``input_type: query``), so a batch of them never delays a search."""

    async def embed_queries(self, texts: Sequence[str]) -> list[DenseVector]:
        """What :meth:`DenseEmbedder.embed_query` returns for each text, in order."""
        ...


class SparseEmbedder(Protocol):
    """BM25 term weights for a sparse vector with Qdrant's IDF modifier.

    The same function runs at index and query time.  Synchronous and cheap.
    Errors: :class:`ragd.errors.SparseEmbeddingFailed`.
    """

    name: str

    def embed_query(self, text: str) -> SparseVector: ...

    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]: ...
