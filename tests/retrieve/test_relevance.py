"""Relevance on an absolute scale: pure functions, table and property tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.retrieve.ranking import apply_rerank
from ragd.retrieve.relevance import (
    Evidence,
    above,
    evidence_for,
    features,
    relevance,
    reranker_relevance,
    with_cosines,
    with_relevance,
)
from ragd.types import ComponentScores, Hit, SearchMode

cosines = st.one_of(st.none(), st.floats(-1, 1))
bm25s = st.one_of(st.none(), st.floats(0, 500))


def _hit(hit_id: str, dense: float | None, sparse: float | None, score: float = 0.5) -> Hit:
    return Hit(
        id=hit_id, content=hit_id, meta={}, score=score, scores=ComponentScores(dense=dense, sparse=sparse)
    )


@given(cosines, bm25s, st.integers(0, 40), st.sampled_from(Evidence))
def test_relevance_is_a_probability(
    dense: float | None, sparse: float | None, terms: int, evidence: Evidence
) -> None:
    value = relevance(ComponentScores(dense=dense, sparse=sparse), terms, evidence)
    assert 0.0 <= value <= 1.0


@given(
    st.floats(-1, 0.99),
    st.floats(0.001, 0.5),
    bm25s,
    st.integers(1, 20),
    st.sampled_from([Evidence.BOTH, Evidence.DENSE]),
)
def test_more_similar_is_more_relevant(
    cosine: float, step: float, sparse: float | None, terms: int, evidence: Evidence
) -> None:
    low = relevance(ComponentScores(dense=cosine, sparse=sparse), terms, evidence)
    high = relevance(ComponentScores(dense=min(1.0, cosine + step), sparse=sparse), terms, evidence)
    assert high >= low


@given(
    st.floats(0, 200),
    st.floats(0.01, 50),
    st.floats(-1, 1),
    st.integers(1, 20),
    st.sampled_from([Evidence.BOTH, Evidence.SPARSE]),
)
def test_more_bm25_evidence_is_more_relevant(
    sparse: float, step: float, cosine: float, terms: int, evidence: Evidence
) -> None:
    low = relevance(ComponentScores(dense=cosine, sparse=sparse), terms, evidence)
    high = relevance(ComponentScores(dense=cosine, sparse=sparse + step), terms, evidence)
    assert high >= low


def test_relevance_does_not_depend_on_the_other_hits() -> None:
    alone = with_relevance([_hit("a", 0.62, 30.0)], 5, Evidence.BOTH)
    crowd = with_relevance(
        [_hit("x", 0.9, 80.0), _hit("a", 0.62, 30.0), _hit("y", 0.1, None)], 5, Evidence.BOTH
    )
    assert alone[0].relevance == crowd[1].relevance
    assert [h.id for h in crowd] == ["x", "a", "y"], "order is untouched"


@pytest.mark.parametrize(
    ("mode", "trusted", "evidence"),
    [
        (SearchMode.HYBRID, True, Evidence.BOTH),
        (SearchMode.HYBRID, False, Evidence.SPARSE),
        (SearchMode.DENSE, True, Evidence.DENSE),
        (SearchMode.DENSE, False, Evidence.DENSE),
        (SearchMode.SPARSE, True, Evidence.BOTH),
        (SearchMode.SPARSE, False, Evidence.SPARSE),
    ],
)
def test_each_mode_has_its_evidence(mode: SearchMode, trusted: bool, evidence: Evidence) -> None:
    assert evidence_for(mode, dense_trusted=trusted) is evidence


def test_a_sparse_hit_gets_the_cosine_of_its_stored_vector() -> None:
    stored = Hit(
        id="a", content="a", meta={}, score=1.0, scores=ComponentScores(sparse=12.0), vector=[0.6, 0.8]
    )
    known = Hit(id="b", content="b", meta={}, score=0.5, scores=ComponentScores(dense=0.3, sparse=9.0))
    bare = Hit(id="c", content="c", meta={}, score=0.2, scores=ComponentScores(sparse=3.0))
    a, b, c = with_cosines([stored, known, bare], [3.0, 4.0])  # not a unit vector: normalised first
    assert a.scores.dense == pytest.approx(1.0)
    assert a.scores.sparse == 12.0
    assert (b, c) == (known, bare), "a known cosine is kept; no stored vector, no cosine"
    assert with_cosines([stored], [0.0, 0.0]) == [stored]


def test_an_untrusted_dense_score_is_ignored() -> None:
    """A query in a language the dense model was not trained on: only BM25 evidence counts."""
    evidence = evidence_for(SearchMode.HYBRID, dense_trusted=False)
    assert relevance(ComponentScores(dense=0.9, sparse=20.0), 4, evidence) == relevance(
        ComponentScores(dense=-0.2, sparse=20.0), 4, evidence
    )
    assert features(ComponentScores(dense=0.9, sparse=20.0), 4, evidence) == features(
        ComponentScores(dense=None, sparse=20.0), 4, evidence
    )


def test_a_reranker_score_is_the_relevance() -> None:
    assert reranker_relevance(0.73) == 0.73
    assert 0.5 < reranker_relevance(2.0) < 1.0  # a logit is squashed
    assert 0.0 < reranker_relevance(-3.0) < 0.5
    reranked = apply_rerank([_hit("a", 0.1, None), _hit("b", 0.2, None)], [0.2, 0.9])
    assert [(h.id, h.relevance) for h in reranked] == [("b", 0.9), ("a", 0.2)]


def test_above_keeps_hits_at_or_over_the_floor() -> None:
    hits = [
        Hit(id=i, content=i, meta={}, score=1.0, relevance=r) for i, r in [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    ]
    assert [h.id for h in above(hits, 0.5)] == ["a", "b"]
    assert [h.id for h in above(hits, 0.0)] == ["a", "b", "c"]
    assert above(hits, 0.95) == []
