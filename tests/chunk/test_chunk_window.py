"""The model window: the word-by-word probe, exact checks for other tokenizers, breadcrumb limits."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.context import DocContext
from ragd.chunk.window import ModelWindow, splits_on_white_space
from ragd.types import Chunk, ChunkStrategy
from tests.chunk.chunk_documents import GeneratedDocument, documents
from tests.chunk.chunk_support import MiniLmCounter, Setup, WhitespaceCounter, check_invariants


class LeadingSpaceCounter:
    """Byte-level-BPE-like: a space belongs to the token after it, words split every 3 characters.

    Counts change when a slice loses the space before its first word, so it
    must fail the word-by-word probe and be checked exactly.
    """

    _TOKEN = re.compile(r" ?[^\s]{1,3}|\s")

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._TOKEN.finditer(text)]

    def count(self, text: str) -> int:
        return sum(1 for _ in self._TOKEN.finditer(text))


def test_probe_accepts_word_by_word_tokenizers(minilm: MiniLmCounter) -> None:
    assert splits_on_white_space(minilm)
    assert splits_on_white_space(WhitespaceCounter())
    assert splits_on_white_space(ApproxTokenCounter())
    assert not splits_on_white_space(LeadingSpaceCounter())


def test_prefix_without_trailing_space_disables_the_fast_path(minilm: MiniLmCounter) -> None:
    assert ModelWindow(minilm, 256, "passage: ").word_by_word
    assert not ModelWindow(minilm, 256, "search_document:").word_by_word


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.sampled_from(list(ChunkStrategy)), st.integers(40, 200))
def test_tokenizers_that_are_not_word_by_word_are_checked_exactly(
    generated: GeneratedDocument, strategy: ChunkStrategy, max_tokens: int
) -> None:
    setup = Setup(strategy, LeadingSpaceCounter(), max_tokens, token_size=64, token_overlap=16)
    chunks = setup.build().chunk(generated.document)
    check_invariants(setup, generated.document, chunks)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_fast_count_equals_the_tokenizer_on_clean_spans(
    minilm: MiniLmCounter, generated: GeneratedDocument, data: st.DataObject
) -> None:
    text = generated.document.text
    breaks = [0] + [m.end() for m in re.finditer(r"[ \t\r\n]+", text)]
    start = data.draw(st.sampled_from(breaks))
    end = data.draw(st.sampled_from([b for b in [*breaks, len(text)] if b >= start]))
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    headers = data.draw(st.sampled_from([(), ("Title",), ("A b", "| x | y |")]))
    window = ModelWindow(minilm, 512, "passage: ")
    ctx = DocContext(text, window)
    chunk = Chunk(text=text[start:end], split_id=0, start=start, end=end, headers=headers)
    if ctx.tokens.exact:
        assert ctx.overflow(start, end, headers) == window.embedded_tokens(chunk) - 512
    else:  # a word of 100+ characters counts by its length (pseudo-tokens), never less than the model's
        assert ctx.overflow(start, end, headers) >= window.embedded_tokens(chunk) - 512


def test_long_breadcrumbs_drop_outer_headings_then_truncate(minilm: MiniLmCounter) -> None:
    window = ModelWindow(minilm, 64, "")
    limit = window.text_tokens // 2
    outer, inner = "Outer heading " * 20, "the very long header row " * 10
    assert window.shorten(("Short", "Also short")) == ("Short", "Also short")
    (shortened,) = window.shorten((outer, inner))
    assert shortened.endswith("…")
    assert inner.startswith(shortened[:-2])
    assert window.breadcrumb_tokens((shortened,)) <= limit
    assert window.shorten((outer, "Inner")) == ("Inner",)
