"""The manual strategy: lines that are exactly ``---`` separate chunks."""

from __future__ import annotations

from ragd.types import ChunkStrategy, Document
from tests.chunk.chunk_support import Setup, WhitespaceCounter, check_invariants


def manual(text: str, max_tokens: int = 256) -> list[str]:
    setup = Setup(ChunkStrategy.MANUAL, WhitespaceCounter(), max_tokens)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    return [c.text for c in chunks]


def test_splits_on_exact_separator_lines_only() -> None:
    text = "one\n---\ntwo\n--- \nstill two\n----\nstill two\n---\r\nthree\n- - -\nthree\n"
    assert manual(text) == [
        "one",
        "two\n--- \nstill two\n----\nstill two",
        "three\n- - -\nthree",
    ]


def test_leading_trailing_and_repeated_separators_give_no_empty_chunks() -> None:
    assert manual("---\n---\nA\n---\n\n---\nB\n---") == ["A", "B"]


def test_separator_is_not_matched_inside_a_line() -> None:
    assert manual("a --- b\nc---\n---d") == ["a --- b\nc---\n---d"]


def test_a_marked_piece_larger_than_the_window_is_still_cut() -> None:
    big = " ".join(f"w{i}" for i in range(100))
    pieces = manual(f"small\n---\n{big}\n---\nend", max_tokens=40)
    assert pieces[0] == "small"
    assert pieces[-1] == "end"
    assert len(pieces) > 3
    assert " ".join(pieces[1:-1]) == big
