"""BM25 term weights: the same tokens at index and query time, counts on the query side."""

from __future__ import annotations

import pytest

from ragd.embed.bm25 import Bm25SparseEmbedder, term_counts
from ragd.errors import ConfigurationError


def weights(vec: object) -> dict[int, float]:
    return dict(zip(vec.indices, vec.values, strict=True))  # type: ignore[attr-defined]


def test_query_terms_weigh_their_count_and_stop_words_vanish() -> None:
    bm25 = Bm25SparseEmbedder("english")
    query = weights(bm25.embed_query("the cats chase cats and the dogs chase nothing"))
    assert sorted(query.values()) == [1.0, 1.0, 2.0, 2.0]  # cat x2, chase x2, dog, noth(ing)
    doc = weights(bm25.embed_documents(["a cat chased a dog"])[0])
    assert set(doc) <= set(query)  # stemmed alike: cat/cats, chase/chased, dog/dogs


def test_document_weights_follow_bm25_saturation_and_length() -> None:
    bm25 = Bm25SparseEmbedder("english", avg_len=4)
    once, twice = (
        weights(bm25.embed_documents([t])[0]) for t in ("apple banana cherry date", "apple apple cherry date")
    )
    apple = next(iter(weights(bm25.embed_query("apple"))))
    k1, b = 1.2, 0.75
    assert once[apple] == pytest.approx(1 * (k1 + 1) / (1 + k1 * (1 - b + b * 4 / 4)), rel=1e-5)
    assert twice[apple] == pytest.approx(2 * (k1 + 1) / (2 + k1), rel=1e-5)


def test_a_foreign_query_also_matches_english_stems() -> None:
    auto = Bm25SparseEmbedder("auto")
    german = "Die Bundesregierung beschloss gestern neue Regeln für die Energieversorgung der Städte"
    query = set(auto.embed_query(german).indices)
    assert set(term_counts(german, "de")) <= query
    assert set(term_counts(german, "en")) <= query


def test_the_name_records_what_changes_document_weights() -> None:
    assert Bm25SparseEmbedder("english", avg_len=80).name != Bm25SparseEmbedder("english").name
    with pytest.raises(ConfigurationError, match="valid values"):
        Bm25SparseEmbedder("klingon")
