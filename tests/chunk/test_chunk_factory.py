"""build_chunker: strategy choice, the clamping rule, versions, configuration errors."""

from __future__ import annotations

import pytest

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.base import TokenCounter
from ragd.chunk.factory import build_chunker
from ragd.chunk.window import clamp_token_sizes
from ragd.errors import ConfigurationError
from ragd.settings import ChunkSettings
from ragd.types import ChunkStrategy, Document
from tests.chunk.chunk_support import MiniLmCounter, Setup, WhitespaceCounter, check_invariants

PROSE = " ".join(f"Sentence number {i} talks about retrieval and chunking." for i in range(400))


@pytest.mark.parametrize(
    ("size", "overlap", "text_tokens", "expected"),
    [
        (400, 80, 254, (254, 50)),  # MiniLM: shrunk, overlap keeps its 20 %
        (400, 80, 8190, (400, 80)),  # big window: unchanged
        (100, 90, 8190, (100, 50)),  # overlap never beyond half the size
        (400, 0, 254, (254, 0)),
        (16, 8, 16, (16, 8)),
    ],
)
def test_clamping_rule(size: int, overlap: int, text_tokens: int, expected: tuple[int, int]) -> None:
    assert clamp_token_sizes(size, overlap, text_tokens) == expected


@pytest.mark.parametrize("prefix", ["", "passage: "])
@pytest.mark.parametrize("strategy", [ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN])
def test_minilm_window_clamps_default_sizes(
    minilm: MiniLmCounter, strategy: ChunkStrategy, prefix: str
) -> None:
    chunker = build_chunker(
        ChunkSettings(strategy=strategy), counter=minilm, max_tokens=256, document_prefix=prefix
    )
    text_tokens = 256 - 2 - minilm.count(prefix)
    assert f":size={text_tokens}:overlap={80 * text_tokens // 400}:window={text_tokens}" in chunker.version
    document = Document(text=PROSE, extractor="test")
    chunks = chunker.chunk(document)
    setup = Setup(strategy, minilm, max_tokens=256, prefix=prefix)
    check_invariants(setup, document, chunks)
    used = [minilm.count(prefix + c.embedding_text()) + 2 for c in chunks[:-1]]
    assert max(used) <= 256
    assert min(used) >= 256 - 20, "token chunks should fill the window"


def test_versions_encode_strategy_parameters_and_window(minilm: MiniLmCounter) -> None:
    def version(
        strategy: str, max_tokens: int = 256, counter: TokenCounter | None = minilm, **params: int
    ) -> str:
        settings = ChunkSettings(strategy=strategy, **params)
        return build_chunker(settings, counter=counter, max_tokens=max_tokens, document_prefix="").version

    versions = {
        version("token"),
        version("token", token_overlap=40),
        version("token", max_tokens=512),
        version("token", counter=None),
        version("markdown"),
        version("sentence"),
        version("sentence", char_size=800),
        version("recursive"),
        version("manual"),
    }
    assert len(versions) == 9
    assert version("token") == version("token")
    assert version("sentence").startswith("sentence:v")
    assert "counter=approx" in version("token", counter=None)


def test_character_overlap_is_capped_at_half_the_size(whitespace: WhitespaceCounter) -> None:
    settings = ChunkSettings(strategy="recursive", char_size=200, char_overlap=150)
    chunker = build_chunker(settings, counter=whitespace, max_tokens=512, document_prefix="")
    assert ":size=200:overlap=100:" in chunker.version


def test_window_too_small_for_the_prefix_is_a_configuration_error(whitespace: WhitespaceCounter) -> None:
    with pytest.raises(ConfigurationError, match="prefix"):
        build_chunker(ChunkSettings(), counter=whitespace, max_tokens=20, document_prefix="a b c d e")


@pytest.mark.parametrize("strategy", list(ChunkStrategy))
def test_every_strategy_works_without_a_local_tokenizer(strategy: ChunkStrategy) -> None:
    chunker = build_chunker(
        ChunkSettings(strategy=strategy), counter=None, max_tokens=512, document_prefix=""
    )
    document = Document(text="# T\n\n" + PROSE, extractor="test")
    chunks = chunker.chunk(document)
    approx = Setup(strategy, ApproxTokenCounter(), max_tokens=512)
    check_invariants(approx, document, chunks)


def test_approximate_counter_does_not_undercount_minilm(minilm: MiniLmCounter) -> None:
    samples = [
        PROSE[:2000],
        "Invoice 2024-000123: total 1,234,567.89 EUR, IBAN DE89370400440532013000.",
        "def chunk(document: Document) -> list[Chunk]:  # type hints everywhere",
        "日本語のテキストと中文文本，以及한국어 텍스트。 Ελληνικά, русский, naïve café.",
        "The antidisestablishmentarianism debate returned to parliament in spring.",
        "| id | name | amount |\n|---|---|---|\n| 1 | Ada | 12.50 |",
    ]
    approx = ApproxTokenCounter()
    for text in samples:
        assert approx.count(text) >= minilm.count(text), text
        assert len(approx.token_spans(text)) == approx.count(text)


def test_empty_and_blank_documents_give_no_chunks() -> None:
    for strategy in ChunkStrategy:
        chunker = Setup(strategy, WhitespaceCounter(), max_tokens=64).build()
        assert chunker.chunk(Document(text="", extractor="t")) == []
        assert chunker.chunk(Document(text=" \n\t\n ", extractor="t")) == []
