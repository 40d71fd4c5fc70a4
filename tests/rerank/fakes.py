"""A deterministic stand-in for a rerank model, served in the real Cohere and TEI wire formats."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from tests.support.scripted_http import RecordedRequest, Reply


def relevance(query: str, document: str) -> float:
    """A pseudo-random score in (0, 1) that depends only on the pair."""
    digest = hashlib.sha256(f"{query}\x00{document}".encode()).digest()
    return (int.from_bytes(digest[:4], "little") + 1) / (2**32 + 2)


def cohere_body(query: str, documents: Sequence[str]) -> dict[str, object]:
    """A ``/v1/rerank`` response, best first (so not in input order), as Cohere sends it."""
    best_first = sorted(range(len(documents)), key=lambda i: -relevance(query, documents[i]))
    results = [{"index": i, "relevance_score": relevance(query, documents[i])} for i in best_first]
    return {"id": "scripted", "results": results, "meta": {"billed_units": {"search_units": 1}}}


def tei_body(query: str, texts: Sequence[str]) -> list[dict[str, object]]:
    """A TEI ``/rerank`` response, best first."""
    best_first = sorted(range(len(texts)), key=lambda i: -relevance(query, texts[i]))
    return [{"index": i, "score": relevance(query, texts[i])} for i in best_first]


def cohere_handler() -> Callable[[RecordedRequest], Reply]:
    return lambda request: Reply.json(cohere_body(request.json["query"], request.json["documents"]))


def tei_handler() -> Callable[[RecordedRequest], Reply]:
    return lambda request: Reply.json(tei_body(request.json["query"], request.json["texts"]))
