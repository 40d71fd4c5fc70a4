"""A hit's relevance on an absolute scale: the calibrated probability that it answers the query.

``Hit.score`` says where a hit *ranked* (reciprocal-rank fusion, normalised); a lone
irrelevant chunk still ranks first.  ``Hit.relevance`` says how relevant it *is*,
whatever the other hits: a logistic model over the evidence every hit carries —

* ``d``: the dense cosine of query and chunk (when the dense model understands the
  query's language and the chunk was among the dense candidates, else 0 and ``has_d = 0``);
* ``s``: ``log(1 + BM25 / query terms)``, the BM25 score (Qdrant's IDF) per distinct
  query term (when the chunk was among the sparse candidates, else 0 and ``has_s = 0``);

``relevance = σ(w0 + w1·d + w2·s + w3·has_d + w4·has_s)``, with the weights fitted on
SciFact's *train* qrels by ``bench/relevance_fit.py`` (top-10 hybrid hits of 809 train
queries, relevant = judged relevant; the test split is never used).  When a reranker ran,
its score is the relevance instead (a probability already, or a logit squashed by σ).

Pure functions: ranking order is not touched here (docs/scoring.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ragd.types import ComponentScores, Hit

#: (w0 bias, w1 dense cosine, w2 BM25 per term, w3 has dense, w4 has sparse), from bench/relevance_fit.py
WEIGHTS: tuple[float, float, float, float, float] = (-12.6818, 27.3620, 4.8581, -0.6324, -2.6287)


def features(scores: ComponentScores, query_terms: int, *, dense_trusted: bool) -> tuple[float, ...]:
    """The model's inputs for one hit (see the module docstring)."""
    has_dense = dense_trusted and scores.dense is not None
    has_sparse = scores.sparse is not None
    dense = float(scores.dense) if has_dense and scores.dense is not None else 0.0
    per_term = float(scores.sparse or 0.0) / max(1, query_terms) if has_sparse else 0.0
    return (dense, math.log1p(max(0.0, per_term)), float(has_dense), float(has_sparse))


def relevance(
    scores: ComponentScores,
    query_terms: int,
    *,
    dense_trusted: bool,
    weights: Sequence[float] = WEIGHTS,
) -> float:
    """The calibrated relevance in [0, 1] of a hit with these component scores."""
    if scores.rerank is not None:
        return reranker_relevance(scores.rerank)
    x = features(scores, query_terms, dense_trusted=dense_trusted)
    return _sigmoid(weights[0] + sum(w * v for w, v in zip(weights[1:], x, strict=True)))


def reranker_relevance(score: float) -> float:
    """A reranker's score as a probability: as it is when in [0, 1] (Cohere, TEI), else σ(logit)."""
    return score if 0.0 <= score <= 1.0 else _sigmoid(score)


def with_relevance(hits: Sequence[Hit], query_terms: int, *, dense_trusted: bool) -> list[Hit]:
    """``hits`` with their ``relevance`` filled in (order unchanged)."""
    return [replace(h, relevance=relevance(h.scores, query_terms, dense_trusted=dense_trusted)) for h in hits]


def above(hits: Sequence[Hit], min_score: float) -> list[Hit]:
    """The hits whose relevance is at least ``min_score`` (0 keeps every hit)."""
    if min_score <= 0:
        return list(hits)
    return [h for h in hits if h.relevance >= min_score]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
