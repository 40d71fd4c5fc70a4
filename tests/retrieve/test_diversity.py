"""MMR, the per-file cap and near-duplicate removal, on hits with known vectors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ragd.retrieve.diversity import diversify, drop_near_duplicates
from ragd.types import Hit


def hit(name: str, score: float, vector: list[float] | None, file_id: str | None = None) -> Hit:
    return Hit(
        id=name,
        content=name,
        meta={"collection_name": "c", "file_id": file_id or name},
        score=score,
        vector=None if vector is None else np.asarray(vector, dtype=np.float32),
    )


# a0 and a1 say the same thing (one direction), b and c other things, each a little less relevant
RANKED = [
    hit("a0", 1.00, [1.0, 0.0, 0.0]),
    hit("a1", 0.95, [0.99, 0.14, 0.0]),
    hit("b", 0.80, [0.0, 1.0, 0.0]),
    hit("c", 0.70, [0.0, 0.0, 1.0]),
]


def names(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def test_no_diversity_keeps_the_ranking() -> None:
    assert names(diversify(RANKED, 3)) == ["a0", "a1", "b"]
    assert names(diversify(RANKED, 10)) == ["a0", "a1", "b", "c"]


def test_mmr_skips_what_repeats_the_first_pick() -> None:
    assert names(diversify(RANKED, 3, diversity=0.5)) == ["a0", "b", "c"]


def test_full_diversity_still_starts_with_the_best() -> None:
    assert names(diversify(RANKED, 2, diversity=1.0))[0] == "a0"


def test_mmr_follows_its_formula() -> None:
    """The second pick maximises (1-d)*score - d*max cos: a1 wins at d=0.1, b at d=0.3."""
    cos_a1 = float(RANKED[1].vector @ RANKED[0].vector) / float(np.linalg.norm(RANKED[1].vector))  # type: ignore[operator, arg-type]
    for d in (0.1, 0.3):
        a1 = (1 - d) * 0.95 - d * cos_a1
        b = (1 - d) * 0.80
        want = "a1" if a1 > b else "b"
        assert names(diversify(RANKED, 2, diversity=d))[1] == want
    assert names(diversify(RANKED, 2, diversity=0.1))[1] == "a1"
    assert names(diversify(RANKED, 2, diversity=0.3))[1] == "b"


def test_max_per_file_caps_each_file() -> None:
    same_file = [hit(f"p{i}", 1 - i / 10, [1.0, float(i), 0.0], "one") for i in range(4)]
    other = [hit("q", 0.5, [0.0, 0.0, 1.0], "two")]
    assert names(diversify(same_file + other, 3, max_per_file=2)) == ["p0", "p1", "q"]
    assert names(diversify(same_file + other, 3, max_per_file=1)) == ["p0", "q"]
    assert names(diversify(same_file + other, 3, diversity=0.5, max_per_file=1)) == ["p0", "q"]


def test_hits_without_vectors_are_similar_to_nothing() -> None:
    bare = [hit("x", 1.0, None), hit("y", 0.9, None), hit("z", 0.8, None)]
    assert names(diversify(bare, 3, diversity=0.7)) == ["x", "y", "z"]
    assert names(drop_near_duplicates(bare, 0.9)) == ["x", "y", "z"]


def test_near_duplicates_keep_the_better_one() -> None:
    assert names(drop_near_duplicates(RANKED, 0.95)) == ["a0", "b", "c"]
    assert names(drop_near_duplicates(RANKED, 0.999)) == ["a0", "a1", "b", "c"]


@pytest.mark.parametrize(("diversity", "cap"), [(-0.1, None), (1.5, None), (0.5, 0)])
def test_out_of_range_knobs_are_refused(diversity: float, cap: int | None) -> None:
    with pytest.raises(ValueError, match="must be"):
        diversify(RANKED, 2, diversity=diversity, max_per_file=cap)


def test_vectors_of_another_dense_model_are_similar_to_nothing() -> None:
    """Two datasets' models: the same numbers in two spaces say nothing about each other."""
    mine = hit("a", 1.0, [1.0, 0.0, 0.0])
    theirs = dataclasses.replace(hit("b", 0.9, [1.0, 0.0, 0.0]), space="other")
    assert drop_near_duplicates([mine, theirs], 0.95) == [mine, theirs]
    assert drop_near_duplicates([mine, hit("c", 0.9, [1.0, 0.0, 0.0])], 0.95) == [mine]
