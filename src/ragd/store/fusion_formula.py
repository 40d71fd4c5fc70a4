"""Hybrid fusion as pure functions: Qdrant's weighted reciprocal-rank fusion, and ragd's convex one.

Measured on Qdrant Edge 0.9.0 and qdrant-client 1.20.0 local mode (identical;
``tests/store/test_fusion_formula.py`` checks the engines against these
functions).  With ``rank`` 1-based (the top hit of a list has rank 1) and one
weight ``w`` per prefetch list, a point's fused score is::

    score = sum over the lists that hold the point of  1 / (rank / w + k - 1)

so with all weights 1 it is the textbook ``1 / (k + rank0)`` with a 0-based
rank: the first of two lists with k=2 gives 1/2 + 1/2 = 1.0.  A weight scales
the rank (not the contribution): w=2 halves the effective rank.  A weight
<= 0 contributes nothing.  Lists a point is absent from contribute nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def rrf_contribution(rank: int, k: int, weight: float = 1.0) -> float:
    """One list's share of a fused score for a point at 1-based ``rank``."""
    if rank < 1:
        raise ValueError(f"rank is 1-based, got {rank}")
    if weight <= 0:
        return 0.0
    return 1.0 / (rank / weight + k - 1)


def rrf_score(ranks: Sequence[int | None], k: int, weights: Sequence[float]) -> float:
    """A point's fused score from its 1-based rank in each list (None: not in that list)."""
    if len(ranks) != len(weights):
        raise ValueError("one rank per weight is needed")
    return sum(rrf_contribution(r, k, w) for r, w in zip(ranks, weights, strict=True) if r is not None)


def rrf_fusion(
    dense: Sequence[str], sparse: Sequence[str], k: int, dense_weight: float, sparse_weight: float
) -> list[tuple[str, float]]:
    """Weighted RRF of two ranked lists of ids (best first), best first: the engine's fusion
    computed here, for lists the engine cannot fuse itself.  Ties keep the order of first
    appearance (the dense list, then the sparse one)."""
    fused: dict[str, float] = {}
    for ranked, weight in ((dense, dense_weight), (sparse, sparse_weight)):
        for rank, point in enumerate(ranked, 1):
            fused[point] = fused.get(point, 0.0) + rrf_contribution(rank, k, weight)
    return sorted(fused.items(), key=lambda item: -item[1])


def rrf_max_score(k: int, weights: Sequence[float]) -> float:
    """The highest fused score possible: ranked first in every list.

    ``sum(1 / (1 / w + k - 1))`` over the weights; e.g. k=2, weights [1, 1] -> 1.0,
    k=60, weights [1, 1] -> 2/60.  Divide a fused score by it to map it into [0, 1].
    """
    return rrf_score([1] * len(weights), k, weights)


def convex_fusion(
    dense: Mapping[str, float],
    sparse: Mapping[str, float],
    dense_weight: float,
    sparse_weight: float,
    depth: int,
) -> list[tuple[str, float]]:
    """Fuse two scored lists by their scores, best first: ragd's default hybrid fusion.

    Each list's scores are divided by its best score (the top hit of a list counts 1), and a point
    gets the weighted mean ``(wd * d + ws * s) / (wd + ws)``.  A point missing from a list that was
    cut at ``depth`` counts that list's lowest normalised score (all that is known is that it scored
    below it); missing from a shorter list (every match is in it), it counts 0.  So 1.0 means
    "first in both lists", as with :func:`rrf_max_score`.  Ties keep the order of first appearance
    (the dense list, then the sparse one).
    """
    total = max(dense_weight, 0.0) + max(sparse_weight, 0.0)
    if total <= 0:
        raise ValueError("at least one fusion weight must be positive")
    lists = []
    for scores, weight in ((dense, dense_weight), (sparse, sparse_weight)):
        best = max(scores.values(), default=0.0)
        normalised = {k: v / best for k, v in scores.items()} if best > 0 else dict.fromkeys(scores, 0.0)
        floor = min(normalised.values(), default=0.0) if len(scores) >= depth else 0.0
        lists.append((normalised, floor, max(weight, 0.0) / total))
    (d_norm, d_floor, d_w), (s_norm, s_floor, s_w) = lists  # spelled out: hundreds of points a search
    fused = {
        point: d_w * d_norm.get(point, d_floor) + s_w * s_norm.get(point, s_floor)
        for point in dict.fromkeys([*dense, *sparse])
    }
    return sorted(fused.items(), key=lambda item: -item[1])
