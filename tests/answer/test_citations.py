"""Citation markers: ``[n]``, ``[1, 2]``, ``[1][2]``, and the ones that point at no source."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.answer.citations import cited_numbers, cited_spans, unmatched
from ragd.answer.records import CitedSpan


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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("Three approvals [1].", [(1, "[1]")]),
        ("Both [3][1] agree [1].", [(3, "[3]"), (1, "[1]"), (1, "[1]")]),
        ("See [1, 2] and [2,13].", [(1, "1"), (2, "2"), (2, "2"), (13, "13")]),
        ("A link [1](http://x), a footnote [^2], items[0]: none.", []),
    ],
)
def test_cited_spans_are_the_text_that_cites_each_source(text: str, expected: list[tuple[int, str]]) -> None:
    spans = cited_spans(text)
    assert [(s.number, text[s.start : s.end]) for s in spans] == expected


def test_a_marker_citing_one_source_spans_its_brackets() -> None:
    text = "Beta runs [2] on Tuesdays."
    assert cited_spans(text) == (CitedSpan(2, 10, 13),)


def test_offsets_count_code_points() -> None:
    text = "🚀 ünïcode [1]"
    (span,) = cited_spans(text)
    assert (span.start, span.end) == (10, 13)
    assert text[span.start : span.end] == "[1]"


@given(st.lists(st.lists(st.integers(min_value=0, max_value=9999), min_size=1, max_size=4), max_size=8))
def test_spans_agree_with_cited_numbers_and_never_overlap(markers: list[list[int]]) -> None:
    text = " and ".join(f"claim [{', '.join(map(str, m))}]" for m in markers)
    spans = cited_spans(text)
    assert [s.number for s in spans] == [n for m in markers for n in m]
    assert tuple(dict.fromkeys(s.number for s in spans)) == cited_numbers(text)
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))
    for span in spans:
        cited = text[span.start : span.end]
        assert cited in (f"[{span.number}]", str(span.number))
