"""Chunking 1 MB: the tokenizer runs once and the chunker's own work stays well under a second."""

from __future__ import annotations

import random
import time

import pytest

from ragd.types import ChunkStrategy, Document
from tests.chunk.chunk_support import MiniLmCounter, Setup

VOCABULARY = (
    "the of and retrieval chunk embedding model window token table header row section paragraph "
    "sentence government committee approved budget revenue forecast analysis naïve café"
)
OWN_SECONDS = 1.0  # generous: measured ~0.1-0.25 s on a loaded 2-core machine


class TimedCounter:
    """Wraps a counter and records how often and how long the tokenizer runs."""

    def __init__(self, inner: MiniLmCounter) -> None:
        self.inner, self.seconds, self.span_calls, self.counted_chars = inner, 0.0, 0, 0

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        started = time.perf_counter()
        try:
            return self.inner.token_spans(text)
        finally:
            self.seconds += time.perf_counter() - started
            self.span_calls += 1

    def count(self, text: str) -> int:
        started = time.perf_counter()
        try:
            return self.inner.count(text)
        finally:
            self.seconds += time.perf_counter() - started
            self.counted_chars += len(text)


def megabyte_document() -> Document:
    rng = random.Random(7)
    vocab = VOCABULARY.split()
    parts: list[str] = []
    i = 0
    while sum(len(part) for part in parts) < 1_000_000:
        i += 1
        parts.append(f"## Section {i}\n\n")
        for _ in range(3):
            parts.append(
                " ".join(rng.choice(vocab) for _ in range(rng.randint(40, 120))).capitalize() + ".\n\n"
            )
        if i % 5 == 0:
            rows = "".join(f"| {k} | {rng.choice(vocab)} | {k * 3} |\n" for k in range(30))
            parts.append("| a | b | c |\n|---|---|---|\n" + rows + "\n")
    return Document(text="".join(parts)[:1_000_000], extractor="test")


@pytest.mark.parametrize("strategy", [ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN])
def test_one_megabyte_is_tokenized_once_and_chunked_fast(
    minilm: MiniLmCounter, strategy: ChunkStrategy
) -> None:
    document = megabyte_document()
    counter = TimedCounter(minilm)
    chunker = Setup(strategy, counter, max_tokens=256).build()
    counter.seconds, counter.span_calls, counter.counted_chars = 0.0, 0, 0
    started = time.perf_counter()
    chunks = chunker.chunk(document)
    total = time.perf_counter() - started
    own = total - counter.seconds
    assert len(chunks) > 500
    assert counter.span_calls == 1, "the document is tokenized exactly once"
    # Breadcrumbs are counted, but finished chunks are not re-tokenized one by one.
    assert counter.counted_chars <= len(document.text) // 20
    assert own < OWN_SECONDS, f"chunker overhead {own:.2f}s (tokenizer {counter.seconds:.2f}s)"
