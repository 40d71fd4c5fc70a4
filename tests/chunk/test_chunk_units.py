"""Cutting spans into units: tiling, fitting, and preferring the highest separator."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from ragd.chunk.structure import parse_layout
from ragd.chunk.units import RECURSIVE_LADDER, decompose, hard_split, structured_units


@given(st.integers(0, 300), st.integers(1, 40))
def test_hard_split_tiles_with_longest_fitting_pieces(length: int, cap: int) -> None:
    pieces = hard_split(0, length, lambda start, end: end - start <= cap)
    assert all(a[1] == b[0] for a, b in pairwise(pieces))
    assert all(end - start == cap for start, end in pieces[:-1])
    assert bool(pieces) == (length > 0)
    if pieces:
        assert pieces[0][0] == 0
        assert pieces[-1][1] == length
        assert 0 < pieces[-1][1] - pieces[-1][0] <= cap


def test_hard_split_takes_one_character_when_nothing_fits() -> None:
    assert hard_split(3, 6, lambda *_: False) == [(3, 4), (4, 5), (5, 6)]


@given(st.text(alphabet="ab .!\n", max_size=400), st.integers(5, 60))
def test_decompose_tiles_and_fits(text: str, size: int) -> None:
    def fits(start: int, end: int) -> bool:
        return end - start <= size

    units = decompose(text, (0, len(text)), fits, RECURSIVE_LADDER)
    assert "".join(text[s:e] for s, e in units) == text
    assert all(a[1] == b[0] for a, b in pairwise(units))
    assert all(fits(s, e) for s, e in units)


def test_decompose_keeps_fitting_paragraphs_whole_and_cuts_big_ones_at_lines() -> None:
    text = "short para.\n\nline one\nline two\nline three\n\nend."
    units = decompose(text, (0, len(text)), lambda s, e: e - s <= 20, RECURSIVE_LADDER)
    assert [text[s:e] for s, e in units] == [
        "short para.\n\n",
        "line one\n",
        "line two\n",
        "line three\n\n",
        "end.",
    ]


def test_tables_become_header_block_and_rows_when_too_big() -> None:
    text = "intro\n| h | i |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\nafter"
    layout = parse_layout(text)

    def fits(start: int, end: int) -> bool:
        return end - start <= 12

    units = structured_units(text, layout, (0, len(text)), fits, lambda s, e: [(s, e)] if s < e else [])
    assert [text[s:e] for s, e in units] == [
        "intro\n",
        "| h | i |\n",
        "|---|---|\n",
        "| 1 | 2 |\n",
        "| 3 | 4 |\n",
        "after",
    ]
