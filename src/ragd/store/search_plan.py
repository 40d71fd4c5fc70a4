"""Engine-neutral search planning: which query shape to run, and hits from engine rows.

Both adapters run the same plan:

* dense only  -> one query ``using="text-dense"``; Hit.score = cosine
* sparse only -> one query ``using="text-sparse"``; Hit.score = IDF-weighted dot product
* hybrid      -> ONE batched engine call of three queries: the fused query
  (dense + sparse prefetch, each ``prefetch_limit`` long and filtered, weighted
  RRF), and the two prefetch lists on their own.  Hit.score = RRF score; each
  hit's ``scores.dense`` / ``scores.sparse`` come from the component lists
  (None when the hit is not in that list).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragd.errors import InvalidRequest
from ragd.store.payload import canonical_id, content_of, meta_of
from ragd.types import ComponentScores, Hit, StoreQuery


class SearchKind(enum.Enum):
    DENSE = "dense"
    SPARSE = "sparse"
    HYBRID = "hybrid"


def search_kind(query: StoreQuery) -> SearchKind:
    """What the query asks for; a query with neither vector is refused."""
    if query.limit < 1 or query.prefetch_limit < 1:
        raise InvalidRequest(
            f"limit and prefetch_limit must be >= 1, got {query.limit}/{query.prefetch_limit}"
        )
    if query.dense is not None and query.sparse is not None:
        return SearchKind.HYBRID
    if query.dense is not None:
        return SearchKind.DENSE
    if query.sparse is not None:
        return SearchKind.SPARSE
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


def scores_by_id(rows: Iterable[EnginePoint]) -> dict[str, float]:
    return {canonical_id(row.id): float(row.score) for row in rows}


def assemble_hits(
    kind: SearchKind,
    rows: Sequence[EnginePoint],
    dense: Mapping[str, float] | None = None,
    sparse: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Hits in engine order with their component scores filled in for explanation."""
    hits = []
    for row in rows:
        point_id = canonical_id(row.id)
        score = float(row.score)
        if kind is SearchKind.DENSE:
            scores = ComponentScores(dense=score)
        elif kind is SearchKind.SPARSE:
            scores = ComponentScores(sparse=score)
        else:
            scores = ComponentScores(
                dense=(dense or {}).get(point_id), sparse=(sparse or {}).get(point_id), fused=score
            )
        hits.append(
            Hit(
                id=point_id,
                content=content_of(row.payload),
                meta=meta_of(row.payload),
                score=score,
                scores=scores,
            )
        )
    return hits
