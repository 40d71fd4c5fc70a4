"""Engine-neutral search planning: which query shape to run, and hits from engine rows.

Both adapters run the same plan:

* dense only  -> one query ``using="text-dense"``; Hit.score = cosine
* sparse only -> one query ``using="text-sparse"``; Hit.score = IDF-weighted dot product
* hybrid, convex fusion (the default) -> ONE batched engine call of the two lists (dense and
  sparse, each ``prefetch_limit`` long and filtered, ids and scores only), fused here
  (:func:`ragd.store.fusion_formula.convex_fusion`), then the best ``limit`` points fetched by id
  with their payload (and dense vector).  Hit.score = the fused score.
* hybrid, RRF -> ONE batched engine call of three queries: the fused query
  (dense + sparse prefetch, each ``prefetch_limit`` long and filtered, weighted
  RRF), and the two prefetch lists on their own.  Hit.score = RRF score.

With sparse groups (``RAGD_STORE__SPARSE_GROUPS``, :class:`ragd.store.payload.SparseLayout`) kept
as term ids (new indexes), a search runs as above with its groups' ids in the one sparse query.
Kept as named vectors (indexes made before 2026-11-28), a search whose collections fall in one
group runs as above on that group's sparse vector; one whose collections span several groups (or
that names none) queries each group's sparse vector in the same batch and merges those lists by
score (:func:`merge_by_score`): a point lives in one group only.  Such a hybrid search then always
fuses here (:func:`fused_plan`, RRF too) and fetches the best by id, since the engine's fusion
cannot take a merged list as one of its inputs.

Either way each hybrid hit's ``scores.dense`` / ``scores.sparse`` come from the component lists
(None when the hit is not in that list), and the fused rows carry their stored dense vector, so a
hit that only the sparse list found still gets its dense cosine: the relevance model needs it.

With ``explain`` every search (dense and sparse alone too) returns each hit's stored dense
vector as ``Hit.vector``: MMR diversity and near-duplicate removal compare hits by it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragd.errors import InvalidRequest
from ragd.store.fusion_formula import convex_fusion, rrf_fusion
from ragd.store.payload import canonical_id, content_of, meta_of
from ragd.types import ComponentScores, DenseVector, FusionMethod, Hit, SearchMode, StoreQuery


def search_kind(query: StoreQuery) -> SearchMode:
    """What the query asks for; a query with neither vector is refused."""
    if query.limit < 1 or query.prefetch_limit < 1:
        raise InvalidRequest(
            f"limit and prefetch_limit must be >= 1, got {query.limit}/{query.prefetch_limit}"
        )
    if query.dense is not None and query.sparse is not None:
        return SearchMode.HYBRID
    if query.dense is not None:
        return SearchMode.DENSE
    if query.sparse is not None:
        return SearchMode.SPARSE
    raise InvalidRequest("a search needs a dense or a sparse query vector (or both)")


def fusion_weights(query: StoreQuery) -> list[float]:
    """RRF weights in prefetch order: dense first, then sparse."""
    return [query.fusion.dense_weight, query.fusion.sparse_weight]


@dataclass(frozen=True, slots=True)
class EnginePoint:
    """One scored row as an engine returned it, before it becomes a Hit."""

    id: object
    score: float
    payload: Mapping[str, Any] | None
    #: the stored dense vector, when the engine was asked for it (hybrid explain rows)
    dense: Sequence[float] | None = None


class ScoredRow(Protocol):
    """What a convex plan reads of an engine's scored point: its id and its score."""

    @property
    def id(self) -> Any: ...

    @property
    def score(self) -> float: ...


def scores_by_id(rows: Iterable[ScoredRow]) -> dict[str, float]:
    """Each row's score by canonical id (an engine's scored points as they came, or EnginePoints)."""
    return _scores_and_ids(rows, {})


def _scores_and_ids(rows: Iterable[ScoredRow], raw: dict[str, Any]) -> dict[str, float]:
    """Each row's score by canonical id; ``raw`` gets each canonical id's engine form.

    The lists are hundreds of rows a search, so each engine id is read and converted once (an
    engine's id object is built anew on every read)."""
    scores: dict[str, float] = {}
    for row in rows:
        engine_id = row.id
        key = canonical_id(engine_id)
        scores[key] = float(row.score)
        raw.setdefault(key, engine_id)
    return scores


