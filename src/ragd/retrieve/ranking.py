"""Ranking math: pure functions over records, no I/O, no settings.

The score scale (docs/scoring.md): every hit's ``score`` is in ``[0, 1]``, and 1.0 means "first
everywhere".  A hybrid search with convex fusion (the default) scores a hit by the weighted mean
of its dense and BM25 scores, each divided by its list's best
(:func:`ragd.store.fusion_formula.convex_fusion`); with RRF, and for one path alone (dense or
sparse), the score is reciprocal-rank fusion divided by the score of a hit ranked first by every
path used.  Raw values (cosine, BM25, the fused value) stay in ``Hit.scores``.

Qdrant's weighted RRF, measured on the engine: a path with weight ``w`` adds
``1 / (k - 1 + (rank + 1) / w)`` for a hit at 0-based ``rank`` (``w = 1``
gives the textbook ``1 / (k + rank)``); a weight of 0 adds nothing.  The engine
formula itself lives in :mod:`ragd.store.fusion_formula`, checked against both engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ragd.retrieve.relevance import reranker_relevance
from ragd.store.fusion_formula import rrf_contribution, rrf_max_score
from ragd.types import FusionMethod, FusionParams, Hit, SearchMode


def rrf_term(rank: int, k: int, weight: float = 1.0) -> float:
    """What one path contributes to a hit's fused score at 0-based ``rank``."""
    return rrf_contribution(rank + 1, k, weight)


def rrf_max(k: int, weights: Iterable[float]) -> float:
    """The fused score of a hit ranked first by every path."""
    return rrf_max_score(k, list(weights))


def normalise_scores(hits: Sequence[Hit], mode: SearchMode, fusion: FusionParams) -> list[Hit]:
    """Put ``hits`` (in engine order) on the one score scale; raw scores are kept in ``scores``."""
    if mode is SearchMode.HYBRID and fusion.method is FusionMethod.CONVEX:  # already on the scale
        return [replace(h, score=min(1.0, max(0.0, h.scores.fused or 0.0))) for h in hits]
    if mode is SearchMode.HYBRID:
        top = rrf_max(fusion.k, (fusion.dense_weight, fusion.sparse_weight))
        return [replace(h, score=min(1.0, (h.scores.fused or 0.0) / top)) for h in hits]
    best = rrf_term(0, fusion.k)
    return [replace(h, score=rrf_term(rank, fusion.k) / best) for rank, h in enumerate(hits)]


def content_key(text: str) -> str:
    """Identity of a chunk's text for de-duplication: case and white space folded."""
    return " ".join(
        text.split()
    ).casefold()  # str.split folds the same Unicode white space as \s+, 30x faster


def dedup_by_content(hits: Iterable[Hit]) -> list[Hit]:
    """Keep the first (best-ranked) hit of each distinct text."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        key = content_key(hit.content)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


def dense_understands(query_language: str | None, model_languages: Sequence[str]) -> bool:
    """Whether the dense model was trained on the query's language (unknown: assumed so)."""
    return query_language is None or query_language in model_languages or "*" in model_languages


def fusion_for_language(
    query_language: str | None,
    model_languages: Sequence[str],
    *,
    k: int,
    foreign_dense_weight: float,
    vector_weight: float = 0.5,
    method: FusionMethod = FusionMethod.RRF,
) -> FusionParams:
    """Weights for RRF: ``vector_weight`` w (0-1) to the dense list, the rest to BM25, scaled so that
    0.5 is plain RRF (weights 1 and 1): ``w_dense = 2w``, ``w_sparse = 2(1 - w)``, each path adding
    Qdrant's weighted term for its rank (module docstring; a weight of 0 adds nothing).  The dense
    weight is further multiplied by ``foreign_dense_weight`` for a query in a language the model
    wasn't trained on; an unknown language (short or mixed query) counts as understood.
    """
    dense, sparse = 2.0 * vector_weight, 2.0 * (1.0 - vector_weight)
    if not dense_understands(query_language, model_languages):
        dense *= foreign_dense_weight
    return FusionParams(k=k, dense_weight=dense, sparse_weight=sparse, method=method)


def prefetch_limit(k: int, multiplier: int, minimum: int) -> int:
    """How many candidates each path fetches before fusion."""
    return max(k * multiplier, minimum)


def result_limit(want: int, prefetch: int) -> int:
    """How many fused results to fetch first for ``want`` distinct ones: a little head-room.

    Duplicate texts are rare, and every extra result costs its payload's transfer and its
    assembly (~15 µs each); a page that de-duplicates to fewer than ``want`` is fetched again
    at the full depth (:func:`needs_deeper_page`).  Fusion quality depends on the prefetch
    depth, not on this.
    """
    return min(prefetch, want + max(2, want // 4))


def needs_deeper_page(distinct: int, want: int, fetched: int, limit: int, depth: int) -> bool:
    """Whether a page of ``limit`` results that held ``fetched`` rows, ``distinct`` of them
    distinct, may hide more distinct results below it (up to ``depth``)."""
    return distinct < want and fetched >= limit and limit < depth


def merge_best(result_lists: Iterable[Sequence[Hit]]) -> list[Hit]:
    """Merge several queries' results: each chunk once, at its best score, best first.

    Ties keep the order of first appearance (earlier queries, higher ranks first).
    """
    best: dict[str, Hit] = {}
    for hits in result_lists:
        for hit in hits:
            kept = best.get(hit.id)
            if kept is None or hit.score > kept.score:
                best[hit.id] = hit
    order = {hit_id: i for i, hit_id in enumerate(best)}
    return sorted(best.values(), key=lambda h: (-h.score, order[h.id]))


def apply_rerank(hits: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    """Re-order ``hits`` by reranker relevance; ``score`` becomes that relevance (kept in ``scores``)."""
    if len(scores) != len(hits):
        raise ValueError(f"{len(scores)} rerank scores for {len(hits)} hits")
    rescored = [
        replace(h, score=float(s), scores=replace(h.scores, rerank=float(s)), relevance=reranker_relevance(s))
        for h, s in zip(hits, scores, strict=True)
    ]
    return sorted(rescored, key=lambda h: -h.score)
