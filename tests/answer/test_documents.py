"""A document reassembled from overlapping chunks: every part once, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragd.answer.documents import MIN_OVERLAP, join_chunks, overlap


def test_overlap_is_the_longest_shared_run() -> None:
    assert overlap("the end of one chunk", "one chunk and the next") == len("one chunk")
    assert overlap("abc", "xyz") == 0
    assert overlap("a short run", "run on") == 0  # below the minimum: a coincidence, not an overlap
    assert overlap("anything", "") == 0


def test_join_without_overlap_keeps_both_on_separate_lines() -> None:
    assert join_chunks(["First chunk.", "Second chunk."]) == "First chunk.\nSecond chunk."
    assert join_chunks([]) == ""
    assert join_chunks(["only"]) == "only"


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text of distinct words cut into chunks that overlap by at least MIN_OVERLAP characters."""
    words = " ".join(f"w{i}" for i in range(draw(st.integers(min_value=20, max_value=300))))
    chunks: list[str] = []
    start = 0
    while True:
        end = min(len(words), start + draw(st.integers(min_value=MIN_OVERLAP * 3, max_value=200)))
        chunks.append(words[start:end])
        if end == len(words):
            return words, chunks
        start = end - draw(st.integers(min_value=MIN_OVERLAP, max_value=MIN_OVERLAP * 2))


@given(chunked())
def test_overlapping_chunks_join_back_into_the_text(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    assert join_chunks(chunks) == text
