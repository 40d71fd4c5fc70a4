"""Citation markers: ``[n]``, ``[1, 2]``, ``[1][2]``, and the ones that point at no source."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.answer.citations import cited_numbers, unmatched


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ()),
        ("No sources here.", ()),
        ("Three approvals [1].", (1,)),
        ("See [1, 2] and [2,3].", (1, 2, 3)),
        ("Both [3][1] agree [1].", (3, 1)),
        ("Ten [10] and one [1].", (10, 1)),
        ("A link [1](http://x) and a footnote [^2] are not markers.", ()),
        ("Not markers: [a], [], [1-2], [ 1 ], items[0]", ()),
        ("Glued to punctuation:[1] and.[2]", (1, 2)),
    ],
)
def test_cited_numbers(text: str, expected: tuple[int, ...]) -> None:
    assert cited_numbers(text) == expected


def test_unmatched_keeps_citation_order() -> None:
    assert unmatched(cited_numbers("[7] then [1] then [9, 7]"), {1, 2, 3}) == (7, 9)
    assert unmatched((1, 2), {1, 2}) == ()


@given(
    st.lists(st.integers(min_value=0, max_value=9999), max_size=12),
    st.sampled_from(["[{}]", "[{}] ", "x [{}]."]),
)
def test_every_marker_written_is_found_once(numbers: list[int], form: str) -> None:
    text = "".join(form.format(n) for n in numbers)
    assert cited_numbers(text) == tuple(dict.fromkeys(numbers))
    grouped = f"see [{', '.join(map(str, numbers))}]" if numbers else ""
    assert cited_numbers(grouped) == tuple(dict.fromkeys(numbers))
