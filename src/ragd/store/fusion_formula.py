"""Qdrant's weighted reciprocal-rank fusion, written out as pure functions.

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

from collections.abc import Sequence


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


def rrf_max_score(k: int, weights: Sequence[float]) -> float:
    """The highest fused score possible: ranked first in every list.

    ``sum(1 / (1 / w + k - 1))`` over the weights; e.g. k=2, weights [1, 1] -> 1.0,
    k=60, weights [1, 1] -> 2/60.  Divide a fused score by it to map it into [0, 1].
    """
    return rrf_score([1] * len(weights), k, weights)
