"""Qdrant's RRF formula: the pure functions, and both engines checked against them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.store.base import VectorStore
from ragd.store.fusion_formula import convex_fusion, rrf_contribution, rrf_max_score, rrf_score
from ragd.types import FusionParams, PointFilter, SparseVector, StoredChunk, StoreQuery

from .data import DIM, chunk_id, unit


@pytest.mark.parametrize(
    ("k", "weights", "expected"),
    [
        (2, [1.0, 1.0], 1.0),  # 1/2 + 1/2
        (1, [1.0, 1.0], 2.0),
        (60, [1.0, 1.0], 2 / 60),
        (2, [2.0, 1.0], 1 / 1.5 + 1 / 2),  # the weight divides the rank
        (2, [0.25, 1.0], 1 / 5 + 1 / 2),
        (2, [0.0, 1.0], 0.5),  # weight 0: the list does not count
        (2, [1.0], 0.5),
    ],
)
def test_rrf_max_score_table(k: int, weights: list[float], expected: float) -> None:
    assert rrf_max_score(k, weights) == pytest.approx(expected)


def test_rank_is_one_based() -> None:
    assert rrf_contribution(1, k=2) == pytest.approx(1 / 2)
    assert rrf_contribution(2, k=2) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="1-based"):
        rrf_contribution(0, k=2)


ranks = st.one_of(st.none(), st.integers(1, 500))
weights = st.floats(0.01, 10.0)


@given(st.integers(1, 100), st.lists(st.tuples(ranks, weights), min_size=1, max_size=4))
def test_no_score_beats_first_everywhere(k: int, pairs: list[tuple[int | None, float]]) -> None:
    rs, ws = [r for r, _ in pairs], [w for _, w in pairs]
    assert 0 <= rrf_score(rs, k, ws) <= rrf_max_score(k, ws) + 1e-12


@given(st.integers(1, 100), weights, st.integers(1, 499))
def test_a_better_rank_scores_higher(k: int, w: float, rank: int) -> None:
    assert rrf_contribution(rank, k, w) > rrf_contribution(rank + 1, k, w)


def _point(i: int, dense: np.ndarray, terms: dict[int, float]) -> StoredChunk:
    ordered = sorted(terms.items())
    return StoredChunk(
        id=chunk_id("fusion", i),
        content=f"p{i}",
        meta={"collection_name": "c", "file_id": "f"},
        dense=unit(dense),
        sparse=SparseVector(tuple(t for t, _ in ordered), tuple(v for _, v in ordered)),
    )


@pytest.mark.parametrize(
    "fusion", [FusionParams(k=2), FusionParams(k=60), FusionParams(k=2, dense_weight=3.0, sparse_weight=0.5)]
)
async def test_engines_follow_the_formula(store: VectorStore, fusion: FusionParams) -> None:
    """p0 is first in both lists; p1 second dense, absent from sparse; p2 absent dense, second sparse."""
    q = np.zeros(DIM)
    q[0] = 1.0
    near, mid, far = q.copy(), q.copy(), -q.copy()
    mid[1] = 1.0
    points = [
        _point(0, near, {1: 2.0, 2: 1.0}),
        _point(1, mid, {9: 1.0}),
        _point(2, far, {1: 1.0}),
    ]
    await store.upsert(points)
    query = StoreQuery(
        filter=PointFilter(collection_names=("c",)),
        limit=3,
        dense=unit(q),
        sparse=SparseVector((1, 2), (1.0, 1.0)),
        prefetch_limit=2,  # dense list: p0, p1; sparse list: p0, p2
        fusion=fusion,
    )
    hits = {h.content: h for h in await store.search(query)}
    w = [fusion.dense_weight, fusion.sparse_weight]
    assert hits["p0"].score == pytest.approx(rrf_max_score(fusion.k, w), rel=1e-6)
    assert hits["p1"].score == pytest.approx(rrf_score([2, None], fusion.k, w), rel=1e-6)
    assert hits["p2"].score == pytest.approx(rrf_score([None, 2], fusion.k, w), rel=1e-6)
    assert hits["p1"].scores.sparse is None
    # p2 is not in the dense list: its cosine comes from its stored vector (it points away: -1)
    assert hits["p2"].scores.dense == pytest.approx(-1.0, abs=1e-6)


def test_convex_fusion_is_a_weighted_mean_of_scores_over_each_list_s_best() -> None:
    dense = {"a": 0.8, "b": 0.4, "c": 0.2}
    sparse = {"b": 10.0, "d": 5.0}
    # both lists cut at their depth: a point missing from one counts that list's lowest share
    fused = dict(convex_fusion(dense, sparse, 1.0, 1.0, depth=2))
    assert fused == pytest.approx(
        {"a": (1.0 + 0.5) / 2, "b": (0.5 + 1.0) / 2, "c": (0.25 + 0.5) / 2, "d": (0.25 + 0.5) / 2}
    )
    # lists shorter than the depth hold every match: a missing point counts 0
    fused = dict(convex_fusion(dense, sparse, 3.0, 1.0, depth=10))
    assert fused["a"] == pytest.approx(0.75)
    assert fused["d"] == pytest.approx(0.125)
    assert convex_fusion({"x": 1.0}, {"x": 3.0}, 2.0, 2.0, depth=10) == [("x", 1.0)]  # first in both: 1.0
    assert [p for p, _ in convex_fusion({"a": 1.0, "b": 1.0}, {}, 1.0, 1.0, depth=5)] == ["a", "b"]  # ties
    with pytest.raises(ValueError, match="positive"):
        convex_fusion(dense, sparse, 0.0, 0.0, depth=5)
