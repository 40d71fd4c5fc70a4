"""The embedding model's window, as the chunkers must respect it.

The embedder sees ``document_prefix + breadcrumb + "\\n" + chunk text`` (see
:meth:`ragd.types.Chunk.embedding_text`), wrapped in two special tokens
([CLS]/[SEP], <s>/</s>).  Everything here keeps that inside ``max_tokens``.

The clamping rule (token and markdown strategies)::

    text_tokens = max_tokens - 2 - tokens(document_prefix)
    size        = min(token_size, text_tokens)
    overlap     = token_overlap * size // token_size   (scaled with the size when it shrank)
    overlap     = min(overlap, size // 2)

and per chunk the text gets ``min(size, text_tokens - tokens(breadcrumb + "\\n"))``.
A breadcrumb may take at most half of ``text_tokens``: outer headings are
dropped first, then the innermost one is cut short and ends in "…".

Counting every finished chunk with the tokenizer would tokenize the corpus a
second time.  Instead a probe checks once that the tokenizer works word by
word (counts add up over white space, no token spans a space); then a chunk
cut at white space is measured exactly from the document's one tokenization.
Chunks cut elsewhere, and every chunk under a tokenizer that fails the probe,
are counted for real.
"""

from __future__ import annotations

import logging
import re

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.base import TokenCounter
from ragd.chunk.token_index import BREAK_CHARS
from ragd.errors import ConfigurationError
from ragd.types import Chunk

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = 2
MIN_TEXT_TOKENS = 16
ELLIPSIS = " …"

Headers = tuple[str, ...]

_PROBE = (
    "Chunking keeps tables whole: | Name | Größe |\n|---|:--:|\n| naïve café | 3.14 |\r\n"
    "# Überschrift\tunaffable antidisestablishmentarianism e-mail foo_bar x=1;y=2 (see [1]).\n"
    "日本語のテキストです。 Ελληνικά κείμενα; русский текст!  Emoji 🙂👍🏽 and ﬁ ligatures.\n\n"
    "https://example.org/a?b=c&d=e 12,345.67 $100 C++ naïve--dash ...ellipsis"
)


def clamp_token_sizes(size: int, overlap: int, text_tokens: int) -> tuple[int, int]:
    """Chunk size and overlap in tokens that fit ``text_tokens`` (the rule in the module docstring)."""
    clamped = min(size, text_tokens)
    if clamped < size:
        overlap = overlap * clamped // size
    return clamped, min(overlap, clamped // 2)


def splits_on_white_space(counter: TokenCounter) -> bool:
    """Does ``counter`` tokenize word by word?  (Probed on a mixed, multilingual sample.)"""
    words = [w for w in re.split(f"[{BREAK_CHARS}]+", _PROBE) if w]
    total = counter.count(_PROBE)
    if total != sum(counter.count(word) for word in words):
        return False
    spans = counter.token_spans(_PROBE)
    if len(spans) != total:
        return False
    return not any(ch in BREAK_CHARS for start, end in spans for ch in _PROBE[start:end])


class ModelWindow:
    """Token budget of one embedding model with one document prefix."""

    def __init__(self, counter: TokenCounter, max_tokens: int, document_prefix: str) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.prefix = document_prefix
        self.prefix_tokens = counter.count(document_prefix) if document_prefix else 0
        self.text_tokens = max_tokens - SPECIAL_TOKENS - self.prefix_tokens
        if self.text_tokens < MIN_TEXT_TOKENS:
            needed = MIN_TEXT_TOKENS + SPECIAL_TOKENS + self.prefix_tokens
            raise ConfigurationError(
                f"the embedding window of {max_tokens} tokens leaves {self.text_tokens} for chunk text after "
                f"the document prefix ({self.prefix_tokens} tokens) and {SPECIAL_TOKENS} special tokens",
                hint=f"use a model window of at least {needed} tokens or a shorter document prefix",
            )
        prefix_joins = not document_prefix or document_prefix[-1] in BREAK_CHARS
        self.word_by_word = prefix_joins and splits_on_white_space(counter)

    def describe(self) -> str:
        """The window's part of a chunker version string."""
        estimated = ":counter=approx" if isinstance(self.counter, ApproxTokenCounter) else ""
        return f"window={self.text_tokens}{estimated}"

    def breadcrumb_tokens(self, headers: Headers) -> int:
        """Tokens the breadcrumb line (with its newline) adds to the embedded text."""
        return self.counter.count(" > ".join(headers) + "\n") if headers else 0

    def text_budget(self, breadcrumb_tokens: int, size: int) -> int:
        """Tokens left for a chunk's text next to a breadcrumb of ``breadcrumb_tokens``, at most ``size``."""
        return max(1, min(size, self.text_tokens - breadcrumb_tokens))

    def shorten(self, headers: Headers) -> Headers:
        """``headers`` cut to half the text budget: outer ones dropped first, then the last cut short."""
        limit = self.text_tokens // 2
        while len(headers) > 1 and self.breadcrumb_tokens(headers) > limit:
            headers = headers[1:]
        if headers and self.breadcrumb_tokens(headers) > limit:
            headers = (self._truncate(headers[0], limit),)
        return headers

    def embedded_tokens(self, chunk: Chunk) -> int:
        """What the model counts for ``chunk``: prefix, breadcrumb, text and special tokens."""
        return self.counter.count(self.prefix + chunk.embedding_text()) + SPECIAL_TOKENS

    def _truncate(self, header: str, limit: int) -> str:
        spans = self.counter.token_spans(header)
        keep = min(len(spans), limit)
        while keep > 0:
            candidate = header[: spans[keep - 1][1]].rstrip() + ELLIPSIS
            if self.breadcrumb_tokens((candidate,)) <= limit:
                return candidate
            keep -= max(1, keep // 8)
        logger.warning("a heading could not be shortened to %d tokens; replaced by an ellipsis", limit)
        return ELLIPSIS.strip()
