"""Request and response shapes of the remote rerank APIs (pure: no I/O).

* **cohere** — ``POST {base_url}/v1/rerank`` (``/rerank`` when the base URL already ends in
  ``/v1``), spoken by Cohere, Jina, Infinity, vLLM, LiteLLM…::

      {"model": m, "query": q, "documents": [...], "top_n": len(documents)}
      -> {"results": [{"index": i, "relevance_score": s}, ...], ...}

* **tei** — Hugging Face Text Embeddings Inference, ``POST {base_url}/rerank``::

      {"query": q, "texts": [...], "raw_scores": false, "truncate": true}
      -> [{"index": i, "score": s}, ...]

Results may come back in any order (usually best first).  :meth:`RerankWire.scores` returns
``{index: raw score}`` for one request; a document the server left out is simply absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RerankWire(Protocol):
    """The request and response shape of one rerank API."""

    @property
    def path(self) -> str:
        """Relative to the base URL, without a leading slash."""
        ...

    def request(self, query: str, documents: Sequence[str]) -> dict[str, object]: ...

    def scores(self, payload: object, count: int) -> dict[int, float]:
        """``{index: score}`` for a request of ``count`` documents; ValueError (with a reason) if bad."""
        ...


@dataclass(frozen=True, slots=True)
class CohereWire:
    """The Cohere ``/v1/rerank`` shape."""

    model: str
    path: str = "v1/rerank"

    @classmethod
    def for_base_url(cls, model: str, base_path: str) -> CohereWire:
        """Don't double ``/v1`` when the base URL already ends in it."""
        return cls(model, "rerank" if base_path.rstrip("/").endswith("/v1") else "v1/rerank")

    def request(self, query: str, documents: Sequence[str]) -> dict[str, object]:
        return {"model": self.model, "query": query, "documents": list(documents), "top_n": len(documents)}

    def scores(self, payload: object, count: int) -> dict[int, float]:
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list):
            raise ValueError("no 'results' list")
        return indexed_scores(results, "relevance_score", count)


@dataclass(frozen=True, slots=True)
class TeiWire:
    """The TEI ``/rerank`` shape; ``truncate`` lets the server cut pairs to the model's window."""

    path: str = "rerank"

    def request(self, query: str, documents: Sequence[str]) -> dict[str, object]:
        return {"query": query, "texts": list(documents), "raw_scores": False, "truncate": True}

    def scores(self, payload: object, count: int) -> dict[int, float]:
        if not isinstance(payload, list):
            raise ValueError(f"expected a list of results, got {type(payload).__name__}")
        return indexed_scores(payload, "score", count)


def indexed_scores(items: list[object], key: str, count: int) -> dict[int, float]:
    """``{index: item[key]}`` checked: integer indices in ``0..count-1``, each once, numeric scores."""
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"a result is not an object: {str(item)[:80]}")
        index, score = item.get("index"), item.get(key)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise ValueError(f"result index {index!r} is not in 0..{count - 1}")
        if index in scores:
            raise ValueError(f"result index {index} appears twice")
        if not isinstance(score, int | float) or isinstance(score, bool):
            raise ValueError(f"result {index} has no numeric {key!r}")
        scores[index] = float(score)
    return scores
