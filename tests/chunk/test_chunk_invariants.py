"""Property tests: every strategy keeps the chunking port's invariants on generated documents.

Checked for each chunk list: exact offsets, no blank chunks, order, coverage
of every non-space character, bounded overlap, the model window, pages, and
the table rules (no boundary inside a row; a chunk starting in a table body
carries the header row).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragd.types import Chunk, ChunkStrategy
from tests.chunk.chunk_documents import FENCED_TITLE, GeneratedDocument, documents
from tests.chunk.chunk_support import (
    CHAR_STRATEGIES,
    TOKEN_STRATEGIES,
    Setup,
    WhitespaceCounter,
    check_invariants,
    manual_separators,
    minilm_counter,
)

PROPERTY_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
prefixes = st.sampled_from(["", "passage: ", "search_document:"])


@st.composite
def token_setups(draw: st.DrawFn, strategy: ChunkStrategy, real: bool) -> Setup:
    return Setup(
        strategy=strategy,
        counter=minilm_counter() if real else WhitespaceCounter(),
        max_tokens=draw(st.integers(64, 300)),
        prefix=draw(prefixes),
        token_size=draw(st.integers(16, 300)),
        token_overlap=draw(st.integers(0, 120)),
    )


@st.composite
def char_setups(draw: st.DrawFn, strategy: ChunkStrategy, real: bool) -> Setup:
    return Setup(
        strategy=strategy,
        counter=minilm_counter() if real else WhitespaceCounter(),
        max_tokens=draw(st.integers(64, 300)),
        prefix=draw(prefixes),
        char_size=draw(st.integers(100, 800)),
        char_overlap=draw(st.integers(0, 300)),
    )


def check_tables(generated: GeneratedDocument, chunks: list[Chunk]) -> None:
    for table in generated.tables:
        for row_start, row_end in table.rows:
            for chunk in chunks:
                assert not row_start < chunk.start < row_end, f"chunk {chunk.split_id} starts inside a row"
                assert not row_start < chunk.end < row_end, f"chunk {chunk.split_id} ends inside a row"
        for chunk in chunks:
            if table.body_start <= chunk.start < table.end:
                assert chunk.headers[-1:] == (table.header,), f"chunk {chunk.split_id} lost the table header"


def run(setup: Setup, generated: GeneratedDocument) -> list[Chunk]:
    chunks = setup.build().chunk(generated.document)
    check_invariants(setup, generated.document, chunks)
    check_tables(generated, chunks)
    assert all(FENCED_TITLE not in header for chunk in chunks for header in chunk.headers)
    return chunks


@PROPERTY_SETTINGS
@given(st.data(), documents(), st.sampled_from(TOKEN_STRATEGIES), st.booleans())
def test_token_strategies_keep_invariants(
    data: st.DataObject, generated: GeneratedDocument, strategy: ChunkStrategy, real: bool
) -> None:
    run(data.draw(token_setups(strategy, real)), generated)


@PROPERTY_SETTINGS
@given(st.data(), documents(), st.sampled_from(CHAR_STRATEGIES), st.booleans())
def test_character_strategies_keep_invariants(
    data: st.DataObject, generated: GeneratedDocument, strategy: ChunkStrategy, real: bool
) -> None:
    setup = data.draw(char_setups(strategy, real))
    chunks = run(setup, generated)
    assert all(len(chunk.text) <= setup.char_size for chunk in chunks)


@PROPERTY_SETTINGS
@given(documents(), st.integers(64, 300), prefixes, st.booleans())
def test_manual_strategy_keeps_invariants(
    generated: GeneratedDocument, max_tokens: int, prefix: str, real: bool
) -> None:
    counter = minilm_counter() if real else WhitespaceCounter()
    setup = Setup(ChunkStrategy.MANUAL, counter, max_tokens=max_tokens, prefix=prefix)
    chunks = run(setup, generated)
    for start, end in manual_separators(generated.document.text):
        assert all(chunk.end <= start or chunk.start >= end for chunk in chunks)


@settings(PROPERTY_SETTINGS, max_examples=10)
@given(documents(), st.sampled_from(list(ChunkStrategy)))
def test_chunking_is_deterministic(generated: GeneratedDocument, strategy: ChunkStrategy) -> None:
    chunker = Setup(strategy, WhitespaceCounter(), max_tokens=128, token_size=48, char_size=200).build()
    assert chunker.chunk(generated.document) == chunker.chunk(generated.document)
