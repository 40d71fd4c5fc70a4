"""A hit's relevance on an absolute scale: the calibrated probability that it answers the query.

``Hit.score`` says where a hit *ranked* (reciprocal-rank fusion, normalised); a lone
irrelevant chunk still ranks first.  ``Hit.relevance`` says how relevant it *is*,
whatever the other hits: a logistic model over the evidence the search gathered —

* ``d``: the dense cosine of query and chunk;
* ``s``: ``log(1 + BM25 / query terms)``, the BM25 score (Qdrant's IDF) per distinct
  query term (0 and ``has_s = 0`` when the chunk was not among the sparse candidates).

Which evidence there is depends on the search (:class:`Evidence`), and each kind has its own
weights, so that a floor means the same probability whichever mode ran:

* ``both`` (hybrid or sparse, the dense model understands the query's language):
  ``σ(w0 + w1·d + w2·s + w3·has_s)``;
* ``dense`` (dense mode): ``σ(w0 + w1·d)``;
* ``sparse`` (a query in a language the dense model was not trained on, where the cosine means
  little): ``σ(w0 + w1·s' + w2·log(query terms))``, where
  ``s' = log(1 + BM25 / query terms / log(1 + N))``: BM25's IDF grows with ``N``, the points in the
  index, so the score is divided by the IDF of a word found once (without it, weights fitted on
  SciFact's 9,808 chunks kept 40 % of the BM25-judged answers on XQuAD-de's 402; with it 74 %).  How many
  words the query has matters too: a chunk matching every word of an eight-word question at the
  same per-word score is better evidence than a one-word match.

A sparse search embeds its query too, once it has its hits, and gives them their cosine
(:func:`with_cosines`): an exact keyword match has the very relevance a hybrid search gives it.

Every kind is fitted on SciFact's *train* qrels against off-topic queries by
``bench/relevance_fit.py`` (the test split is never used) and checked on the other shared
datasets.  When a reranker ran, its score is the relevance instead (a probability already, or
a logit squashed by σ).

Pure functions: ranking order is not touched here (docs/scoring.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import StrEnum

import numpy as np

from ragd.types import ComponentScores, DenseVector, Hit, SearchMode


class Evidence(StrEnum):
    """Which component scores a search gathered for its hits."""

    BOTH = "both"
    DENSE = "dense"
    SPARSE = "sparse"


#: weights per evidence kind (bias first, then one per feature of :func:`features`), from
#: bench/relevance_fit.py
WEIGHTS: Mapping[Evidence, tuple[float, ...]] = {
    Evidence.BOTH: (-13.3142, 27.3620, 4.8581, -2.6287),
    Evidence.DENSE: (-17.3478, 40.4431),
    Evidence.SPARSE: (-9.4178, 33.1920, 0.7798),
}


def evidence_for(mode: SearchMode, *, dense_trusted: bool) -> Evidence:
    """The evidence a search in ``mode`` has (``dense_trusted``: the model knows the query's
    language).  A sparse search's hits get their cosine too (:func:`with_cosines`)."""
    if mode is SearchMode.DENSE:
        return Evidence.DENSE
    return Evidence.BOTH if dense_trusted else Evidence.SPARSE


def with_cosines(hits: Sequence[Hit], query: DenseVector | Sequence[float]) -> list[Hit]:
    """``hits`` whose ``scores.dense`` is empty get the cosine of ``query`` and their stored vector
    (stored normalised, so a dot product with the unit query): what a hybrid search would give."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        return list(hits)
    unit = q / norm
    return [
        replace(h, scores=replace(h.scores, dense=float(unit @ np.asarray(h.vector, dtype=np.float32))))
        if h.scores.dense is None and h.vector is not None
        else h
        for h in hits
    ]


def features(
    scores: ComponentScores, query_terms: int, evidence: Evidence, index_points: int = 0
) -> tuple[float, ...]:
    """The model's inputs for one hit (see the module docstring); ``index_points``: how many points
    the index holds (only BM25-alone evidence reads it)."""
    dense = float(scores.dense) if scores.dense is not None else 0.0
    per_term = max(0.0, float(scores.sparse or 0.0)) / max(1, query_terms)
    if evidence is Evidence.DENSE:
        return (dense,)
    if evidence is Evidence.SPARSE:
        scaled = per_term / math.log1p(max(1, index_points))
        return (math.log1p(scaled), math.log(max(1, query_terms)))
    sparse = math.log1p(per_term) if scores.sparse is not None else 0.0
    return (dense, sparse, float(scores.sparse is not None))


def relevance(
    scores: ComponentScores,
    query_terms: int,
    evidence: Evidence,
    index_points: int = 0,
    *,
    weights: Mapping[Evidence, Sequence[float]] = WEIGHTS,
) -> float:
    """The calibrated relevance in [0, 1] of a hit with these component scores."""
    if scores.rerank is not None:
        return reranker_relevance(scores.rerank)
    w = weights[evidence]
    x = features(scores, query_terms, evidence, index_points)
    return _sigmoid(w[0] + sum(wi * xi for wi, xi in zip(w[1:], x, strict=True)))


def reranker_relevance(score: float) -> float:
    """A reranker's score as a probability: as it is when in [0, 1] (Cohere, TEI), else σ(logit)."""
    return score if 0.0 <= score <= 1.0 else _sigmoid(score)


def with_relevance(
    hits: Sequence[Hit], query_terms: int, evidence: Evidence, index_points: int = 0
) -> list[Hit]:
    """``hits`` with their ``relevance`` filled in (order unchanged)."""
    return [replace(h, relevance=relevance(h.scores, query_terms, evidence, index_points)) for h in hits]


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
