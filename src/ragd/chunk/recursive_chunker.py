"""The ``recursive`` strategy: character-sized chunks cut on a ladder of separators.

Text is cut into paragraphs; a paragraph too big for a chunk is cut into
lines, then sentences, then words, then characters.  The pieces are joined
greedily up to ``size`` characters, neighbours overlapping by whole pieces
of at most ``overlap`` characters.  Tables are cut between rows only.  A
chunk never exceeds the model window either.
"""

from __future__ import annotations

from ragd.chunk.assemble import assemble
from ragd.chunk.context import DocContext, Span
from ragd.chunk.packing import pack_units
from ragd.chunk.units import RECURSIVE_LADDER, characters, decompose, structured_units
from ragd.chunk.window import ModelWindow
from ragd.types import Chunk, Document

ALGORITHM_VERSION = 1


class RecursiveChunker:
    """Separator-ladder chunks of at most ``size`` characters."""

    def __init__(self, window: ModelWindow, *, size: int, overlap: int) -> None:
        self._window = window
        self.size = size
        self.overlap = overlap
        self.version = f"recursive:v{ALGORITHM_VERSION}:size={size}:overlap={overlap}:{window.describe()}"

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        ctx = DocContext(text, self._window)
        fits = ctx.char_fits(self.size, ctx.table_headers_at)

        def paragraphs(start: int, end: int) -> list[Span]:
            return decompose(text, (start, end), fits, RECURSIVE_LADDER)

        units = structured_units(text, ctx.layout, (0, len(text)), fits, paragraphs)
        drafts = pack_units(
            units, fits=fits, overlap=self.overlap, measure=characters, headers_at=ctx.table_headers_at
        )
        return assemble(document, ctx, drafts, ctx.table_headers_at)
