"""Tables are chunked row by row and every piece keeps its header row."""

from __future__ import annotations

import pytest

from ragd.types import Chunk, ChunkStrategy, Document
from tests.chunk.chunk_support import (
    CHAR_STRATEGIES,
    TOKEN_STRATEGIES,
    MiniLmCounter,
    Setup,
    WhitespaceCounter,
    check_invariants,
)

STRATEGIES = (*TOKEN_STRATEGIES, *CHAR_STRATEGIES)
HEADER = "| id | name | city | amount | note |"


def csv_table(rows: int, *, big_row: int | None = None) -> str:
    """A sheet as the extractor renders it: header, separator, one line per record."""
    lines = [HEADER, "|---|---|---|---|---|"]
    for i in range(rows):
        note = "lorem ipsum dolor " * 200 if i == big_row else f"note {i % 7}"
        lines.append(f"| {i} | Name{i} Surname | City {i % 13} | {i * 37.5:.2f} | {note} |")
    return "\n".join(lines) + "\n"


def row_spans(text: str) -> list[tuple[int, int]]:
    """Data rows (after header and separator), without their newline."""
    spans, offset = [], 0
    for line in text.split("\n"):
        if line.startswith("| ") and line != HEADER:
            spans.append((offset, offset + len(line)))
        offset += len(line) + 1
    return spans


def assert_rows_whole(
    chunks: list[Chunk], rows: list[tuple[int, int]], allowed: frozenset[int] = frozenset()
) -> None:
    for i, (start, end) in enumerate(rows):
        if i in allowed:
            continue
        for chunk in chunks:
            assert not start < chunk.start < end, f"chunk {chunk.split_id} starts inside row {i}"
            assert not start < chunk.end < end, f"chunk {chunk.split_id} ends inside row {i}"


def assert_header_everywhere(chunks: list[Chunk], table_start: int) -> None:
    for chunk in chunks:
        if chunk.end <= table_start:
            continue
        has_header = HEADER in chunk.text or chunk.headers[-1:] == (HEADER,)
        assert has_header, f"chunk {chunk.split_id} has rows but no header: {chunk.text[:60]!r}"
        if chunk.start > table_start:
            assert chunk.headers[-1] == HEADER


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_500_row_table_is_cut_between_rows_with_header(
    minilm: MiniLmCounter, strategy: ChunkStrategy
) -> None:
    intro = "# Sales\n\nThe table below lists every order.\n\n"
    text = intro + csv_table(500)
    setup = Setup(strategy, minilm, max_tokens=256)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    assert len(chunks) > 20
    assert_rows_whole(chunks, row_spans(text))
    assert_header_everywhere(chunks, len(intro))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_only_a_row_bigger_than_the_window_is_split(minilm: MiniLmCounter, strategy: ChunkStrategy) -> None:
    text = csv_table(40, big_row=20)
    setup = Setup(strategy, minilm, max_tokens=256)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    rows = row_spans(text)
    assert_rows_whole(chunks, rows, allowed=frozenset({20}))
    big_start, big_end = rows[20]
    inside = [c for c in chunks if big_start < c.start < big_end or big_start < c.end < big_end]
    assert len(inside) >= 3, "the oversized row should have been cut into several pieces"
    assert_header_everywhere(chunks, 0)


def test_markdown_breadcrumb_ends_with_the_header_row(minilm: MiniLmCounter) -> None:
    text = "# Report\n\n## Orders\n\n" + csv_table(200)
    setup = Setup(ChunkStrategy.MARKDOWN, minilm, max_tokens=256)
    chunks = setup.build().chunk(Document(text=text, extractor="test"))
    continued = [c for c in chunks if c.text.startswith("| ") and HEADER not in c.text]
    assert continued
    assert all(c.headers == ("Report", "Orders", HEADER) for c in continued)
    assert all(c.embedding_text().startswith(f"Report > Orders > {HEADER}\n") for c in continued)


def test_table_without_separator_keeps_rows_whole_but_has_no_header(whitespace: WhitespaceCounter) -> None:
    text = "\n".join(f"| cell {i} | value {i} |" for i in range(100)) + "\n"
    setup = Setup(ChunkStrategy.TOKEN, whitespace, max_tokens=64, token_size=30, token_overlap=10)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    assert len(chunks) > 5
    lines = text.split("\n")[:-1]
    assert all(c.text.startswith("| cell ") and c.text.endswith(" |") for c in chunks)
    assert all(set(c.text.split("\n")) <= set(lines) for c in chunks)
    assert all(c.headers == () for c in chunks)


def test_row_like_lines_inside_a_code_fence_are_not_a_table(whitespace: WhitespaceCounter) -> None:
    text = "```\n| id | x |\n|---|---|\n" + "".join(f"| {i} | y z |\n" for i in range(50)) + "```\n"
    setup = Setup(ChunkStrategy.TOKEN, whitespace, max_tokens=64, token_size=20, token_overlap=0)
    chunks = setup.build().chunk(Document(text=text, extractor="test"))
    assert all(c.headers == () for c in chunks)
    assert any(text[c.start - 1] != "\n" for c in chunks[1:]), "code is cut by tokens, not between rows"
