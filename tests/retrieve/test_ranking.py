"""Table and property tests of the pure ranking math."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.retrieve.ranking import (
    apply_rerank,
    content_key,
    dedup_by_content,
    fusion_for_language,
    merge_best,
    needs_deeper_page,
    normalise_scores,
    prefetch_limit,
    result_limit,
    rrf_max,
    rrf_term,
)
from ragd.types import ComponentScores, FusionMethod, FusionParams, Hit, SearchMode


def hit(i: int, text: str = "", fused: float | None = None) -> Hit:
    return Hit(
        id=str(i), content=text or f"text {i}", meta={}, score=0.0, scores=ComponentScores(fused=fused)
    )


def test_rrf_term_is_textbook_rrf_at_weight_one() -> None:
    assert rrf_term(0, 2) == 0.5
    assert rrf_term(3, 60) == 1 / 63


def test_rrf_weights_follow_the_engine_formula() -> None:
    # measured on Qdrant Edge: k=2, weights [0.5, 1.0], rank 0 in both lists -> 0.8333
    assert math.isclose(rrf_term(0, 2, 0.5) + rrf_term(0, 2, 1.0), 0.8333, abs_tol=1e-4)
    assert math.isclose(rrf_term(1, 2, 2.0), 0.5, abs_tol=1e-9)
    assert rrf_term(0, 2, 0.0) == 0.0


def test_hybrid_scores_normalise_to_one_at_the_top() -> None:
    fusion = FusionParams(k=2, dense_weight=0.25, sparse_weight=1.0)
    top = rrf_max(2, (0.25, 1.0))
    hits = [hit(0, fused=top), hit(1, fused=top / 2)]
    out = normalise_scores(hits, SearchMode.HYBRID, fusion)
    assert [h.score for h in out] == [1.0, 0.5]
    assert out[0].scores.fused == top  # raw value kept


def test_convex_hybrid_scores_are_the_fused_value_already_on_the_scale() -> None:
    fusion = FusionParams(k=2, dense_weight=1.2, sparse_weight=0.8, method=FusionMethod.CONVEX)
    out = normalise_scores([hit(0, fused=1.0), hit(1, fused=0.42)], SearchMode.HYBRID, fusion)
    assert [h.score for h in out] == [1.0, 0.42]
    convex = fusion_for_language("en", ("en",), k=2, foreign_dense_weight=0.25, method=FusionMethod.CONVEX)
    assert convex.method is FusionMethod.CONVEX


def test_single_path_scores_use_the_same_rank_scale() -> None:
    out = normalise_scores([hit(i) for i in range(3)], SearchMode.DENSE, FusionParams(k=2))
    assert [round(h.score, 4) for h in out] == [1.0, round(2 / 3, 4), 0.5]


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_normalised_scores_stay_in_unit_interval_and_keep_order(fractions: list[float]) -> None:
    fusion = FusionParams(k=2)
    top = rrf_max(2, (1.0, 1.0))
    ordered = sorted(fractions, reverse=True)
    out = normalise_scores([hit(i, fused=f * top) for i, f in enumerate(ordered)], SearchMode.HYBRID, fusion)
    scores = [h.score for h in out]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_dedup_keeps_the_best_ranked_copy() -> None:
    hits = [hit(0, "Hello  World"), hit(1, "other"), hit(2, "hello world\n"), hit(3, "Other ")]
    assert [h.id for h in dedup_by_content(hits)] == ["0", "1"]


@given(st.lists(st.sampled_from(["a", "b", "A ", "c\n", "b"]), max_size=20))
def test_dedup_is_idempotent_and_unique(texts: list[str]) -> None:
    once = dedup_by_content([hit(i, t) for i, t in enumerate(texts)])
    assert dedup_by_content(once) == once
    keys = [content_key(h.content) for h in once]
    assert len(keys) == len(set(keys))


def test_fusion_trusts_dense_less_for_foreign_queries() -> None:
    same = fusion_for_language("en", ("en",), k=2, foreign_dense_weight=0.25)
    foreign = fusion_for_language("de", ("en",), k=2, foreign_dense_weight=0.25)
    unknown = fusion_for_language(None, ("en",), k=2, foreign_dense_weight=0.25)
    assert same == unknown == FusionParams(k=2)
    assert foreign == FusionParams(k=2, dense_weight=0.25, sparse_weight=1.0)
    assert fusion_for_language("de", ("*",), k=2, foreign_dense_weight=0.25) == FusionParams(k=2)


def test_prefetch_limit() -> None:
    assert prefetch_limit(5, 4, 40) == 40
    assert prefetch_limit(100, 4, 40) == 400


def test_result_limit_leaves_a_little_room_for_duplicates_within_the_prefetch() -> None:
    assert result_limit(5, 40) == 7
    assert result_limit(10, 40) == 12
    assert result_limit(100, 400) == 125
    assert result_limit(200, 100) == 100  # never past what the paths fetched


@pytest.mark.parametrize(
    ("distinct", "fetched", "limit", "deeper"),
    [
        (10, 12, 12, False),  # enough distinct results
        (8, 12, 12, True),  # duplicates ate the head-room of a full page
        (8, 9, 12, False),  # a short page: the engine has nothing more
        (8, 40, 40, False),  # already the whole depth
    ],
)
def test_needs_deeper_page(distinct: int, fetched: int, limit: int, deeper: bool) -> None:
    assert needs_deeper_page(distinct, 10, fetched, limit, 40) is deeper


@given(st.text(alphabet=st.sampled_from("ab \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u3000"), max_size=30))
def test_content_key_folds_white_space_like_the_regex(text: str) -> None:
    assert content_key(text) == re.sub(r"\s+", " ", text).strip().casefold()


def scored(i: int, score: float, text: str = "") -> Hit:
    return Hit(id=str(i), content=text or f"text {i}", meta={}, score=score)


def test_merge_best_keeps_each_chunk_once_at_its_best_score() -> None:
    first = [scored(1, 0.9), scored(2, 0.5)]
    second = [scored(2, 0.95), scored(3, 0.5)]
    merged = merge_best([first, second])
    assert [(h.id, h.score) for h in merged] == [("2", 0.95), ("1", 0.9), ("3", 0.5)]


def test_merge_best_breaks_ties_by_first_appearance() -> None:
    merged = merge_best([[scored(5, 0.5)], [scored(4, 0.5)], [scored(5, 0.5)]])
    assert [h.id for h in merged] == ["5", "4"]


@given(st.lists(st.lists(st.tuples(st.integers(0, 20), st.floats(0, 1)), max_size=10), max_size=4))
def test_merge_best_properties(lists: list[list[tuple[int, float]]]) -> None:
    hits = [[scored(i, s) for i, s in inner] for inner in lists]
    merged = merge_best(hits)
    ids = [h.id for h in merged]
    assert len(ids) == len(set(ids))
    assert {h.id for inner in hits for h in inner} == set(ids)
    assert [h.score for h in merged] == sorted((h.score for h in merged), reverse=True)
    for h in merged:
        assert h.score == max(x.score for inner in hits for x in inner if x.id == h.id)


def test_apply_rerank_orders_by_relevance_and_keeps_components() -> None:
    hits = [
        Hit(id="a", content="a", meta={}, score=1.0, scores=ComponentScores(dense=0.8)),
        scored(2, 0.5),
        scored(3, 0.25),
    ]
    out = apply_rerank(hits, [0.1, 0.9, 0.5])
    assert [h.id for h in out] == ["2", "3", "a"]
    assert [h.score for h in out] == [0.9, 0.5, 0.1]
    assert out[2].scores.dense == 0.8
    assert out[2].scores.rerank == 0.1


def test_apply_rerank_refuses_a_score_count_mismatch() -> None:
    with pytest.raises(ValueError, match="2 rerank scores for 3 hits"):
        apply_rerank([scored(i, 0.5) for i in range(3)], [0.1, 0.2])