@dataclass(frozen=True, slots=True)
class FusedPlan:
    """The two scored lists of a hybrid search, fused here: what to fetch, in order."""

    order: list[tuple[str, float]]
    dense: dict[str, float]
    sparse: dict[str, float]
    #: each canonical id as the engine returned it (what a fetch by id takes)
    raw_ids: dict[str, Any]


def fused_plan(
    query: StoreQuery, dense_rows: Iterable[ScoredRow], sparse_rows: Iterable[ScoredRow]
) -> FusedPlan:
    """Fuse the two lists (an engine's scored points as they came, best first) by the query's
    fusion method; the best ``query.limit`` come first in ``order``.

    Convex fusion always runs here; weighted RRF runs here when the engine cannot fuse the lists
    itself (the sparse list merged from several sparse groups), with the engine's own formula
    (:func:`ragd.store.fusion_formula.rrf_contribution`)."""
    raw: dict[str, Any] = {}
    dense, sparse = _scores_and_ids(dense_rows, raw), _scores_and_ids(sparse_rows, raw)
    fusion = query.fusion
    if fusion.method is FusionMethod.CONVEX:
        fused = convex_fusion(dense, sparse, fusion.dense_weight, fusion.sparse_weight, query.prefetch_limit)
    else:
        fused = rrf_fusion(list(dense), list(sparse), fusion.k, fusion.dense_weight, fusion.sparse_weight)
    return FusedPlan(fused[: query.limit], dense, sparse, raw)


def merge_by_score(lists: Iterable[Iterable[ScoredRow]], limit: int) -> list[Any]:
    """The best ``limit`` rows of several scored lists of disjoint points (one per sparse group),
    best first; equal scores keep the lists' order."""
    return heapq.nlargest(limit, itertools.chain.from_iterable(lists), key=lambda row: row.score)


def fused_rows(plan: FusedPlan, fetched: Iterable[EnginePoint]) -> list[EnginePoint]:
    """The fetched points in fused order with their fused score (a point gone since: left out)."""
    by_id = {canonical_id(row.id): row for row in fetched}
    return [
        EnginePoint(row.id, score, row.payload, row.dense)
        for point_id, score in plan.order
        if (row := by_id.get(point_id)) is not None
    ]


def assemble_hits(
    kind: SearchMode,
    rows: Sequence[EnginePoint],
    dense: Mapping[str, float] | None = None,
    sparse: Mapping[str, float] | None = None,
    query_dense: DenseVector | None = None,
) -> list[Hit]:
    """Hits in engine order with their component scores filled in for explanation.

    A hybrid hit missing from the dense list gets the cosine of ``query_dense`` and its stored
    vector (``row.dense``) when both are known: the dot product with the unit query, since a
    Cosine collection stores its vectors normalised.  ``Hit.vector`` is the engine's row as it
    came (converted only where it is used: :mod:`ragd.retrieve.diversity`)."""
    hits = []
    unit_query = None
    if query_dense is not None:
        q = np.asarray(query_dense, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        unit_query = q / norm if norm > 0 else None
    for row in rows:
        point_id = canonical_id(row.id)
        score = float(row.score)
        if kind is SearchMode.DENSE:
            scores = ComponentScores(dense=score)
        elif kind is SearchMode.SPARSE:
            scores = ComponentScores(sparse=score)
        else:
            dense_score = (dense or {}).get(point_id)
            if dense_score is None and row.dense is not None and unit_query is not None:
                dense_score = float(unit_query @ np.asarray(row.dense, dtype=np.float32))
            scores = ComponentScores(dense=dense_score, sparse=(sparse or {}).get(point_id), fused=score)
        hits.append(
            Hit(
                id=point_id,
                content=content_of(row.payload),
                meta=meta_of(row.payload),
                score=score,
                scores=scores,
                vector=row.dense,
            )
        )
    return hits
