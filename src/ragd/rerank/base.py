"""The reranker port: score (query, passage) pairs for relevance.

Adapters: a remote Cohere/TEI ``/v1/rerank`` endpoint and a local ONNX
cross-encoder.  Search fails open past a reranker error (the candidates keep
their retrieval order and scores), so adapters raise, never swallow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Reranker(Protocol):
    """Errors: :class:`ragd.errors.RerankFailed` (and ConfigurationError when built)."""

    #: a short identity for logs and metrics, e.g. ``remote:bge-reranker-base``
    name: str

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score in [0, 1] per passage, in the passages' order."""
        ...

    async def aclose(self) -> None: ...
