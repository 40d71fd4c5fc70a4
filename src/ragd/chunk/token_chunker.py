"""The ``token`` strategy: fixed windows of the embedding model's own tokens.

Chunks hold at most ``size`` tokens (less the breadcrumb's tokens) and start
at a word; the next chunk repeats up to ``overlap`` tokens of the previous
one.  Inside a Markdown table chunks start only at a row, and a chunk
starting inside a table carries the table's header row as its breadcrumb.
"""

from __future__ import annotations

import logging

from ragd.chunk.assemble import assemble
from ragd.chunk.context import DocContext
from ragd.chunk.packing import pack_tokens
from ragd.chunk.window import ModelWindow
from ragd.types import Chunk, Document

logger = logging.getLogger(__name__)

ALGORITHM_VERSION = 1


class TokenChunker:
    """Token windows with overlap; ``size`` and ``overlap`` already clamped to the window."""

    def __init__(self, window: ModelWindow, *, size: int, overlap: int) -> None:
        self._window = window
        self.size = size
        self.overlap = overlap
        self.version = f"token:v{ALGORITHM_VERSION}:size={size}:overlap={overlap}:{window.describe()}"

    def chunk(self, document: Document) -> list[Chunk]:
        ctx = DocContext(document.text, self._window)
        drafts = pack_tokens(
            ctx, 0, len(document.text), size=self.size, overlap=self.overlap, headers_at=ctx.table_headers_at
        )
        chunks = assemble(document, ctx, drafts, ctx.table_headers_at)
        logger.debug("token chunker: %d tokens into %d chunks", len(ctx.tokens), len(chunks))
        return chunks
