"""The ``sentence`` strategy: whole sentences packed up to ``size`` characters.

Text is cut after sentence-ending punctuation, at blank lines and around
Markdown block lines (headings, list items, quotes, fences); the sentences
are joined greedily up to ``size`` characters and the next chunk repeats the
previous one's last sentences, up to ``overlap`` characters.  A sentence
too big for a chunk is cut between words.  Tables are cut between rows only.
A chunk never exceeds the model window either.
"""

from __future__ import annotations

import re

from ragd.chunk.assemble import assemble
from ragd.chunk.context import DocContext, Fits, Span
from ragd.chunk.packing import pack_units
from ragd.chunk.units import (
    SENTENCES,
    WORD_LADDER,
    characters,
    decompose,
    split_at,
    structured_units,
)
from ragd.chunk.window import ModelWindow
from ragd.types import Chunk, Document

ALGORITHM_VERSION = 1

BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
BEFORE_BLOCK_LINE = re.compile(r"\n(?=[ ]{0,3}(?:#{1,6}(?:[ \t]|$)|[*+-][ \t]|\d{1,9}[.)][ \t]|>|```|~~~))")
AFTER_BLOCK_LINE = re.compile(r"^[ ]{0,3}(?:#{1,6}(?:[ \t]|$)|>|```|~~~)[^\n]*\n", re.MULTILINE)
SENTENCE_BREAKS = (SENTENCES, BLANK_LINES, BEFORE_BLOCK_LINE, AFTER_BLOCK_LINE)


def sentence_units(text: str, span: Span, fits: Fits) -> list[Span]:
    """Sentences of ``span``; one too big to fit is cut between words (then characters)."""
    out: list[Span] = []
    for sentence in split_at(text, span[0], span[1], SENTENCE_BREAKS):
        out.extend(decompose(text, sentence, fits, WORD_LADDER))
    return out


class SentenceChunker:
    """Sentence-aware chunks of at most ``size`` characters with sentence overlap."""

    def __init__(self, window: ModelWindow, *, size: int, overlap: int) -> None:
        self._window = window
        self.size = size
        self.overlap = overlap
        self.version = f"sentence:v{ALGORITHM_VERSION}:size={size}:overlap={overlap}:{window.describe()}"

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        ctx = DocContext(text, self._window)
        fits = ctx.char_fits(self.size, ctx.table_headers_at)

        def sentences(start: int, end: int) -> list[Span]:
            return sentence_units(text, (start, end), fits)

        units = structured_units(text, ctx.layout, (0, len(text)), fits, sentences)
        drafts = pack_units(
            units, fits=fits, overlap=self.overlap, measure=characters, headers_at=ctx.table_headers_at
        )
        return assemble(document, ctx, drafts, ctx.table_headers_at)
