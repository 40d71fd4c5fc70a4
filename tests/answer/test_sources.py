"""Numbering of one answer's sources: context first, then new search results, never renumbered."""

from __future__ import annotations

from ragd.answer.context import number_hits
from ragd.answer.sources import SourceBook
from ragd.types import Hit


def hit(i: int) -> Hit:
    return Hit(
        id=f"id-{i}", content=f"text {i}", meta={"file_id": f"f{i}", "source": f"dir/n{i}.md"}, score=0.5
    )


def test_search_results_are_numbered_after_the_context() -> None:
    book = SourceBook(number_hits([hit(1), hit(2)]))
    preview = book.preview([hit(3), hit(2), hit(4), hit(3)])
    assert [(c.chunk_id, c.number) for c in preview] == [("id-3", 3), ("id-2", 2), ("id-4", 4)]
    assert book.numbers == {1, 2}  # previewing keeps nothing
    book.keep(preview[:2])
    assert [c.number for c in book.citations] == [1, 2, 3]
    assert [c.number for c in book.preview([hit(4)])] == [4]


def test_find_file_matches_stored_values_exactly() -> None:
    book = SourceBook(number_hits([hit(1)]))
    assert book.find_file("f1") == "f1"
    assert book.find_file("dir/n1.md") == "f1"
    assert book.find_file("n1.md") is None  # no name in this meta, and no fuzzy matching
    assert book.find_file("../dir/n1.md") is None
