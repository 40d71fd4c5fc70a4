"""Every chunk is stamped with the page its first character comes from."""

from __future__ import annotations

import pytest

from ragd.types import ChunkStrategy, Document, PageSpan
from tests.chunk.chunk_support import Setup, WhitespaceCounter


@pytest.mark.parametrize("strategy", list(ChunkStrategy))
def test_pages_follow_chunk_starts(whitespace: WhitespaceCounter, strategy: ChunkStrategy) -> None:
    pages_text = [" ".join(f"p{page}w{i}." for i in range(90)) for page in range(4)]
    text, spans, offset = "", [], 0
    for page, body in enumerate(pages_text):
        text += body + "\n\n"
        spans.append(PageSpan(page, offset, len(text)))
        offset = len(text)
    document = Document(text=text, extractor="test", pages=tuple(spans))
    chunker = Setup(
        strategy, whitespace, max_tokens=64, token_size=40, token_overlap=8, char_size=300
    ).build()
    chunks = chunker.chunk(document)
    assert {c.page for c in chunks} == {0, 1, 2, 3}
    for chunk in chunks:
        first_word = chunk.text.split()[0]
        assert first_word.startswith(f"p{chunk.page}w"), (chunk.page, first_word)


def test_unpaged_documents_have_no_page(whitespace: WhitespaceCounter) -> None:
    chunks = (
        Setup(ChunkStrategy.TOKEN, whitespace, max_tokens=64)
        .build()
        .chunk(Document(text="plain text " * 100, extractor="test"))
    )
    assert chunks
    assert all(c.page is None for c in chunks)
